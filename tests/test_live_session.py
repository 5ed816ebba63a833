"""Issue 29 items 3-4, issue 28 item 10, issue 30 "Why" 8: one live core for both drivers.

* Both drivers run one :class:`~liveguard.live.thread_guard.ThreadSession`; the middleware keeps
  what one invocation needs in agent state (an ``UntrackedValue``), nothing process-wide;
  severity is a setting of both.
* What a stopped user sees: no callback error lines after a stop inside a subgraph, and a
  retry middleware around the middleware never retries a stopped thread.
* Two overlapping calls on one thread are judged with each other's steps.

Real graphs, real checkpointers, real LangChain middlewares; nothing under test is mocked.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graphs._scripted import ScriptedChatModel
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from graphs import sql_agent
from liveguard import NoProgressError
from liveguard.integrations.langchain import LivenessMiddleware
from liveguard.integrations.langgraph import guard
from test_live_core import Chat, cfg, chat_graph
from test_live_graphs import parent_graph, ping_pong_subgraph


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "session.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


# ------------------------------------------------------------- what a stopped user sees
@pytest.mark.parametrize("behavior", ["error", "end"])
def test_no_callback_error_lines_after_a_stop_inside_a_subgraph(
        behavior: str, caplog: pytest.LogCaptureFixture) -> None:
    """Old guard: LangChain's callback manager logged "Error in Watch.on_chain_end callback"
    (and on_chain_start, once per node that started after the stop) at every subgraph stop."""
    caplog.set_level(logging.WARNING)
    app = guard(parent_graph(ping_pong_subgraph()), exit_behavior=behavior)  # type: ignore[arg-type]
    if behavior == "error":
        with pytest.raises(NoProgressError):
            app.invoke({}, {"recursion_limit": 500})
    else:
        app.invoke({}, {"recursion_limit": 500})
    assert "content_cycle at step 4" in caplog.text  # the stop itself is logged, once
    assert "callback" not in caplog.text


def retry_agent(saver: Any) -> Any:
    return create_agent(
        ScriptedChatModel(script=sql_agent.script_for("looping")),
        [sql_agent.run_sql],
        middleware=[ModelRetryMiddleware(max_retries=2, initial_delay=30, jitter=False),
                    LivenessMiddleware(exit_behavior="error")],
        checkpointer=saver,
    )


def test_a_retry_middleware_never_retries_a_stopped_thread_invoked_again(
        sqlite_saver: SqliteSaver) -> None:
    """Old middleware: the saved stop was raised from wrap_model_call; ModelRetryMiddleware
    retried it with backoff (here 30 s, then 60 s) and saved "Model call failed after 3
    attempts with NoProgressError" into the thread's messages."""
    agent = retry_agent(sqlite_saver)
    config = cfg("retry-stopped")
    with pytest.raises(NoProgressError) as first:
        agent.invoke(sql_agent.initial_input("looping"), config)
    with pytest.raises(NoProgressError) as again:  # no backoff: the test would take 90 s
        agent.invoke({"messages": [{"role": "user", "content": "try again"}]}, config)
    assert again.value.violation == first.value.violation
    messages = agent.get_state(config).values["messages"]
    assert not any("failed after" in str(m.content) for m in messages)
    last = messages[-1].response_metadata.get("liveguard")  # the stop message, with the stop
    assert last == first.value.violation.model_dump(mode="json")


# ------------------------------------------------------------------------ one core, two drivers
def test_the_middleware_keeps_nothing_process_wide() -> None:
    """Old middleware: a locked 1,024-entry thread cache and run tables on the instance."""
    middleware = LivenessMiddleware()
    assert not [name for name, value in vars(middleware).items()
                if isinstance(value, dict | list | set) or "lock" in type(value).__name__.lower()]
    agent = create_agent(ScriptedChatModel(script=sql_agent.script_for("looping")),
                         [sql_agent.run_sql], middleware=[middleware], checkpointer=InMemorySaver())
    with pytest.raises(NoProgressError):
        agent.invoke(sql_agent.initial_input("looping"), cfg("nothing-kept"))
    assert not [name for name, value in vars(middleware).items()
                if isinstance(value, dict | list | set)]


def test_severity_is_a_setting_of_both_drivers() -> None:
    """Old middleware: severity hard-coded to "hard"; ``severity=`` was not accepted."""
    soft = LivenessMiddleware(severity="soft")
    assert (soft.severity, LivenessMiddleware().severity) == ("soft", "hard")
    with pytest.raises(ValueError, match="severity"):
        LivenessMiddleware(severity="loud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="severity"):
        guard(chat_graph(lambda q: q), severity="loud")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- overlapping calls
def answer_graph(answer: Any) -> Any:
    """One node that answers the question (a chat graph's shortest shape)."""
    builder = StateGraph(Chat)
    builder.add_node("generate", lambda state: {"answer": answer(state["question"])})
    builder.add_edge(START, "generate")
    builder.add_edge("generate", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_the_same_request_answered_the_same_way_three_times_is_stopped_one_by_one() -> None:
    """The overlap test's sequential twin: the 3rd identical answer stops the thread."""
    app = guard(answer_graph(lambda q: "Done."))
    for _ in range(2):
        app.invoke({"question": "task 0"}, cfg("one-by-one"))
    with pytest.raises(NoProgressError):
        app.invoke({"question": "task 0"}, cfg("one-by-one"))


def test_an_overlapping_call_is_judged_with_the_other_calls_steps() -> None:
    """Old guard: each call judged only its own lineage. The same request answered the same
    way is stopped at the 3rd call when the calls come one by one; with the 2nd call inside
    its node while the 3rd ran, neither saw the other's answer and the thread never stopped."""
    inside, release = threading.Event(), threading.Event()
    calls = {"n": 0}

    def answer(question: str) -> str:
        calls["n"] += 1
        if calls["n"] == 2:  # the second call waits inside its node
            inside.set()
            assert release.wait(30)
        return "Done."

    app = guard(answer_graph(answer))
    config = cfg("overlap-3")
    app.invoke({"question": "task 0"}, config)
    outcome: list[BaseException | dict[str, Any]] = []

    def second() -> None:
        try:
            outcome.append(app.invoke({"question": "task 0"}, config))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=second)
    worker.start()
    assert inside.wait(30)
    third: BaseException | dict[str, Any]
    try:
        third = app.invoke({"question": "task 0"}, config)
    except NoProgressError as exc:
        third = exc
    release.set()
    worker.join(30)
    stopped = [o for o in (*outcome, third) if isinstance(o, NoProgressError)]
    assert len(stopped) == 1  # the third identical answer, whichever call gave it
    assert stopped[0].violation.code in {"repeated_content", "content_cycle", "no_progress_stall"}
    with pytest.raises(NoProgressError):  # and the thread stays stopped
        app.invoke({"question": "task 0"}, config)


def test_overlapping_calls_on_different_threads_never_share_a_session() -> None:
    """The healthy look-alike: two threads asking the same thing at once are two histories."""
    inside, release = threading.Event(), threading.Event()

    def answer(question: str) -> str:
        if question == "slow":
            inside.set()
            assert release.wait(30)
        return "Done."

    app = guard(chat_graph(answer))
    errors: list[BaseException] = []

    def slow() -> None:
        try:
            app.invoke({"question": "slow"}, cfg("other-thread"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=slow)
    worker.start()
    assert inside.wait(30)
    for _ in range(2):
        assert app.invoke({"question": "task 0"}, cfg("this-thread"))["answer"] == "Done."
    release.set()
    worker.join(30)
    assert not errors


__all__ = ["Chat"]


# ------------------------------------------------------------------- a thread's memory per step
def test_a_monitor_rebuilt_from_its_journal_goes_on_exactly_as_the_original() -> None:
    """Whole windows at step k plus the journaled steps after it give the Monitor at step n."""
    from liveguard import Monitor, Policy, Step
    from liveguard.core._monitor import pack_event

    policy = Policy.tool_agent()
    steps = []
    for i in range(40):
        steps.append(Step(node="model", output={"tool_calls": [
            {"name": "run_sql", "args": {"q": f"select {i % 5}"}, "id": f"c{i}"}]}))
        steps.append(Step(node="tools", tool="run_sql", args={"q": f"select {i % 5}"},
                          result="0 rows" if i % 3 else "boom", error=None if i % 3 else "failed"))
        if i % 7 == 0:
            steps.append(Step(node="user", output={"role": "user", "content": f"ask {i}"}))
    steps += [Step(node="tools", tool="fetch", args={"u": 1}, error="timeout")] * 4  # a loop
    original = Monitor(policy)
    original.journal = []
    found_original = []
    for k, step in enumerate(steps):
        if k == 30:
            keyframe, journal_at = original.snapshot(), len(original.journal)
            original.new_run()
        found_original += original.observe(step)
    rebuilt = Monitor.restore(keyframe, policy)
    rebuilt.replay([pack_event(e) for e in original.journal[journal_at:]])
    assert rebuilt.snapshot() == original.snapshot()
    assert found_original  # the run did fire: the rebuilt windows hold real state


def test_the_guards_records_are_small_beside_the_graphs_own_checkpoints(sqlite_saver: SqliteSaver) -> None:
    """Old guard: a whole windows row per checkpoint, 2.8 KB a step, five times the graph's own."""
    import json
    from typing import TypedDict

    class S(TypedDict, total=False):
        n: int
        text: str

    builder = StateGraph(S)
    builder.add_node("a", lambda s: {"n": s["n"] + 1, "text": f"a saw {s['n']}"})
    builder.add_node("b", lambda s: {"n": s["n"] + 1, "text": f"b saw {s['n']}"})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_conditional_edges("b", lambda s: "a" if s["n"] < 200 else END)
    app = guard(builder.compile(checkpointer=sqlite_saver))
    for thread in range(2):
        app.invoke({"n": 0}, {**cfg(f"size-{thread}"), "recursion_limit": 1000})
    conn = sqlite_saver.conn
    own = ours = 0
    for ns, checkpoint, metadata in conn.execute(
            "SELECT checkpoint_ns, checkpoint, metadata FROM checkpoints"):
        meta = json.loads(metadata)
        record = meta.pop("liveguard", None)
        if ns.startswith("__liveguard__"):
            ours += len(checkpoint) + len(metadata)
            continue
        own += len(checkpoint) + len(json.dumps(meta, separators=(",", ":")))
        ours += len(json.dumps(record, separators=(",", ":"))) if record is not None else 0
    own += sum(n for (n,) in conn.execute("SELECT length(value) FROM writes"))
    steps = 2 * 200
    assert ours / steps <= 512
    assert ours <= own
    with pytest.raises(NoProgressError):  # the records still stop the thread's loop
        app.invoke(None, app.update_state(app.get_state(cfg("size-0")).config, {"n": 199},
                                          as_node="a"))
