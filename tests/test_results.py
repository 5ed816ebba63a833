"""liveguard.results: evaluator results typed in openevals' EvaluatorResult shape (issue 19, item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from langsmith.evaluation.evaluator import EvaluationResult
from pydantic import TypeAdapter

from liveguard.gate import decide
from liveguard.integrations.langsmith import feedback_for, gate_feedback
from liveguard.model import Verdict, Violation
from liveguard.results import (
    EvaluatorResult,
    GateResult,
    ResultError,
    gate_result,
    liveness_result,
    to_result,
    verdict_result,
)

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


@pytest.mark.parametrize("case", CASES, ids=["hard", "passed", "unjudged"])
def test_builders_are_typed_accepted_by_langsmith_and_agree_with_the_current_dicts(case: Verdict) -> None:
    from liveguard.integrations.langsmith import _verdict_feedback

    for built, current in [(liveness_result(case.hard_codes), feedback_for(case)),
                           (verdict_result(case), _verdict_feedback(case))]:
        TYPED.validate_python(built, strict=True)
        EvaluationResult(**built)  # LangSmith forbids unknown keys
        assert {k: v for k, v in built.items() if k != "metadata"} == \
            {k: v for k, v in to_result(current).items() if k != "metadata"}
        assert isinstance(built["score"], float)
    assert liveness_result(case.hard_codes)["metadata"] == {"hard_codes": case.hard_codes}
    assert verdict_result(case)["metadata"]["hard_codes"] == case.hard_codes


def test_gate_result_is_typed_with_its_categorical_value() -> None:
    runs = [c.model_copy(update={"run_id": f"r{i}"}) for i, c in enumerate(CASES * 4)]
    decision = decide(runs, window=50, min_runs=10)
    built = gate_result(decision)
    GATE.validate_python(built, strict=True)
    assert EvaluationResult(**built).value == decision.decision == "ROLLBACK"
    current = gate_feedback(decision)
    assert {k: v for k, v in built.items() if k != "metadata"} == \
        {k: v for k, v in to_result(current).items() if k != "metadata"}
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
