"""The one contract every rule honours.

A rule is a small object with ``observe(obs) -> list[Violation] | None`` and
``finish() -> list[Violation] | None``. The Monitor computes one :class:`Observation`
per step (digests included) and hands it to each rule in turn: a trivial loop,
like a structlog processor chain. Rules keep only bounded windows of digests.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from liveguard.model import Step, Violation

__all__ = ["CONTENTLESS", "KINDS", "MESSAGE", "REQUEST", "TOOL", "Observation", "Rule", "prefix"]

MESSAGE: Final = 0
"""A message step: judged by stall, repeat and cycle rules."""
TOOL: Final = 1
"""A tool step (tool, args, result): judged by the tool rule and, as a block member, cycles."""
REQUEST: Final = 2
"""A model step whose output requests tool calls: tool-ish, never a stall or a repeat."""
CONTENTLESS: Final = 3
"""A step with nothing to compare (no summary, output, tool or error): revisits only."""

KINDS: Final = (MESSAGE, TOOL, REQUEST, CONTENTLESS)
"""Every kind. A rule may declare ``kinds``, the kinds it reads; the Monitor then hands it
only those observations (a rule without ``kinds`` sees every one). A rule declares it only
when it returns None, and changes nothing, for every other kind."""

DIGEST_PREFIX: Final = 12


def prefix(digest: str) -> str:
    """The digest prefix that goes into evidence (never the content itself)."""
    return digest[:DIGEST_PREFIX]


class Observation:
    """What the rules see of one step: its index, node, kind and content digest.

    ``content`` (message steps only) is the summary or output itself: only the semantic
    layer reads it, to embed it; no rule puts it in evidence. ``step`` is the step itself,
    for the step-text rule (``evaluator_injection_suspected``), which reads its text once;
    no rule keeps it beyond the call.
    """

    __slots__ = ("content", "index", "key", "kind", "node", "nonretryable", "step", "tool")

    def __init__(  # noqa: PLR0917 - built once per step on the hot path; keywords cost time
        self,
        index: int,
        node: str,
        kind: int,
        key: str,
        tool: str | None = None,
        nonretryable: bool = False,
        content: Any = None,
        step: Step | None = None,
    ) -> None:
        self.index = index
        self.node = node
        self.kind = kind
        self.key = key
        self.tool = tool
        self.nonretryable = nonretryable
        self.content = content  # a message step's content, for the semantic layer only
        self.step = step  # the step, for the step-text rule only


class Rule(Protocol):
    """A liveness rule: sees each observation once, keeps bounded state."""

    def observe(self, obs: Observation) -> list[Violation] | None: ...

    def finish(self) -> list[Violation] | None: ...
