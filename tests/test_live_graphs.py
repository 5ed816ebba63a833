"""``guard(graph)`` across calls: interrupt workflows, stopped threads, subgraphs, every entry point.

Real ``StateGraph`` graphs with InMemorySaver and SqliteSaver on a file, node executions
counted by a callback handler (what ran, not what the guard says), and one process per
resume for the restart case.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, interrupt

import liveguard
from liveguard import NoProgressError
from liveguard.integrations.langgraph import GuardedGraph, guard
from liveguard.live.threads import thread_status

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class Nodes(BaseCallbackHandler):
    """Counts graph node executions (root and subgraph nodes alike)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       metadata: Any = None, **kwargs: Any) -> None:
        name = kwargs.get("name")
        if name is not None and name == (metadata or {}).get("langgraph_node"):
            self.names.append(name)


def cfg(name: str, nodes: Nodes | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"configurable": {"thread_id": name}}
    if nodes is not None:
        out["callbacks"] = [nodes]
    return out


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "graphs.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


# ------------------------------------------------------------------ an interrupt() every turn


class Review(TypedDict, total=False):
    summary: str
    answer: str
    rounds: Annotated[list[int], operator.add]


def review_graph(saver: Any) -> Any:
    """``draft -> ask`` forever: the draft is the same each round; ``ask`` waits for a person."""

    def draft(state: Review) -> dict[str, Any]:
        return {"summary": "draft v1 (missing unsubscribe link)", "rounds": [1]}

    def ask(state: Review) -> dict[str, Any]:
        return {"answer": interrupt({"question": "send it?"})}

    builder = StateGraph(Review)
    builder.add_node("draft", draft)
    builder.add_node("ask", ask)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "ask")
    builder.add_edge("ask", "draft")
    return builder.compile(checkpointer=saver, name="review")


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_an_interrupt_every_turn_loop_is_stopped_across_resumes(
    saver_kind: str, sqlite_file: SqliteSaver
) -> None:
    saver = InMemorySaver() if saver_kind == "memory" else sqlite_file
    free, ran = review_graph(InMemorySaver()), Nodes()
    free.invoke({}, cfg("free", ran))
    for _ in range(20):
        assert free.invoke(Command(resume="no"), cfg("free", ran))["__interrupt__"]
    assert ran.names.count("draft") == 21  # unguarded: never stopped

    app, ran = guard(review_graph(saver)), Nodes()
    app.invoke({}, cfg("t", ran))
    outcomes = []
    for _ in range(20):
        try:
            out = app.invoke(Command(resume="no"), cfg("t", ran))
            outcomes.append("paused" if out.get("__interrupt__") else "done")
        except NoProgressError as exc:
            outcomes.append(exc.violation.code)
    first = next(i for i, o in enumerate(outcomes) if o != "paused")
    assert first <= 2
    assert len(set(outcomes[first:])) == 1  # then the same error on every resume
    assert ran.names.count("draft") <= first + 2  # no node ran after the stop
    status = thread_status(app, cfg("t"))["guard"]
    assert status["stop"]["code"] == outcomes[-1]


RESUME_SCRIPT = textwrap.dedent("""
    import json, sqlite3, sys
    sys.path[:0] = [{tests!r}]
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command
    from liveguard import NoProgressError
    from liveguard.integrations.langgraph import guard
    import test_live_graphs as t
    saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
    ran = t.Nodes()
    app = guard(t.review_graph(saver))
    inputs = {{}} if sys.argv[2] == "start" else Command(resume="no")
    try:
        out = app.invoke(inputs, t.cfg("restart", ran))
        status = "paused" if out.get("__interrupt__") else "done"
    except NoProgressError as exc:
        status = exc.violation.code
    print(json.dumps({{"status": status, "nodes": ran.names}}))
""")


def test_one_process_per_resume(tmp_path: Path) -> None:
    db, script = tmp_path / "resume.sqlite", tmp_path / "resume.py"
    script.write_text(RESUME_SCRIPT.format(tests=str(HERE)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}
    runs = []
    for i in range(6):
        out = subprocess.run([sys.executable, str(script), str(db), "start" if i == 0 else "resume"],
                             capture_output=True, text=True, env=env, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    statuses = [r["status"] for r in runs]
    stop = next(i for i, s in enumerate(statuses) if s != "paused")
    assert stop <= 3, statuses
    assert all(s == statuses[stop] for s in statuses[stop:])
    assert all(r["nodes"] == [] for r in runs[stop + 1:])  # stopped: not one node ran


# --------------------------------------------------------------- a stopped thread stays stopped


class Poll(TypedDict, total=False):
    summary: str
    polls: Annotated[list[str], operator.add]


def polling_graph(saver: Any = None, polls: int = 12) -> Any:
    def poll(state: Poll) -> dict[str, Any]:
        return {"summary": "inbox empty", "polls": ["poll"]}

    def route(state: Poll) -> str:
        return "poll" if len(state.get("polls", [])) < polls else END

    builder = StateGraph(Poll)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_conditional_edges("poll", route)
    return builder.compile(checkpointer=saver, name="polling")


def test_a_stopped_thread_raises_at_once_until_cleared(sqlite_file: SqliteSaver) -> None:
    app = guard(polling_graph(sqlite_file))
    ran = Nodes()
    with pytest.raises(NoProgressError) as first:
        app.invoke({}, cfg("p", ran))
    assert ran.names == ["poll", "poll"]
    for resume in (None, {}, None):
        again = Nodes()
        with pytest.raises(NoProgressError) as stopped:
            app.invoke(resume, cfg("p", again))
        assert stopped.value.violation == first.value.violation
        assert again.names == []  # not one node ran
    assert liveguard.clear(app, cfg("p")) == first.value.violation
    after = Nodes()
    with pytest.raises(NoProgressError):  # cleared: the thread runs (and loops) again
        app.invoke(None, cfg("after", after) | cfg("p", after))
    assert after.names == ["poll", "poll"]


def test_without_a_checkpointer_each_call_is_its_own_run() -> None:
    app = guard(polling_graph())
    for _ in range(2):
        ran = Nodes()
        with pytest.raises(NoProgressError):
            app.invoke({}, cfg("x", ran))
        assert ran.names == ["poll", "poll"]  # nothing carried over, nothing saved


def test_end_and_interrupt_behaviours(sqlite_file: SqliteSaver) -> None:
    ended = guard(polling_graph(sqlite_file), exit_behavior="end")
    chunks = list(ended.stream({}, cfg("end"), stream_mode="updates"))
    assert chunks[-1] == {"__liveguard__": {"code": "no_progress_stall", "step": 1,
                                            "node": "poll", "count": 2}}
    assert ended.invoke(None, cfg("end"))is None  # stays stopped, quietly

    held = guard(polling_graph(sqlite_file), exit_behavior="interrupt")
    paused = held.invoke({}, cfg("held"))
    (found,) = paused["__interrupt__"]
    assert found.value["codes"] == ["no_progress_stall"]
    assert found.value["interrupt_id"] == found.id
    shown = Nodes()
    again_shown = held.invoke(None, cfg("held", shown))  # held: nothing runs without a decision
    assert [i.id for i in again_shown["__interrupt__"]] == [found.id]
    assert shown.names == []
    ran = Nodes()
    again = held.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("held", ran))
    assert again["__interrupt__"]  # approved: it ran on, and paused at the next repeat
    assert ran.names == ["poll", "poll"]
    edited = Nodes()
    update = {"type": "edit", "edited_action": {"name": "continue_run",
                                                "args": {"update": {"summary": "inbox: reply"}}}}
    out = held.invoke(Command(resume={"decisions": [update]}), cfg("held", edited))
    assert edited.names[:1] == ["poll"]  # the person's update applied, and the run went on
    assert out["__interrupt__"]
    rejected = Nodes()
    held.invoke(Command(resume={"decisions": [{"type": "reject"}]}), cfg("held", rejected))
    assert rejected.names == []
    approve = Command(resume={"decisions": [{"type": "approve"}]})
    assert held.invoke(approve, cfg("held")) is None  # rejected: stays stopped


# ------------------------------------------------------------------------------------ subgraphs


class Pair(TypedDict, total=False):
    summary: str
    turns: Annotated[list[str], operator.add]


def ping_pong_subgraph() -> Any:
    """Two agents bouncing the same messages, as fast as Python goes."""

    def ping(state: Pair) -> dict[str, Any]:
        return {"summary": "ping: please fix the link", "turns": ["ping"]}

    def pong(state: Pair) -> dict[str, Any]:
        return {"summary": "pong: link still missing", "turns": ["pong"]}

    def route(state: Pair) -> str:
        return "ping" if len(state.get("turns", [])) < 100 else END

    inner = StateGraph(Pair)
    inner.add_node("ping", ping)
    inner.add_node("pong", pong)
    inner.add_edge(START, "ping")
    inner.add_edge("ping", "pong")
    inner.add_conditional_edges("pong", route)
    return inner.compile(name="inner")


def parent_graph(child: Any, saver: Any = None) -> Any:
    def intake(state: Pair) -> dict[str, Any]:
        return {"summary": "intake"}

    outer = StateGraph(Pair)
    outer.add_node("intake", intake)
    outer.add_node("review", child)
    outer.add_edge(START, "intake")
    outer.add_edge("intake", "review")
    outer.add_edge("review", END)
    return outer.compile(checkpointer=saver, name="outer")


def test_a_loop_inside_a_subgraph_is_stopped() -> None:
    free = Nodes()
    parent_graph(ping_pong_subgraph()).invoke({}, {"callbacks": [free]}, )
    assert free.names.count("ping") == 50

    ran = Nodes()
    with pytest.raises(NoProgressError) as stopped:
        guard(parent_graph(ping_pong_subgraph())).invoke({}, {"callbacks": [ran], "recursion_limit": 500})
    violation = stopped.value.violation
    assert violation.code == "content_cycle"
    assert violation.detail["nodes"] == ["review:ping", "review:pong"]
    # stopped inside the subgraph, at the violating step (ping, pong, ping, pong)
    assert ran.names == ["intake", "review", "ping", "pong", "ping", "pong"]

    async def run_async() -> Any:
        with pytest.raises(NoProgressError) as raised:
            await guard(parent_graph(ping_pong_subgraph())).ainvoke({})
        return raised.value.violation

    assert asyncio.run(run_async()) == violation
    seen: list[Any] = []  # the caller asks for subgraph parts: the same stop
    parts = guard(parent_graph(ping_pong_subgraph())).stream({}, subgraphs=True,
                                                             stream_mode="updates")
    with pytest.raises(NoProgressError) as streamed:
        seen.extend(parts)
    assert streamed.value.violation == violation
    assert seen[0] == ((), {"intake": {"summary": "intake"}})
    assert all(ns[0].startswith("review:") for ns, _ in seen[1:])

    ended, chunks = Nodes(), []
    app = guard(parent_graph(ping_pong_subgraph()), exit_behavior="end")
    for chunk in app.stream({}, {"callbacks": [ended]}, stream_mode="updates"):
        chunks.append(chunk)
    assert chunks[-1]["__liveguard__"]["code"] == "content_cycle"
    assert ended.names.count("ping") <= 3  # drained: the subgraph stops before its next step


def test_a_guarded_graph_is_a_pregel_usable_as_a_node_and_with_config() -> None:
    inner = guard(ping_pong_subgraph())
    assert isinstance(inner, Pregel)
    assert isinstance(inner, GuardedGraph)
    ran = Nodes()
    with pytest.raises(NoProgressError):
        parent_graph(inner).invoke({}, {"callbacks": [ran]})  # guarded graph as a node
    assert ran.names.count("ping") == 2  # the guarded subgraph stops itself, as a root
    configured = inner.with_config(recursion_limit=400)
    assert isinstance(configured, GuardedGraph)
    assert configured.config["recursion_limit"] == 400
    assert configured.exit_behavior == "error"
    with pytest.raises(NoProgressError):
        configured.invoke({})


def test_every_entry_point_is_guarded() -> None:
    app = guard(polling_graph())
    with pytest.raises(NoProgressError):
        app.batch([{}, {}])
    assert app.batch([{}, {}], return_exceptions=True)[0].__class__ is NoProgressError

    async def run() -> None:
        with pytest.raises(NoProgressError):
            await app.abatch([{}])
        with pytest.raises(NoProgressError):
            async for _ in app.astream_events({}, version="v2"):
                pass
        with pytest.raises(NoProgressError):
            await app.ainvoke({})

    asyncio.run(run())
    with pytest.raises(NoProgressError):
        for _ in app.stream_events({}, version="v3"):
            pass


class Count(TypedDict, total=False):
    n: int


def counter_graph(saver: Any) -> Any:
    """One node that counts: every step new content, so only the limits can fire."""

    def step(state: Count) -> dict[str, Any]:
        return {"n": state.get("n", 0) + 1}

    def route(state: Count) -> str:
        return "step" if state.get("n", 0) % 3 else END

    builder = StateGraph(Count)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", route)
    return builder.compile(checkpointer=saver, name="counter")


def test_run_and_thread_step_limits_through_guard() -> None:
    """Three steps per call: run_steps=3 never fires; thread_steps=7 fires in the 3rd call."""
    policy = liveguard.Policy.workflow(run_steps=3, thread_steps=7,
                                       nodes={"step": liveguard.NodePolicy(exempt=True)})
    app = guard(counter_graph(InMemorySaver()), policy=policy)
    outcomes = []
    for _ in range(4):
        try:
            app.invoke({}, cfg("lim"))  # each call: three more steps on the same thread
            outcomes.append("ok")
        except NoProgressError as exc:
            outcomes.append(f"{exc.violation.code}:{exc.violation.detail.get('scope')}")
    assert outcomes == ["ok", "ok", "step_limit:thread", "step_limit:thread"]
