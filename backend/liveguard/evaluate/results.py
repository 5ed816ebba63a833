"""Typed evaluator results, in openevals' ``EvaluatorResult`` shape.

openevals' evaluators return ``EvaluatorResult``, a TypedDict with ``key``, ``score``
(float or bool), ``comment`` and ``metadata``. :class:`EvaluatorResult` here has the same
keys and types (a liveguard result can be used wherever openevals' is expected), and
:class:`GateResult` adds LangSmith's categorical ``value`` (PROMOTE / HOLD / ROLLBACK).
Every key is one LangSmith's ``EvaluationResult`` accepts, so ``langsmith.evaluate`` takes
these results as they are.

* :func:`liveness_result`, :func:`verdict_result`, :func:`gate_result` build the three
  results from the library's values, with the evidence as structured ``metadata`` (codes,
  counts, reasons; never step text);
* :func:`to_result` converts an evaluator's plain dict (the shape
  :mod:`liveguard.integrations.langsmith` returned before) into a typed result, and says
  where it is wrong with a :class:`ResultError`.
"""

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, NotRequired

from typing_extensions import TypedDict  # pydantic validates it on Python < 3.12

from liveguard.errors import ResultError

if TYPE_CHECKING:
    from liveguard.core.model import Verdict
    from liveguard.evaluate.gate import GateDecision

__all__ = [
    "GATE_SCORES",
    "EvaluatorResult",
    "GateResult",
    "ResultError",
    "gate_result",
    "liveness_result",
    "to_result",
    "verdict_result",
]

GATE_SCORES: Final[Mapping[str, float]] = {"PROMOTE": 1.0, "HOLD": 0.5, "ROLLBACK": 0.0, "REFUSE": 0.0}
"""The gate decision as a number, next to the categorical ``value``."""
_KEYS: Final = frozenset({"key", "score", "comment", "metadata", "value"})


class EvaluatorResult(TypedDict):
    """openevals' ``EvaluatorResult``: every key present, ``comment``/``metadata`` may be None."""

    key: str
    score: float | bool
    comment: str | None
    metadata: dict[str, Any] | None


class GateResult(EvaluatorResult):
    """The release gate's result: ``value`` is PROMOTE, HOLD, ROLLBACK or REFUSE."""

    value: NotRequired[str]


_NO_STEPS: Final = ("missing:no_steps (the run has no steps: a root run without its child runs, "
                    "read it with load_child_runs=True, and no outputs.messages)")


def liveness_result(hard_codes: Iterable[str], *, has_steps: bool = True) -> EvaluatorResult:
    """Deterministic liveness: 1.0 when no hard violation fired, else 0.0; the codes in metadata.

    A run with no steps (``has_steps=False``) is missing evidence, never "ok": score 0.0,
    comment ``missing:no_steps (...)``, and ``metadata["missing"] == ["no_steps"]``.
    """
    hard = sorted(set(hard_codes))
    missing = [] if has_steps else ["no_steps"]
    comment = _NO_STEPS if not hard and not has_steps else (",".join(hard) or "ok")
    return {"key": "liveness", "score": 0.0 if hard or missing else 1.0, "comment": comment,
            "metadata": {"hard_codes": hard, "missing": missing}}


def verdict_result(verdict: "Verdict") -> EvaluatorResult:
    """The full verdict: the composite (1.0 / 0.0 by ``passed`` when unjudged), the codes."""
    score = verdict.composite if verdict.composite is not None else float(verdict.passed)
    codes = ",".join(verdict.hard_codes) or "none"
    judges = verdict.judges_skipped or "ran"
    return {
        "key": "verdict",
        "score": float(score),
        "comment": f"{verdict.reason}; hard={codes}; judges={judges}",
        "metadata": {"passed": verdict.passed, "reason": verdict.reason, "hard_codes": verdict.hard_codes,
                     "judges": judges, "missing": [str(m) for m in verdict.missing]},
    }


def gate_result(decision: "GateDecision") -> GateResult:
    """The release gate: categorical ``value`` and its number; the reasons in metadata."""
    return {
        "key": "release_gate",
        "value": decision.decision,
        "score": GATE_SCORES[decision.decision],
        "comment": f"{decision.decision}: " + "; ".join(decision.reasons),
        "metadata": {"decision": decision.decision, "reasons": list(decision.reasons),
                     "runs": decision.runs, "passed": decision.passed, "pass_rate": decision.pass_rate,
                     "rollback_codes": list(decision.rollback_codes)},
    }


def to_result(raw: Mapping[str, Any], *, metadata: Mapping[str, Any] | None = None) -> GateResult:
    """A typed result from an evaluator's dict (``{"key", "score", "comment"[, "value"]}``).

    An int score becomes a float (a bool stays a bool), a missing ``comment`` or
    ``metadata`` becomes None; ``metadata`` given here is merged over the dict's own.
    Raises :class:`ResultError` for a missing or mistyped key, or a key LangSmith would
    refuse.
    """
    if not isinstance(raw, Mapping):
        raise ResultError(f"result: expected a dict, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise ResultError(f"result: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise ResultError("result.key: required, a non-empty string")
    score = raw.get("score")
    if isinstance(score, bool):
        typed: float | bool = score
    elif isinstance(score, int | float):
        typed = float(score)
    else:
        raise ResultError(f"result.score: expected a number or a bool, got {type(score).__name__}")
    comment = raw.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise ResultError(f"result.comment: expected a string, got {type(comment).__name__}")
    own = raw.get("metadata")
    if own is not None and not isinstance(own, Mapping):
        raise ResultError(f"result.metadata: expected a dict, got {type(own).__name__}")
    merged = {**(own or {}), **(metadata or {})} if own is not None or metadata is not None else None
    result: GateResult = {"key": key, "score": typed, "comment": comment, "metadata": merged}
    if "value" in raw:
        value = raw["value"]
        if not isinstance(value, str):
            raise ResultError(f"result.value: expected a string, got {type(value).__name__}")
        result["value"] = value
    return result
