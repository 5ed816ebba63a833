"""LangSmith evaluators, run offline through ``langsmith.evaluate(..., upload_results=False)``."""

from __future__ import annotations

import datetime as dt
import uuid
import warnings
from typing import Any

import pytest
from langsmith import evaluate
from langsmith.schemas import Example

from fake_langsmith import FakeLangSmith
from graphs import campaign
from liveguard import Policy
from liveguard.allowset import load_allowsets
from liveguard.evaluators import (
    create_gate_evaluator,
    create_liveness_evaluator,
    create_verdict_evaluator,
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


def test_verdict_and_gate_summary_evaluators(fake_langsmith: FakeLangSmith) -> None:
    verdict = create_verdict_evaluator(policy=Policy.workflow(), allow_sets=ALLOW, graph="campaign")
    gate = create_gate_evaluator(min_runs=1, policy=Policy.workflow(), allow_sets=ALLOW,
                                 graph="campaign")
    results = run_offline(fake_langsmith, evaluators=[verdict], summary_evaluators=[gate])
    rows = {r["example"].inputs["scenario"]: r["evaluation_results"]["results"][0] for r in results}
    assert rows["healthy"].score == 1.0
    assert "judges=no_api_key" in (rows["healthy"].comment or "")
    assert rows["illegal_hop"].score == 0.0
    [summary] = results._summary_results["results"]
    assert (summary.key, summary.score) == ("release_gate", 0.0)
    assert (summary.comment or "").startswith("ROLLBACK")


def test_factories_validate_their_arguments() -> None:
    with pytest.raises(TypeError, match="Policy"):
        create_liveness_evaluator(policy={"window": 3})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="AllowSet"):
        create_verdict_evaluator(allow_sets={"g": {"transitions": {}}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="window"):
        create_gate_evaluator(window=0)
