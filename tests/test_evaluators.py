"""LangSmith evaluators, run offline through ``langsmith.evaluate(..., upload_results=False)``."""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import uuid
import warnings
from typing import Any

import pytest
from langsmith import evaluate
from langsmith.schemas import Example
from pydantic import TypeAdapter

from fake_langsmith import FakeLangSmith
from graphs import campaign
from liveguard import Policy
from liveguard.core.allowset import load_allowsets
from liveguard.core.model import Verdict, Violation
from liveguard.evaluate.judges import JudgeConfig
from liveguard.evaluate.results import EvaluatorResult, GateResult
from liveguard.integrations.langsmith import (
    EvaluatorArgumentError,
    create_async_gate_evaluator,
    create_async_liveness_evaluator,
    create_async_verdict_evaluator,
    create_gate_evaluator,
    create_liveness_evaluator,
    create_verdict_evaluator,
    feedback_for,
)

ALLOW = load_allowsets("expected_paths")
SCENARIOS = ["healthy", "illegal_hop", "looping", "dead_end"]
EXPECTED = {"healthy": 1, "illegal_hop": 0, "looping": 0, "dead_end": 1}


def target(inputs: dict[str, Any]) -> dict[str, Any]:
    """The system under evaluation: the campaign graph, traced by langsmith.evaluate."""
    graph = campaign.scripted_graph(inputs["scenario"])  # its approval step answered by a script
    out = graph.invoke(campaign.initial_input(inputs["scenario"]), {"recursion_limit": 100})
    return {"summary": out.get("summary")}


def examples() -> list[Example]:
    dataset = uuid.UUID(int=1)
    return [
        Example(id=uuid.UUID(int=10 + i), inputs={"scenario": s}, outputs={}, dataset_id=dataset,
                created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        for i, s in enumerate(SCENARIOS)
    ]


def run_offline(fake: FakeLangSmith, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langsmith flags upload_results as beta
        return evaluate(target, data=examples(), upload_results=False, client=fake.client(),
                        max_concurrency=0, **kwargs)


def test_liveness_evaluator_scores_each_traced_run(fake_langsmith: FakeLangSmith) -> None:
    liveness = create_liveness_evaluator(policy=Policy.workflow(), allow_sets=ALLOW, graph="campaign")
    results = list(run_offline(fake_langsmith, evaluators=[liveness]))
    got = {r["example"].inputs["scenario"]: r["evaluation_results"]["results"][0] for r in results}
    assert {s: int(res.score) for s, res in got.items()} == EXPECTED
    assert got["illegal_hop"].key == "liveness"
    assert got["illegal_hop"].comment == "illegal_transition"
    assert "node_revisit_cycle" in (got["looping"].comment or "")
    # the typed result's metadata reaches LangSmith's EvaluationResult as structured evidence
    assert got["illegal_hop"].metadata == {"hard_codes": ["illegal_transition"], "missing": []}
    assert got["healthy"].metadata == {"hard_codes": [], "missing": []}


def test_verdict_and_gate_summary_evaluators(fake_langsmith: FakeLangSmith) -> None:
    verdict = create_verdict_evaluator(policy=Policy.workflow(), allow_sets=ALLOW, graph="campaign")
    gate = create_gate_evaluator(min_runs=1, policy=Policy.workflow(), allow_sets=ALLOW,
                                 graph="campaign")
    results = run_offline(fake_langsmith, evaluators=[verdict], summary_evaluators=[gate])
    rows = {r["example"].inputs["scenario"]: r["evaluation_results"]["results"][0] for r in results}
    assert rows["healthy"].score == 0.0  # no key: unjudged, never a pass
    assert (rows["healthy"].comment or "").startswith("unjudged;")
    assert "judges=no_api_key" in (rows["healthy"].comment or "")
    assert rows["illegal_hop"].score == 0.0
    [summary] = results._summary_results["results"]
    assert (summary.key, summary.value, summary.score) == ("release_gate", "ROLLBACK", 0.0)
    assert (summary.comment or "").startswith("ROLLBACK")
    assert summary.metadata is not None
    assert summary.metadata["decision"] == "ROLLBACK"
    assert summary.metadata["runs"] == len(SCENARIOS)
    assert rows["illegal_hop"].metadata is not None
    assert rows["illegal_hop"].metadata["hard_codes"] == ["illegal_transition"]


def test_factories_validate_their_arguments() -> None:
    with pytest.raises(TypeError, match="Policy"):
        create_liveness_evaluator(policy={"window": 3})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="AllowSet"):
        create_verdict_evaluator(allow_sets={"g": {"transitions": {}}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="window"):
        create_gate_evaluator(window=0)


FACTORIES: dict[str, Any] = {f.__name__: f for f in (
    create_liveness_evaluator, create_async_liveness_evaluator, create_verdict_evaluator,
    create_async_verdict_evaluator, create_gate_evaluator, create_async_gate_evaluator)}
GATES = ["create_gate_evaluator", "create_async_gate_evaluator"]
VERDICTS = ["create_verdict_evaluator", "create_async_verdict_evaluator"]


GOOD: dict[str, Any] = {"policy": Policy.workflow(), "allow_sets": ALLOW, "graph": "campaign",
                        "judge_config": JudgeConfig(), "window": 5, "min_runs": 0, "pass_rate": 1,
                        "judges": True}


@pytest.mark.parametrize(
    ("names", "kwargs", "argument"),
    [
        (list(FACTORIES), {"policy": {"window": 3}}, "policy"),
        (list(FACTORIES), {"allow_sets": ["campaign"]}, "allow_sets"),
        (list(FACTORIES), {"allow_sets": {"campaign": {"transitions": {}}}}, "allow_sets"),
        (list(FACTORIES), {"graph": 7}, "graph"),
        (list(FACTORIES), {"graph": ""}, "graph"),
        (VERDICTS, {"judge_config": {"model": "x"}}, "judge_config"),
        (GATES, {"window": 0}, "window"),
        (GATES, {"window": True}, "window"),
        (GATES, {"window": 2.5}, "window"),
        (GATES, {"min_runs": -1}, "min_runs"),
        (GATES, {"min_runs": "10"}, "min_runs"),
        (GATES, {"pass_rate": 1.5}, "pass_rate"),
        (GATES, {"pass_rate": math.nan}, "pass_rate"),
        (GATES, {"pass_rate": "0.9"}, "pass_rate"),
        (GATES, {"judges": "yes"}, "judges"),
    ],
)
def test_a_bad_argument_is_a_typed_error_naming_it_at_build_time(
    names: list[str], kwargs: dict[str, Any], argument: str
) -> None:
    """Raised by the factory (never later inside langsmith.evaluate), naming factory and argument.

    The healthy look-alike: the same argument with a valid value (by keyword) builds.
    """
    for name in names:
        with pytest.raises(EvaluatorArgumentError, match=rf"^{name}\({argument}=\.\.\.\): "):
            FACTORIES[name](**kwargs)
        assert callable(FACTORIES[name](**{argument: GOOD[argument]}))
        with pytest.raises(TypeError, match="positional"):  # keyword-only, openevals' style
            FACTORIES[name](GOOD[argument])


# -- openevals' calling convention: outputs = the agent's message list ------------------------------
def sql_agent_messages(failing_calls: int) -> list[dict[str, Any]]:
    """A create_agent-style transcript: the same failing query ``failing_calls`` times, then an answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Total per region?"}]
    for i in range(failing_calls):
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [{
                "id": f"call_{i}", "type": "function",
                "function": {"name": "run_sql", "arguments": '{"query": "SELECT * FROM ordrs"}'}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": "no such table: ordrs"},
        ]
    messages.append({"role": "assistant", "content": "I could not find the table."})
    return messages


def test_openevals_convention_with_message_lists() -> None:
    liveness = create_liveness_evaluator()
    looping = liveness(inputs={"q": "x"}, outputs=sql_agent_messages(3), reference_outputs=None)
    assert (looping["key"], looping["score"]) == ("liveness", 0)
    assert "tool_no_progress" in looping["comment"].split(",")
    healthy = liveness(outputs={"messages": sql_agent_messages(1)})
    assert healthy == {"key": "liveness", "score": 1.0, "comment": "ok",
                       "metadata": {"hard_codes": [], "missing": []}}
    with pytest.raises(TypeError, match="outputs"):
        liveness()


def test_async_twins_score_like_the_sync_evaluators() -> None:
    outputs = [sql_agent_messages(1), sql_agent_messages(3)]

    async def both() -> list[dict[str, Any]]:
        live = create_async_liveness_evaluator()
        verdict = create_async_verdict_evaluator()
        gate = create_async_gate_evaluator(min_runs=1)
        return [await live(outputs=outputs[1]), await verdict(outputs=outputs[1]),
                await gate(outputs=outputs)]

    live, verdict, gate = asyncio.run(both())
    assert live == create_liveness_evaluator()(outputs=outputs[1])
    assert verdict == create_verdict_evaluator()(outputs=outputs[1])
    assert gate == create_gate_evaluator(min_runs=1)(outputs=outputs)
    assert (gate["key"], gate["value"], gate["score"]) == ("release_gate", "ROLLBACK", 0.0)
    assert verdict["score"] == 0.0


def test_every_evaluator_returns_openevals_typed_result() -> None:
    """EvaluatorResult (GateResult for the gate), strictly typed: every key, float scores."""
    outputs = [sql_agent_messages(1), sql_agent_messages(3)]
    typed, gate_typed = TypeAdapter(EvaluatorResult), TypeAdapter(GateResult)

    async def both() -> list[Any]:
        return [await create_async_liveness_evaluator()(outputs=outputs[1]),
                await create_async_verdict_evaluator()(outputs=outputs[1]),
                await create_async_gate_evaluator(min_runs=1)(outputs=outputs)]

    results = [create_liveness_evaluator()(outputs=outputs[0]),
               create_verdict_evaluator()(outputs=outputs[1]), *asyncio.run(both())]
    for result in results:
        typed.validate_python(result, strict=True)
        assert set(result) >= {"key", "score", "comment", "metadata"}
        assert isinstance(result["score"], float)
    gate = create_gate_evaluator(min_runs=1)(outputs=outputs)
    gate_typed.validate_python(gate, strict=True)
    assert gate["metadata"] is not None
    assert (gate["metadata"]["runs"], gate["metadata"]["passed"]) == (2, 1)
    verdict = results[1]
    assert verdict["metadata"] is not None
    assert "tool_no_progress" in verdict["metadata"]["hard_codes"]
    assert verdict["metadata"]["passed"] is False


def test_gate_value_is_categorical() -> None:
    """HOLD when the window is too small, PROMOTE on clean runs (judges off), ROLLBACK on a loop."""
    clean = [sql_agent_messages(1)] * 2
    assert create_gate_evaluator(min_runs=5)(outputs=clean)["value"] == "HOLD"
    assert create_gate_evaluator(min_runs=2)(outputs=clean)["value"] == "PROMOTE"  # structural only
    # Asked for judges that cannot run (no key here): missing evidence holds, it never promotes.
    held = create_gate_evaluator(min_runs=2, judges=True)(outputs=clean)
    assert (held["value"], held["score"]) == ("HOLD", 0.5)
    assert create_gate_evaluator(min_runs=1)(outputs=[*clean, sql_agent_messages(3)])["value"] == "ROLLBACK"


def test_feedback_for_is_the_one_liveness_definition() -> None:
    """Hard codes only: a judged failure is not a liveness failure; the CLI pushes the same."""
    stall = Violation(code="no_progress_stall", severity="hard", step=3, node="a", count=2)
    soft = Violation(code="dead_end", severity="soft", step=4, node="a", count=1)
    base = {"run_id": "r", "prompt_version": "p", "reason": "x"}
    assert feedback_for(Verdict(**base, passed=False, violations=[stall, soft])) == {
        "key": "liveness", "score": 0.0, "comment": "no_progress_stall",
        "metadata": {"hard_codes": ["no_progress_stall"], "missing": []}}
    assert feedback_for(Verdict(**base, passed=False, violations=[soft])) == {
        "key": "liveness", "score": 1.0, "comment": "ok", "metadata": {"hard_codes": [], "missing": []}}
