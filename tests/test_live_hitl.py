"""The live guards' holds speak LangChain's HITL protocol (issue 19, items 1 and 3).

``guard(exit_behavior="interrupt")`` and ``LivenessMiddleware(exit_behavior="interrupt")``:
every interrupt value is a LangChain ``HITLRequest`` (validated with pydantic against
LangChain's own TypedDicts), every hold is a pending interrupt in the thread state
(``get_state(config).interrupts``, InMemorySaver and SqliteSaver), resumed with
``{"decisions": [...]}``; a malformed answer re-asks and never switches a guard off; a
person's decisions go into the thread record's audit (codes, who, when; never text);
notifiers are called once per hold, and a failing one never releases it.

Real graphs: a ``StateGraph`` that polls forever, a real ``create_agent`` with a scripted
model and a tool that counts its own executions, a real HTTP receiver on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import operator
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, NamedTuple, TypedDict
from uuid import UUID

import pytest
from graphs._scripted import ScriptedChatModel
from langchain.agents import create_agent
from langchain.agents.middleware import human_in_the_loop as lc
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import TypeAdapter

from liveguard.core.model import Violation
from liveguard.integrations.langchain import STATE_KEY, LivenessMiddleware
from liveguard.integrations.langgraph import guard
from liveguard.live.notify import Coords, NotifyOutcome, WebhookNotifier, flush, verify
from liveguard.live.thread_guard import (
    RECORD_VERSION,
    Decider,
    audit_entry,
    decide_hold,
    hold_request,
    read_audit,
    read_hold,
    read_stop,
    stop_value,
)
from liveguard.live.threads import clear, thread_status
from pg_server import postgres_url  # noqa: F401 - the throwaway PostgreSQL server fixture
from test_live_graphs import review_graph
from test_notify import SECRET, Hook, closed_port

REQUEST = TypeAdapter(lc.HITLRequest)
RESPONSE = TypeAdapter(lc.HITLResponse)
PRIVATE = "ACME-SECRET-7f3a"
"""Text a person types (a note, a reject message): it must never reach a record or a log."""


def valid(value: Any) -> dict[str, Any]:
    """A LangChain HITLRequest, strictly; JSON-safe (it crosses the LangGraph server as is)."""
    REQUEST.validate_python(value, strict=True)
    assert json.loads(json.dumps(value)) == value
    return dict(value)


def answer(decision: dict[str, Any], **audit: str) -> Command:
    response = {"decisions": [decision], **audit}
    RESPONSE.validate_python({"decisions": [decision]})  # what LangChain itself would send
    return Command(resume=response)


APPROVE = {"type": "approve"}
REJECT = {"type": "reject", "message": f"stop it, {PRIVATE}"}


def edit(key: str, value: Any) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": "continue_run", "args": {key: value}}}


def cfg(name: str, nodes: Nodes | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"configurable": {"thread_id": name}}
    if nodes is not None:
        out["callbacks"] = [nodes]
    return out


class Nodes(BaseCallbackHandler):
    """Counts graph node executions (what ran, not what the guard says)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       metadata: Any = None, **kwargs: Any) -> None:
        name = kwargs.get("name")
        if name is not None and name == (metadata or {}).get("langgraph_node"):
            self.names.append(name)


class Recorder:
    """A notifier that records what it was called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], Coords]] = []

    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        self.calls.append((dict(payload), coords))
        return NotifyOutcome(ok=True, attempts=1)


class Broken:
    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        raise RuntimeError(f"notifier down {PRIVATE}")


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "hitl.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    conn = sqlite3.connect(tmp_path / "saver.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    server = Hook([200])
    try:
        yield server
    finally:
        server.close()


# ------------------------------------------------------------------------------ guard(): the graph
class Poll(TypedDict, total=False):
    summary: str
    polls: Annotated[list[str], operator.add]


def polling_graph(saver: Any) -> Any:
    """``poll`` forever with the same summary (a stall), up to 40 polls."""

    def poll(state: Poll) -> dict[str, Any]:
        return {"summary": "inbox empty", "polls": ["poll"]}

    def route(state: Poll) -> str:
        return "poll" if len(state.get("polls", [])) < 40 else END

    builder = StateGraph(Poll)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_conditional_edges("poll", route)
    return builder.compile(checkpointer=saver, name="polling")


def held(app: Any, name: str) -> Any:
    """The single pending interrupt of the thread, read from the thread state."""
    (pending,) = app.get_state(cfg(name)).interrupts
    return pending


def test_guard_hold_is_a_pending_interrupt_of_the_thread_state(saver: Any) -> None:
    """Before this, get_state(config).interrupts was empty: the hold lived in the stream only."""
    app = guard(polling_graph(saver), exit_behavior="interrupt")
    out = app.invoke({}, cfg("t"))
    (streamed,) = out["__interrupt__"]
    value = valid(streamed.value)
    assert value["kind"] == "liveguard.liveness"
    assert value["codes"] == ["no_progress_stall"]
    assert value["edit_key"] == "update"
    assert value["interrupt_id"] == streamed.id
    pending = held(app, "t")
    assert (pending.id, pending.value) == (streamed.id, streamed.value)
    assert app.get_state(cfg("t")).next == ("poll",)
    status = thread_status(app, cfg("t"))["guard"]
    assert status["held"] is True
    assert status["stop"]["code"] == "no_progress_stall"

    ran = Nodes()
    again = app.invoke(answer(APPROVE, by="ana"), cfg("t", ran))
    assert ran.names == ["poll", "poll"]  # approved: the windows cleared, two more polls, a new hold
    (second,) = again["__interrupt__"]
    assert second.id != streamed.id
    assert held(app, "t").id == second.id


def test_guard_hold_is_pending_when_the_saver_comes_in_the_config(saver: Any) -> None:
    """As the LangGraph server runs a graph: compiled without a checkpointer, the saver lent
    through the config. The hold must still be a pending interrupt of the thread."""
    app = guard(polling_graph(None), exit_behavior="interrupt")
    config = {"configurable": {"thread_id": "s", "__pregel_checkpointer": saver}}
    first = app.invoke({}, config)["__interrupt__"][0]
    assert [i.id for i in app.get_state(config).interrupts] == [first.id]
    ran = Nodes()
    app.invoke(answer(APPROVE), {**config, "callbacks": [ran]})
    assert ran.names == ["poll", "poll"]


def test_guard_hold_and_the_graphs_own_interrupts_take_turns(saver: Any) -> None:
    """A graph that asks a person every round (``interrupt()``) and drafts the same thing:
    the guard's hold is answered by decisions and never consumes the graph's own question,
    which is answered by the graph's own resume value."""
    app = guard(review_graph(saver), exit_behavior="interrupt")
    out = app.invoke({}, cfg("r"))
    kinds = []
    for _ in range(6):
        (pending,) = app.get_state(cfg("r")).interrupts
        (streamed,) = out["__interrupt__"]
        assert pending.id == streamed.id
        ours = isinstance(pending.value, dict) and pending.value.get("kind") == "liveguard.liveness"
        kinds.append("hold" if ours else "question")
        out = app.invoke(answer(APPROVE) if ours else Command(resume="no"), cfg("r"))
    assert kinds.count("hold") >= 1
    assert kinds.count("question") >= 3
    answers = [s.values.get("answer") for s in app.get_state_history(cfg("r"))]
    assert {"decisions": [APPROVE]} not in answers  # the hold's answer never reached the node


def test_guard_hold_streams_where_langgraph_streams_an_interrupt(saver: Any) -> None:
    """``values`` mode ends with the values plus ``__interrupt__``, as for an ``interrupt()``
    (before: only an ``updates`` caller saw the hold); ``invoke(version="v2")`` returns it in
    ``GraphOutput.interrupts``, at the hold and when the hold is shown again."""
    free = review_graph(InMemorySaver())
    last = list(free.stream({}, cfg("f"), stream_mode="values"))[-1]
    assert "__interrupt__" in last  # what LangGraph itself does

    app = guard(polling_graph(saver), exit_behavior="interrupt")
    *_, end = app.stream({}, cfg("t"), stream_mode="values")
    (hold,) = end["__interrupt__"]
    assert end["summary"] == "inbox empty"
    assert [i.id for i in app.get_state(cfg("t")).interrupts] == [hold.id]
    (again,) = list(app.stream(None, cfg("t"), stream_mode="values"))
    assert [i.id for i in again["__interrupt__"]] == [hold.id]
    assert again["polls"] == app.get_state(cfg("t")).values["polls"]

    first = app.invoke({}, cfg("v2"), version="v2")
    (held_v2,) = first.interrupts
    valid(held_v2.value)
    shown = app.invoke(None, cfg("v2"), version="v2")
    assert [i.id for i in shown.interrupts] == [held_v2.id]
    assert shown.value["summary"] == "inbox empty"


def test_guard_hold_on_postgres(postgres_url: str) -> None:  # noqa: F811
    """The same on a real PostgreSQL: pending, re-asked in place, approved, then rejected."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_url) as pg:
        pg.setup()
        app = guard(polling_graph(pg), exit_behavior="interrupt")
        first = app.invoke({}, cfg("pg-hold"))["__interrupt__"][0]
        assert held(app, "pg-hold").id == first.id
        app.invoke(Command(resume="approve"), cfg("pg-hold"))
        assert held(app, "pg-hold").value["error"]
        ran = Nodes()
        second = app.invoke(answer(APPROVE), cfg("pg-hold", ran))["__interrupt__"][0]
        assert ran.names == ["poll", "poll"]
        assert held(app, "pg-hold").id == second.id
        app.invoke(answer(REJECT), cfg("pg-hold"))
        assert app.get_state(cfg("pg-hold")).interrupts == ()
        audit = thread_status(app, cfg("pg-hold"))["guard"]["audit"]
        assert [e["decision"] for e in audit] == ["error", "approve", "reject"]


def test_guard_resumes_by_interrupt_id_as_the_sdk_sends_it(saver: Any) -> None:
    app = guard(polling_graph(saver), exit_behavior="interrupt")
    first = app.invoke({}, cfg("t"))["__interrupt__"][0]
    ran = Nodes()
    app.invoke(Command(resume={first.id: {"decisions": [APPROVE]}}), cfg("t", ran))
    assert ran.names == ["poll", "poll"]


def test_guard_edit_applies_the_update_and_goes_on(saver: Any) -> None:
    app = guard(polling_graph(saver), exit_behavior="interrupt")
    app.invoke({}, cfg("t"))
    ran = Nodes()
    out = app.invoke(answer(edit("update", {"summary": "inbox: one reply"})), cfg("t", ran))
    assert ran.names[:1] == ["poll"]
    history = [s.values.get("summary") for s in app.get_state_history(cfg("t"))]
    assert "inbox: one reply" in history  # the person's update is a checkpointed state update
    assert out["__interrupt__"]  # and the stall, which goes on, is held again


def test_guard_reject_ends_drops_the_pending_interrupt_and_stays_stopped(
    saver: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app = guard(polling_graph(saver), exit_behavior="interrupt")
    app.invoke({}, cfg("t"))
    ran = Nodes()
    out = app.invoke(answer(REJECT, by="ana", note=f"looked at {PRIVATE}"), cfg("t", ran))
    assert ran.names == []
    assert not out or "__interrupt__" not in out
    assert app.get_state(cfg("t")).interrupts == ()  # no longer listed as waiting for a person
    after = Nodes()
    assert app.invoke(answer(APPROVE), cfg("t", after)) is None  # rejected: stays stopped
    assert after.names == []
    record = thread_status(app, cfg("t"))["guard"]
    assert record["held"] is False
    assert record["stop"]["code"] == "no_progress_stall"
    (entry,) = record["audit"]
    assert entry["decision"] == "reject"
    assert entry["by"] == "ana"
    assert entry["code"] == "no_progress_stall"
    assert entry["at"]
    assert entry["note"].startswith("sha256:")
    assert entry["message"].startswith("sha256:")
    assert PRIVATE not in json.dumps(record)
    assert PRIVATE not in caplog.text


@pytest.mark.parametrize("bad", [
    "approve",  # the old dialect
    {"action": "edit", "update": {"summary": "x"}},  # the old dialect
    {"decisions": [{"type": "aprove"}]},
    {"decisions": [edit("update", {})]},
    {"decisions": [APPROVE, APPROVE]},
])
def test_guard_malformed_answer_reasks_and_nothing_runs(saver: Any, bad: Any) -> None:
    recorder = Recorder()
    app = guard(polling_graph(saver), exit_behavior="interrupt", notifiers=[recorder])
    first = app.invoke({}, cfg("t"))["__interrupt__"][0]
    ran = Nodes()
    out = app.invoke(Command(resume=bad), cfg("t", ran))
    assert ran.names == []
    (again,) = out["__interrupt__"]
    value = valid(again.value)
    assert value["error"]
    assert again.id == first.id
    assert held(app, "t").value["error"] == value["error"]  # the thread state shows the re-ask
    assert flush(30)  # the notifiers run off the call
    assert [c[0].get("error") for c in recorder.calls] == [None, value["error"]]
    ok = Nodes()
    app.invoke(answer(APPROVE), cfg("t", ok))
    assert ok.names == ["poll", "poll"]  # the guard stayed on: it stopped the stall again
    audit = thread_status(app, cfg("t"))["guard"]["audit"]
    assert [e["decision"] for e in audit] == ["error", "approve"]
    assert audit[0]["location"]


def test_guard_shows_the_hold_again_without_an_answer_and_notifies_once(saver: Any) -> None:
    recorder = Recorder()
    app = guard(polling_graph(saver), exit_behavior="interrupt", notifiers=[recorder])
    first = app.invoke({}, cfg("t"))["__interrupt__"][0]
    for again in (None, {"summary": "new input"}, Command(update={"summary": "x"})):
        ran = Nodes()
        out = app.invoke(again, cfg("t", ran))
        assert ran.names == []
        assert [i.id for i in out["__interrupt__"]] == [first.id]
    assert flush(30)
    (call,) = recorder.calls  # once per hold, never when the hold is shown again
    payload, coords = call
    assert payload == first.value
    assert coords == Coords(thread_id="t", checkpoint_ns="", interrupt_id=first.id)
    app.invoke(answer(APPROVE), cfg("t"))
    assert flush(30)
    assert len(recorder.calls) == 2  # the next hold


def test_guard_webhook_is_signed_and_a_failing_notifier_never_releases_the_hold(
    saver: Any, hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    dead = WebhookNotifier(url=f"http://127.0.0.1:{closed_port()}/x", secret=SECRET, retries=0,
                           timeout=2.0)
    webhook = WebhookNotifier(url=hook.url, secret=SECRET, retries=0, timeout=5.0)
    app = guard(polling_graph(saver), exit_behavior="interrupt", notifiers=[Broken(), dead, webhook])
    first = app.invoke({}, cfg("t"))["__interrupt__"][0]
    assert held(app, "t").id == first.id  # still held
    assert flush(30)
    assert "notifier=Broken" in caplog.text
    assert "notifier=WebhookNotifier" in caplog.text
    assert PRIVATE not in caplog.text
    ((headers, body),) = hook.requests
    assert verify(SECRET, body, headers)
    sent = json.loads(body)
    assert (sent["thread_id"], sent["interrupt_id"], sent["codes"]) == ("t", first.id,
                                                                      ["no_progress_stall"])
    ran = Nodes()
    app.invoke(answer(APPROVE), cfg("t", ran))
    assert ran.names == ["poll", "poll"]


def test_guard_clear_drops_the_hold_and_keeps_the_audit(sqlite_saver: SqliteSaver) -> None:
    app = guard(polling_graph(sqlite_saver), exit_behavior="interrupt")
    app.invoke({}, cfg("t"))
    app.invoke(Command(resume="approve"), cfg("t"))  # malformed: audited as an error
    assert clear(app, cfg("t")) is not None
    assert app.get_state(cfg("t")).interrupts == ()
    record = thread_status(app, cfg("t"))["guard"]
    assert record["stop"] is None
    assert [e["decision"] for e in record["audit"]] == ["error"]


@pytest.mark.parametrize("kind", ["memory", "aiosqlite"])
def test_guard_async_hold_and_decisions(kind: str, tmp_path: Path) -> None:
    recorder = Recorder()

    async def run() -> tuple[Any, Any, Any, Any]:
        opened: Any = (contextlib.nullcontext(InMemorySaver()) if kind == "memory"
                       else AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")))
        async with opened as saver:
            app = guard(polling_graph(saver), exit_behavior="interrupt", notifiers=[recorder])
            first = (await app.ainvoke({}, cfg("a")))["__interrupt__"][0]
            pending = (await app.aget_state(cfg("a"))).interrupts
            bad = (await app.ainvoke(Command(resume={"decisions": []}), cfg("a")))["__interrupt__"][0]
            ran = Nodes()
            await app.ainvoke(answer(APPROVE), cfg("a", ran))
            return first, pending, bad, ran

    first, pending, bad, ran = asyncio.run(run())
    valid(first.value)
    assert [i.id for i in pending] == [first.id]
    assert valid(bad.value)["error"].startswith("decisions")
    assert ran.names == ["poll", "poll"]
    assert flush(30)
    assert len(recorder.calls) == 3  # the hold, the re-ask, the next hold


# ----------------------------------------------------------------- LivenessMiddleware: the agent
RUNS = {"search": 0}


@tool
def search(query: str) -> str:
    """Search (this one always finds the same nothing)."""
    RUNS["search"] += 1
    return "no results"


def looping_model(turns: int = 60) -> ScriptedChatModel:
    """A model that calls ``search("q")`` every turn: it loops until something stops it."""
    call = {"name": "search", "args": {"query": "q"}, "type": "tool_call"}
    return ScriptedChatModel(script=tuple(
        AIMessage(content="", tool_calls=[{**call, "id": f"call_{i}"}]) for i in range(turns)))


def looping_agent(saver: Any, **options: Any) -> Any:
    return create_agent(looping_model(), [search], checkpointer=saver,
                        middleware=[LivenessMiddleware(exit_behavior="interrupt", **options)])


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture(autouse=True)
def _reset() -> None:
    RUNS["search"] = 0


def test_middleware_bad_answer_reasks_and_no_further_tool_call_runs(saver: Any) -> None:
    """Before: the answer raised inside the middleware, which stood down as guard_error, and
    the agent then looped until GraphRecursionError."""
    app = looping_agent(saver)
    limit = {"recursion_limit": 30}
    first = app.invoke(user("find it"), {**cfg("m"), **limit})["__interrupt__"][0]
    valid(first.value)
    assert first.value["codes"] == ["tool_no_progress"]
    assert first.value["edit_key"] == "message"
    tried = RUNS["search"]
    for bad in ({"decisions": [{"type": "approve", "action": "go"}]}, "approve",
                {"decisions": [edit("message", "")]}):
        try:
            out = app.invoke(Command(resume=bad), {**cfg("m"), **limit})
        except GraphRecursionError:  # the old middleware: switched off, looping
            pytest.fail(f"a bad answer switched the guard off ({RUNS['search'] - tried} more calls)")
        (again,) = out["__interrupt__"]
        assert valid(again.value)["error"]
        assert RUNS["search"] == tried  # no further tool call ran
        (pending,) = app.get_state(cfg("m")).interrupts
        assert pending.id == again.id
    done = app.invoke(answer(REJECT, by="bo"), {**cfg("m"), **limit})
    assert done["messages"][-1].content.startswith("Stopped by liveguard: tool_no_progress")
    assert RUNS["search"] == tried
    saved = app.get_state(cfg("m")).values[STATE_KEY]
    audit = saved["audit"]
    assert [e["decision"] for e in audit] == ["error", "error", "error", "reject"]
    assert audit[-1]["by"] == "bo"
    assert PRIVATE not in json.dumps(audit)
    # one record schema: the core reads the middleware's saved value as it reads guard()'s
    assert saved["v"] == RECORD_VERSION
    stop, held_now = read_stop(saved)
    assert stop is not None
    assert (stop.code, stop.step, stop.count) == ("tool_no_progress", first.value["step"],
                                                  first.value["count"])
    assert held_now is False


def test_middleware_each_decision_type(saver: Any) -> None:
    app = looping_agent(saver)
    first = app.invoke(user("find it"), cfg("m"))["__interrupt__"][0]
    assert app.get_state(cfg("m")).interrupts[0].id == first.id
    tried = RUNS["search"]
    again = app.invoke(answer(APPROVE, by="ana"), cfg("m"))
    assert RUNS["search"] > tried  # approved: the run went on (and looped into a new hold)
    second = valid(again["__interrupt__"][0].value)
    assert second["codes"] == ["tool_no_progress"]
    tried = RUNS["search"]
    third = app.invoke(answer(edit("message", "try another query")), cfg("m"))
    messages = app.get_state(cfg("m")).values["messages"]
    assert any(m.type == "human" and m.content == "try another query" for m in messages)
    assert RUNS["search"] > tried
    assert third["__interrupt__"]
    done = app.invoke(answer(REJECT), cfg("m"))
    assert done["messages"][-1].content.startswith("Stopped by liveguard")
    audit = app.get_state(cfg("m")).values[STATE_KEY]["audit"]
    assert [(e["decision"], e["by"]) for e in audit] == [("approve", "ana"), ("edit", None),
                                                         ("reject", None)]


def test_middleware_notifies_once_per_hold_and_a_failing_notifier_never_releases(
    saver: Any, hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    webhook = WebhookNotifier(url=hook.url, secret=SECRET, retries=0)
    app = looping_agent(saver, notifiers=[Broken(), recorder, webhook])
    first = app.invoke(user("find it"), cfg("m"))["__interrupt__"][0]
    tried = RUNS["search"]
    assert app.get_state(cfg("m")).interrupts[0].id == first.id  # the broken notifier held nothing up
    assert RUNS["search"] == tried
    assert flush(30)
    assert "notifier=Broken" in caplog.text
    (call,) = recorder.calls
    assert call[0] == first.value
    assert (call[1].thread_id, call[1].interrupt_id) == ("m", first.id)
    ((headers, body),) = hook.requests
    assert verify(SECRET, body, headers)
    app.invoke(answer(APPROVE), cfg("m"))  # the replay of the held node does not notify again
    assert flush(30)
    assert len(recorder.calls) == 2
    assert len(hook.requests) == 2
    assert recorder.calls[1][1].interrupt_id != first.id


def test_middleware_async_hold_notifies_and_resumes() -> None:
    recorder = Recorder()
    app = looping_agent(InMemorySaver(), notifiers=[recorder])

    async def run() -> tuple[Any, Any]:
        first = (await app.ainvoke(user("find it"), cfg("a")))["__interrupt__"][0]
        done = await app.ainvoke(answer(REJECT), cfg("a"))
        return first, done

    first, done = asyncio.run(run())
    valid(first.value)
    assert done["messages"][-1].content.startswith("Stopped by liveguard")
    assert flush(30)
    assert len(recorder.calls) == 1


# ------------------------------------------------------- a slow receiver never delays a hold (issue 28)
class Woken:
    """A notifier around a webhook: ``returned`` is set once the webhook has given its outcome."""

    def __init__(self, url: str) -> None:
        # a long deadline: on code that notifies inline, the call would wait all of it
        self.webhook = WebhookNotifier(url=url, secret=SECRET, retries=0, timeout=20.0)
        self.outcomes: list[NotifyOutcome] = []
        self.returned = threading.Event()

    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        try:
            self.outcomes.append(self.webhook(payload, coords))
            return self.outcomes[-1]
        finally:
            self.returned.set()


class Holding(NamedTuple):
    hook: Hook
    arrived: threading.Event
    kind: str


@pytest.fixture(params=["slow", "trickle"])
def holding(request: pytest.FixtureRequest) -> Iterator[Holding]:
    """A receiver on 127.0.0.1 that holds the delivery until the test sets ``hook.release``:
    ``slow`` answers nothing until then (and 200 after); ``trickle`` sends its status line and
    headers, then a body byte every 0.1 s (and hangs up unfinished when released). The event is
    set when the delivery has arrived."""
    arrived = threading.Event()
    box: list[Hook] = []

    def on_request(headers: dict[str, str]) -> None:
        arrived.set()
        if request.param == "slow":
            box[0].release.wait(30)

    box.append(Hook([200], trickle=request.param == "trickle", on_request=on_request))
    try:
        yield Holding(box[0], arrived, request.param)
    finally:
        box[0].close()


def _delivered(holding: Holding, woken: Woken, interrupt_id: str) -> None:
    """After the release: the one delivery was signed and named the hold; a slow receiver's
    answer is taken, a trickling one's (cut short) is a failed notification."""
    holding.hook.release.set()
    assert flush(30)
    ((headers, body),) = holding.hook.requests
    assert verify(SECRET, body, headers)
    assert json.loads(body)["interrupt_id"] == interrupt_id
    (outcome,) = woken.outcomes
    if holding.kind == "slow":
        assert outcome == NotifyOutcome(ok=True, attempts=1, status=200)
    else:
        assert not outcome.ok
        assert outcome.error


def test_guard_returns_and_stores_the_hold_while_the_receiver_holds_the_notification(
    sqlite_saver: SqliteSaver, holding: Holding
) -> None:
    """Issue 28, item 4: guard() notified inline, so a slow or trickling receiver held the call
    up to its deadline (times its attempts). Now the call returns, the hold stored, while the
    receiver still holds the delivery; the delivery arrives all the same."""
    hook, arrived, _kind = holding
    woken = Woken(hook.url)
    app = guard(polling_graph(sqlite_saver), exit_behavior="interrupt", notifiers=[woken])
    first = app.invoke({}, cfg("slow"))["__interrupt__"][0]
    assert not woken.returned.is_set(), "the call waited for the receiver"
    assert arrived.wait(30), "the notification never left"
    assert held(app, "slow").id == first.id  # stored, while the receiver holds the delivery
    assert thread_status(app, cfg("slow"))["guard"]["held"] is True
    assert not woken.returned.is_set()
    _delivered(holding, woken, first.id)
    ran = Nodes()  # fail closed: whatever the receiver did, the thread waits for a person
    assert [i.id for i in app.invoke(None, cfg("slow", ran))["__interrupt__"]] == [first.id]
    assert ran.names == []
    app.invoke(answer(APPROVE), cfg("slow", ran))
    assert ran.names == ["poll", "poll"]


def test_middleware_returns_and_stores_the_hold_while_the_receiver_holds_the_notification(
    sqlite_saver: SqliteSaver, holding: Holding
) -> None:
    """The same for LivenessMiddleware's hold (hitl.ask in the model node): the delivery
    leaves only once the checkpointer holds the interrupt, and the call never waits for it."""
    hook, arrived, _kind = holding
    woken = Woken(hook.url)
    app = looping_agent(sqlite_saver, notifiers=[woken])
    first = app.invoke(user("find it"), cfg("m"))["__interrupt__"][0]
    tried = RUNS["search"]
    assert not woken.returned.is_set(), "the call waited for the receiver"
    assert arrived.wait(30), "the notification never left"
    assert [i.id for i in app.get_state(cfg("m")).interrupts] == [first.id]
    assert not woken.returned.is_set()
    _delivered(holding, woken, first.id)
    assert [i.id for i in app.get_state(cfg("m")).interrupts] == [first.id]  # still held
    assert RUNS["search"] == tried  # nothing ran on the notification's account
    done = app.invoke(answer(REJECT), cfg("m"))
    assert done["messages"][-1].content.startswith("Stopped by liveguard")


def test_middleware_wakes_the_person_only_once_the_hold_is_stored(sqlite_saver: SqliteSaver) -> None:
    """hitl.ask notified from inside the node, before LangGraph stored the interrupt: a person
    who answered at once found no hold. The receiver reads the thread as the delivery arrives."""
    seen: list[list[str]] = []
    reader = looping_agent(sqlite_saver)

    def answer_at_once(headers: dict[str, str]) -> None:
        seen.append([i.id for i in reader.get_state(cfg("eager")).interrupts])

    hook = Hook([200], on_request=answer_at_once)
    try:
        app = looping_agent(sqlite_saver, notifiers=[WebhookNotifier(url=hook.url, secret=SECRET,
                                                                     retries=0)])
        first = app.invoke(user("find it"), cfg("eager"))["__interrupt__"][0]
        assert flush(30)
    finally:
        hook.close()
    assert seen == [[first.id]]


def test_async_holds_return_while_the_receiver_holds_the_notification(
    holding: Holding
) -> None:
    """The async paths (guard's ainvoke, the middleware through aask) used to wait for the
    notifiers in a worker thread: the event loop was free, the call was not."""
    hook, arrived, _kind = holding
    woken = Woken(hook.url)
    graph = guard(polling_graph(InMemorySaver()), exit_behavior="interrupt", notifiers=[woken])
    agent = looping_agent(InMemorySaver(), notifiers=[woken])

    async def run() -> tuple[Any, bool, Any, bool]:
        first = (await graph.ainvoke({}, cfg("ag")))["__interrupt__"][0]
        after_graph = woken.returned.is_set()
        second = (await agent.ainvoke(user("find it"), cfg("am")))["__interrupt__"][0]
        return first, after_graph, second, woken.returned.is_set()

    first, after_graph, second, after_agent = asyncio.run(run())
    assert not after_graph, "the guarded graph's ainvoke waited for the receiver"
    assert not after_agent, "the agent's ainvoke waited for the receiver"
    assert arrived.wait(30)
    assert held(graph, "ag").id == first.id
    assert [i.id for i in agent.get_state(cfg("am")).interrupts] == [second.id]
    hook.release.set()
    assert flush(30)
    assert [json.loads(body)["interrupt_id"] for _h, body in hook.requests] == [first.id, second.id]


# --------------------------------------------------------------------- every value, every decision
def all_holds(saver: Any) -> list[tuple[str, Any, Any]]:
    """(integration, app, thread) with a fresh hold each, and the values they emitted."""
    out = []
    for decision in ("approve", "edit", "reject"):
        g = guard(polling_graph(saver), exit_behavior="interrupt")
        g.invoke({}, cfg(f"g-{decision}"))
        out.append(("guard", g, f"g-{decision}"))
        m = looping_agent(saver)
        m.invoke(user("find it"), cfg(f"m-{decision}"))
        out.append(("middleware", m, f"m-{decision}"))
    return out


def test_every_emitted_value_is_a_hitl_request_and_each_decision_resumes(
    saver: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    seen = 0
    for kind, app, thread in all_holds(saver):
        (pending,) = app.get_state(cfg(thread)).interrupts
        value = valid(pending.value)
        seen += 1
        decision = thread.split("-", 1)[1]
        assert set(lc.HITLRequest.__annotations__) <= set(value)  # what LangChain's UIs read
        bad = app.invoke(Command(resume={"decisions": "approve"}), cfg(thread))["__interrupt__"][0]
        valid(bad.value)
        seen += 1
        key = "update" if kind == "guard" else "message"
        change = {"summary": "inbox: a reply"} if kind == "guard" else "try another query"
        chosen = {"approve": APPROVE, "edit": edit(key, change), "reject": REJECT}[decision]
        ran = Nodes()
        before = RUNS["search"]
        out = app.invoke(answer(chosen), cfg(thread, ran))
        if decision == "reject":
            assert "tools" not in ran.names
            assert "poll" not in ran.names
            assert RUNS["search"] == before
            if kind == "guard":
                assert app.get_state(cfg(thread)).interrupts == ()
        else:
            assert ran.names  # the run went on
            for again in (out or {}).get("__interrupt__", ()):
                valid(again.value)
                seen += 1
    assert seen >= 14


# ------------------------------------------------------------------------ the core (thread_guard)
STOP = Violation(code="tool_no_progress", severity="hard", step=5, node="tools", count=3,
                 detail={"digest": "50e432945c4c"})
OTHER = Violation(code="content_cycle", severity="hard", step=5, node="model", count=2, detail={})


def test_the_core_decider_debounces_for_the_middleware_and_stops_on_anything_else() -> None:
    """The middleware's continue mode now decides through the core: a debounced violation
    lets the run go on, any other stops at once (no counting up to the ceiling)."""
    blocked: list[str] = []

    def debounce(v: Violation) -> bool:
        blocked.append(v.code)
        return v.code == "tool_no_progress"

    decider = Decider("continue", "hard", ceiling=3)
    assert decider.decide([STOP], debounce=debounce) is None
    assert decider.decide([STOP, OTHER], debounce=debounce) == OTHER
    assert blocked == ["tool_no_progress", "tool_no_progress", "content_cycle"]
    assert Decider("continue", ceiling=3).decide([OTHER]) is None  # guard(): counts to the ceiling
    assert Decider("error").decide([STOP], debounce=debounce) == STOP  # only continue debounces
    assert decider.debounce_ceiling(2, step=7, node="tools") is None
    ceiling = decider.debounce_ceiling(3, step=7, node="tools")
    assert ceiling is not None
    assert (ceiling.code, ceiling.count, ceiling.step, ceiling.hard) == ("debounce_ceiling", 3, 7, True)
    assert Decider("end").debounce_ceiling(9, step=7, node="tools") is None


def test_the_core_builds_the_hold_and_audits_codes_who_and_when_never_text() -> None:
    request = hold_request(STOP, edit="update", interrupt_id="ab" * 16, error="decisions: bad")
    valid(request)
    assert request["detail"] == {"digest": "50e432945c4c"}
    assert request["error"] == "decisions: bad"
    decision = decide_hold({"decisions": [REJECT], "by": "ana", "note": PRIVATE}, request)
    entry = audit_entry(decision, STOP, at="2026-12-01T14:00:00+00:00")
    assert entry["decision"] == "reject"
    assert entry["by"] == "ana"
    assert entry["step"] == 5
    assert PRIVATE not in json.dumps(entry)
    assert entry["note"] != entry["message"]
    error = decide_hold("approve", request)
    bad = audit_entry(error, STOP, at="2026-12-01T14:00:00+00:00")
    assert bad["decision"] == "error"
    assert bad["location"] == "resume"
    value = stop_value(STOP, held=True, hold={"id": "x"}, audit=[entry] * 40)
    assert len(read_audit(value)) == 32
    assert read_hold(value) == {"id": "x"}
    assert "hold" not in stop_value(STOP, held=False, hold={"id": "x"})
