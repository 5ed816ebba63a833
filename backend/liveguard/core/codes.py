"""The one registry of violation codes: code → family, severity, liveness, looping.

Every set of codes the library uses is derived from :data:`CODES` (``tests/test_codes.py``
checks that every rule's code is registered):

* :data:`LIVENESS_CODES`: the structural (deterministic) hard codes; any of them rolls a
  release back (``Verdict.liveness_codes``);
* :data:`LOOP_GUARD_CODES`: the loop-guard rule family (``AGENT_EVAL_LOOP_GUARD=0`` turns it off);
* :data:`TRANSITION_CODES`: the allow-set family (what ``trajectory_anomaly`` reports);
* :data:`LOOP_CODES`: codes that mark the node they fired on as looping in the report's diagram.

Standard library only, and no liveguard import: the rules, the model and the report import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

__all__ = [
    "CODES",
    "LIVENESS_CODES",
    "LOOP_CODES",
    "LOOP_GUARD_CODES",
    "TRANSITION_CODES",
    "Code",
    "Family",
    "codes_of",
]

Family = Literal["loop_guard", "allow_set", "semantic", "limits", "defects", "injection", "judges",
                 "live_guard"]
SeverityOf = Literal["hard", "soft", "hard_or_soft"]


@dataclass(frozen=True)
class Code:
    """One violation code. ``liveness``: its hard form rolls a release back. ``looping``:
    the report's diagram marks its node as looping."""

    code: str
    family: Family
    severity: SeverityOf
    liveness: bool = False
    looping: bool = False
    meaning: str = ""


def _registry(*codes: Code) -> Mapping[str, Code]:
    out: dict[str, Code] = {}
    for c in codes:
        if c.code in out:
            raise ValueError(f"violation code {c.code!r} registered twice")
        out[c.code] = c
    return MappingProxyType(out)


CODES: Final[Mapping[str, Code]] = _registry(
    # the loop guard: repeated states
    Code("node_revisit_cycle", "loop_guard", "hard", liveness=True, looping=True,
         meaning="a node visited more than the limit within the window"),
    Code("no_progress_stall", "loop_guard", "hard", liveness=True, looping=True,
         meaning="consecutive identical node + content steps"),
    Code("repeated_content", "loop_guard", "hard", liveness=True, looping=True,
         meaning="the same node + content repeated within the window"),
    Code("content_cycle", "loop_guard", "hard", liveness=True, looping=True,
         meaning="a block of message steps repeated"),
    Code("tool_no_progress", "loop_guard", "hard", liveness=True, looping=True,
         meaning="the same (tool, args, result) repeated"),
    # the allow-set: the graph's legal paths
    Code("illegal_transition", "allow_set", "hard", liveness=True,
         meaning="a hop the allow-set does not list"),
    Code("excessive_loop", "allow_set", "hard", liveness=True, looping=True,
         meaning="a node visited more than its allow-set limit"),
    Code("dead_end", "allow_set", "soft", meaning="the run ended on a node with no exit to END"),
    Code("no_allowset", "allow_set", "soft", meaning="allow-sets are in use but none matches the graph"),
    # the semantic layer
    Code("semantic_repeat", "semantic", "hard_or_soft", liveness=True,  # only its hard form
         meaning="a reworded repeat (hard: two in the window, or confirmed by the spin check)"),
    Code("tool_same_error", "semantic", "hard", liveness=True,
         meaning="the same error from the same tool, with varying arguments, with nothing new between"),
    Code("role_drift", "semantic", "soft", meaning="a node's messages drifted from its role"),
    Code("semantic_unavailable", "semantic", "soft", meaning="the embedder failed (missing evidence)"),
    # limits, defects, the evaluator's own guard, the judges
    Code("step_limit", "limits", "hard", meaning="more steps than the policy's run or thread limit"),
    Code("tool_entropy_collapse", "defects", "soft", meaning="the tool calls collapsed onto one"),
    Code("evaluator_injection_suspected", "injection", "soft",
         meaning="step text addressed the evaluator (the judges' scores are void)"),
    Code("judge_error", "judges", "soft", meaning="a judge level failed after its retries"),
    # the live guards' own codes
    Code("debounce_ceiling", "live_guard", "hard", meaning="too many debounced repeats in a thread"),
    Code("guard_error", "live_guard", "hard",
         meaning="a damaged stop record: the thread stays stopped until it is cleared"),
)
"""Every violation code liveguard emits."""


def codes_of(*, family: Family | None = None, liveness: bool | None = None,
             looping: bool | None = None) -> frozenset[str]:
    """The registered codes matching every given attribute."""
    return frozenset(
        c.code for c in CODES.values()
        if (family is None or c.family == family) and (liveness is None or c.liveness == liveness)
        and (looping is None or c.looping == looping)
    )


LIVENESS_CODES: Final[frozenset[str]] = codes_of(liveness=True)
"""The structural (deterministic) hard codes: any of them rolls a release back."""
LOOP_GUARD_CODES: Final[frozenset[str]] = codes_of(family="loop_guard")
"""Codes of the loop-guard family."""
TRANSITION_CODES: Final[frozenset[str]] = codes_of(family="allow_set") - {"no_allowset"}
"""Codes of the allow-set rules (``no_allowset`` is the eval graph's note that none matched)."""
LOOP_CODES: Final[frozenset[str]] = codes_of(looping=True)
"""Codes that mark the node they fired on as looping in the report's diagram."""
