"""liveguard.evaluate.results: evaluator results typed in openevals' EvaluatorResult shape (issue 19)."""

from __future__ import annotations

from typing import Any

import pytest
from langsmith.evaluation.evaluator import EvaluationResult
from pydantic import TypeAdapter

from liveguard.core.model import Verdict, Violation
from liveguard.evaluate.gate import decide
from liveguard.evaluate.results import (
    EvaluatorResult,
    GateResult,
    ResultError,
    gate_result,
    liveness_result,
    to_result,
    verdict_result,
)
from liveguard.integrations.langsmith import feedback_for, gate_feedback

TYPED = TypeAdapter(EvaluatorResult)
GATE = TypeAdapter(GateResult)


def verdict(*codes: str, composite: float | None = None, passed: bool = False, run: str = "r1") -> Verdict:
    return Verdict(
        run_id=run, passed=passed, composite=composite, prompt_version="v1",
        reason="hard_violation" if codes else ("passed" if passed else "unjudged"),
        violations=[Violation(code=c, severity="hard", step=2, node="agent", count=3) for c in codes],
        judges_skipped="hard_violation" if codes else None,
        missing=["judges_skipped:hard_violation"] if codes else [],
    )


CASES = [verdict("tool_no_progress", "content_cycle"), verdict(composite=0.91, passed=True), verdict()]


def test_the_result_has_exactly_openevals_keys_all_required() -> None:
    """openevals' EvaluatorResult: key, score, comment, metadata, every one required."""
    assert set(EvaluatorResult.__annotations__) == {"key", "score", "comment", "metadata"}
    assert EvaluatorResult.__required_keys__ == frozenset({"key", "score", "comment", "metadata"})
    assert GateResult.__optional_keys__ == frozenset({"value"})


# key, score, comment of the untyped dicts the evaluators returned before (issue 19, item 5):
# the typed results keep them, and add metadata.
BEFORE = {
    "hard": ({"key": "liveness", "score": 0, "comment": "content_cycle,tool_no_progress"},
             {"key": "verdict", "score": 0.0,
              "comment": "hard_violation; hard=content_cycle,tool_no_progress; judges=hard_violation"}),
    "passed": ({"key": "liveness", "score": 1, "comment": "ok"},
               {"key": "verdict", "score": 0.91, "comment": "passed; hard=none; judges=ran"}),
    "unjudged": ({"key": "liveness", "score": 1, "comment": "ok"},
                 {"key": "verdict", "score": 0.0, "comment": "unjudged; hard=none; judges=ran"}),
}


@pytest.mark.parametrize("case", CASES, ids=list(BEFORE))
def test_builders_are_typed_accepted_by_langsmith_and_keep_the_old_values(case: Verdict) -> None:
    liveness_before, verdict_before = BEFORE[case.reason if case.reason != "hard_violation" else "hard"]
    for built, before in [(liveness_result(case.hard_codes), liveness_before),
                          (verdict_result(case), verdict_before)]:
        TYPED.validate_python(built, strict=True)
        EvaluationResult(**built)  # LangSmith forbids unknown keys
        assert {k: v for k, v in built.items() if k != "metadata"} == \
            {k: v for k, v in to_result(before).items() if k != "metadata"}
        assert isinstance(built["score"], float)
    assert feedback_for(case) == liveness_result(case.hard_codes)  # the one liveness definition
    assert liveness_result(case.hard_codes)["metadata"] == {"hard_codes": sorted(case.hard_codes),
                                                            "missing": []}
    assert verdict_result(case)["metadata"]["hard_codes"] == case.hard_codes


def test_a_run_without_steps_is_missing_evidence_never_ok() -> None:
    """``has_steps=False``: score 0.0, the comment and metadata say what was missing."""
    built = liveness_result([], has_steps=False)
    TYPED.validate_python(built, strict=True)
    assert built["score"] == 0.0
    assert (built["comment"] or "").startswith("missing:no_steps")
    assert built["metadata"] == {"hard_codes": [], "missing": ["no_steps"]}
    bare = Verdict(run_id="r", passed=False, prompt_version="v1", reason="unjudged", missing=["no_steps"])
    assert feedback_for(bare) == built
    assert liveness_result([])["score"] == 1.0  # the healthy look-alike: steps, no hard code


def test_gate_result_is_typed_with_its_categorical_value() -> None:
    runs = [c.model_copy(update={"run_id": f"r{i}"}) for i, c in enumerate(CASES * 4)]
    decision = decide(runs, window=50, min_runs=10)
    built = gate_result(decision)
    GATE.validate_python(built, strict=True)
    assert EvaluationResult(**built).value == decision.decision == "ROLLBACK"
    assert gate_feedback(decision) == built
    before = {"key": "release_gate", "value": "ROLLBACK", "score": 0.0,
              "comment": "ROLLBACK: " + "; ".join(decision.reasons)}
    assert {k: v for k, v in built.items() if k != "metadata"} == \
        {k: v for k, v in to_result(before).items() if k != "metadata"}
    assert built["metadata"] is not None
    assert built["metadata"]["decision"] == "ROLLBACK"
    assert built["metadata"]["runs"] == 12


def test_to_result_converts_the_current_dict_shape() -> None:
    """The old liveness dict (an int score, no metadata) becomes a typed, complete result."""
    old = {"key": "liveness", "score": 0, "comment": "tool_no_progress"}
    new = to_result(old, metadata={"hard_codes": ["tool_no_progress"]})
    assert new == {"key": "liveness", "score": 0.0, "comment": "tool_no_progress",
                   "metadata": {"hard_codes": ["tool_no_progress"]}}
    assert isinstance(new["score"], float)
    TYPED.validate_python(new, strict=True)
    assert to_result({"key": "x", "score": True}) == {"key": "x", "score": True, "comment": None,
                                                      "metadata": None}
    assert to_result({"key": "g", "score": 0.5, "value": "HOLD", "metadata": {"a": 1}},
                     metadata={"b": 2})["metadata"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "result: expected a dict"),
        ({"score": 1}, "result.key: required"),
        ({"key": "", "score": 1}, "result.key: required"),
        ({"key": "k"}, "result.score: expected a number or a bool, got NoneType"),
        ({"key": "k", "score": "1"}, "result.score: expected a number or a bool, got str"),
        ({"key": "k", "score": 1, "comment": 3}, "result.comment: expected a string"),
        ({"key": "k", "score": 1, "metadata": []}, "result.metadata: expected a dict"),
        ({"key": "k", "score": 1, "value": 2}, "result.value: expected a string"),
        ({"key": "k", "score": 1, "extra": 2}, "result: unknown key"),
    ],
)
def test_to_result_says_where_a_dict_is_wrong(raw: Any, message: str) -> None:
    with pytest.raises(ResultError, match=message.replace(".", r"\.")):
        to_result(raw)
