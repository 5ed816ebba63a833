"""The live guard takes the semantic layer through its policy: a real LangGraph graph, SQLite checkpoints."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from liveguard import NoProgressError, Policy
from liveguard.integrations.langgraph import guard

REVIEWS = [
    "add() returns a minus b; it should return their sum. Please fix the operator.",
    "The function still subtracts instead of adding. Change the minus to a plus.",
    "This still computes a - b rather than a + b. The operator needs to be a plus sign.",
    "Same problem as before: add() subtracts. It must add the two arguments.",
]


class State(TypedDict, total=False):
    code: str
    review: str
    round: int


def coder(state: State) -> State:
    n = state.get("round", 0)
    return {"code": f"def add(a, b): return a - b  # revision {n}", "round": n + 1}


def reviewer(state: State) -> State:
    return {"review": REVIEWS[(state["round"] - 1) % len(REVIEWS)]}


def build(path: Path, policy: Policy):  # type: ignore[no-untyped-def]
    g = StateGraph(State)
    g.add_node("coder", coder)
    g.add_node("reviewer", reviewer)
    g.add_edge(START, "coder")
    g.add_edge("coder", "reviewer")
    g.add_conditional_edges("reviewer", lambda s: END if s["round"] >= 8 else "coder")
    saver = SqliteSaver(sqlite3.connect(path / "cp.sqlite", check_same_thread=False))
    return guard(g.compile(checkpointer=saver), policy=policy)


def test_the_guard_stops_a_reworded_review_loop_with_the_semantic_layer_on(tmp_path: Path) -> None:
    policy = Policy(semantic=True, max_revisits=20)  # leave only the content rules to stop it
    app = build(tmp_path, policy)
    with pytest.raises(NoProgressError) as info:
        app.invoke({"round": 0}, {"configurable": {"thread_id": "t1"}})
    v = info.value.violation
    assert (v.code, v.severity, v.node, v.step) == ("semantic_repeat", "hard", "reviewer", 5)


def test_without_the_semantic_layer_the_same_loop_runs_to_its_end(tmp_path: Path) -> None:
    app = build(tmp_path, Policy(max_revisits=20))
    out = app.invoke({"round": 0}, {"configurable": {"thread_id": "t1"}})
    assert out["round"] == 8
