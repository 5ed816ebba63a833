"""Thread-level liveness: loops that span invokes, resumes and restarts are one loop.

Real ``create_agent`` and ``StateGraph`` graphs, real tools that count their own
executions, a rule-driven chat model that records what it was shown, InMemorySaver and
SqliteSaver on a file, and one process per resume for the restart cases.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, SummarizationMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from pydantic import Field

import liveguard
import liveguard.live.threads
from liveguard import NoProgressError, Policy
from liveguard.cli import main as cli_main
from liveguard.integrations.langchain import STATE_KEY, LivenessMiddleware
from liveguard.integrations.langgraph import guard

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent

# ------------------------------------------------------------------------------ the agent parts

CALLS: dict[str, int] = {"fetch": 0, "lookup": 0}
"""Executions that really reached a tool (reset per test)."""

BULKY = "x" * 2000


@tool
def fetch(url: str) -> str:
    """Fetch a page (this one always times out, for good)."""
    CALLS["fetch"] += 1
    return json.dumps({"error": "timeout", "retryable": False, "body": BULKY})


@tool
def lookup(key: str) -> str:
    """Look a key up (always works, a new answer per key)."""
    CALLS["lookup"] += 1
    return f"value of {key}"


class RuleModel(BaseChatModel):
    """A chat model that decides from the last message, and records every request.

    After a human turn (or a person's edit) it calls ``fetch(url)``; after a failed
    ``fetch`` it calls it again (a looping agent), unless ``give_up`` is set; after any
    other tool result it answers. ``url`` can change per human turn through the turn's
    text (``"url=<x>"``); a human turn with ``"key=<k>"`` calls ``lookup(k)`` instead.
    Tool call ids are derived from the number of messages, so a
    replay in another process makes the same calls.
    """

    give_up: bool = False
    seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "liveguard-rule-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = next((m.text for m in messages if m.type == "system"), "")
        self.seen.append({"system": system, "types": [m.type for m in messages],
                          "contents": [m.text for m in messages]})
        last = messages[-1]
        n = len(messages)
        url = "https://example.com"
        for m in reversed(messages):
            if isinstance(m, HumanMessage) and "url=" in m.text:
                url = m.text.split("url=", 1)[1].split()[0]
                break
        if isinstance(last, HumanMessage) and "key=" in last.text:
            key = last.text.split("key=", 1)[1].split()[0]
            reply = AIMessage(content="", tool_calls=[
                {"name": "lookup", "args": {"key": key}, "id": f"call_{n}", "type": "tool_call"}])
        elif isinstance(last, ToolMessage) and last.name == "fetch" and not self.give_up:
            reply = AIMessage(content="", tool_calls=[
                {"name": "fetch", "args": {"url": url}, "id": f"call_{n}", "type": "tool_call"}])
        elif isinstance(last, ToolMessage):
            reply = AIMessage(content=f"done after {n} messages: {last.text[:24]}")
        else:
            reply = AIMessage(content="", tool_calls=[
                {"name": "fetch", "args": {"url": url}, "id": f"call_{n}", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@pytest.fixture(autouse=True)
def _reset_counts() -> None:
    CALLS["fetch"] = CALLS["lookup"] = 0


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "threads.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def cfg(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def agent(saver: Any, *middleware: Any, give_up: bool = True, model: Any = None,
          tools: Any = None) -> Any:
    return create_agent(model or RuleModel(give_up=give_up), tools or [fetch],
                        middleware=list(middleware), checkpointer=saver)


# --------------------------------------------------------------------- a chat thread, turn by turn


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_a_chat_thread_that_retries_the_same_failing_call_is_stopped(
    saver_kind: str, sqlite_file: SqliteSaver
) -> None:
    """Ten user turns, one identical non-retryable failure each: stopped at the 2nd."""
    saver = InMemorySaver() if saver_kind == "memory" else sqlite_file
    free = agent(InMemorySaver())
    for _ in range(10):
        free.invoke(user("try again"), cfg("free"))
    assert CALLS["fetch"] == 10  # unguarded: ten identical failures

    CALLS["fetch"] = 0
    guarded = agent(saver, LivenessMiddleware())
    outcomes = []
    for _ in range(10):
        try:
            guarded.invoke(user("try again"), cfg("chat"))
            outcomes.append("ok")
        except NoProgressError as exc:
            outcomes.append(exc.violation.code)
    assert outcomes == ["ok"] + ["tool_no_progress"] * 9
    assert CALLS["fetch"] == 2  # the stopped thread never reached the tool again
    saved = guarded.get_state(cfg("chat")).values[STATE_KEY]
    assert saved["stop"]["code"] == "tool_no_progress"
    assert len(json.dumps(saved)) < 4096


def test_a_stopped_thread_stays_stopped_until_cleared(sqlite_file: SqliteSaver) -> None:
    model = RuleModel(give_up=False)
    looping = agent(sqlite_file, LivenessMiddleware(), model=model)
    with pytest.raises(NoProgressError) as first:
        looping.invoke(user("load it"), cfg("t"))
    assert CALLS["fetch"] == 2
    for resume in (None, user("try again")):  # resume, and a new turn: the same error at once
        calls_before = len(model.seen)
        with pytest.raises(NoProgressError) as again:
            looping.invoke(resume, cfg("t"))
        assert again.value.violation == first.value.violation
        assert len(model.seen) == calls_before  # no model call
    assert CALLS["fetch"] == 2

    cleared = liveguard.clear(looping, cfg("t"))
    assert cleared == first.value.violation
    assert liveguard.clear(looping, cfg("t")) is None  # nothing left to clear
    with pytest.raises(NoProgressError):  # it runs again, and loops again
        looping.invoke(user("url=https://example.org"), cfg("t"))
    assert CALLS["fetch"] == 4
    assert len(model.seen) > calls_before


def test_human_in_the_loop_approvals_in_one_process(sqlite_file: SqliteSaver) -> None:
    """A person approves the identical failing call each time: stopped at the 2nd failure."""
    hitl = HumanInTheLoopMiddleware(interrupt_on={"fetch": True})
    free = agent(InMemorySaver(), hitl, give_up=False)
    result = free.invoke(user("load it"), cfg("free"))
    for _ in range(9):
        assert result["__interrupt__"]
        result = free.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("free"))
    assert CALLS["fetch"] == 9  # never stopped

    CALLS["fetch"] = 0
    guarded = agent(sqlite_file, LivenessMiddleware(), hitl, give_up=False)
    guarded.invoke(user("load it"), cfg("hitl"))
    outcomes = []
    for _ in range(9):
        try:
            out = guarded.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("hitl"))
            outcomes.append("paused" if out.get("__interrupt__") else "done")
        except NoProgressError as exc:
            outcomes.append(exc.violation.code)
    assert outcomes == ["paused"] + ["tool_no_progress"] * 8
    assert CALLS["fetch"] == 2


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
def test_guard_on_an_agent_thread_sees_the_loop_across_turns_and_approvals(
    saver_kind: str, sqlite_file: SqliteSaver
) -> None:
    """The same two cases through ``guard()``: its thread record lives in the checkpointer."""
    saver = InMemorySaver() if saver_kind == "memory" else sqlite_file
    chat = guard(agent(saver))
    outcomes = []
    for _ in range(6):
        try:
            chat.invoke(user("try again"), cfg("chat"))
            outcomes.append("ok")
        except NoProgressError as exc:
            outcomes.append(exc.violation.code)
    assert outcomes[0] == "ok"
    assert set(outcomes[1:]) == {"tool_no_progress"}
    assert CALLS["fetch"] == 2

    CALLS["fetch"] = 0
    hitl = guard(agent(saver, HumanInTheLoopMiddleware(interrupt_on={"fetch": True}), give_up=False))
    hitl.invoke(user("url=https://a.example"), cfg("hitl"))
    codes = []
    for _ in range(5):
        try:
            hitl.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("hitl"))
            codes.append("paused")
        except NoProgressError as exc:
            codes.append(exc.violation.code)
    assert codes == ["paused"] + ["tool_no_progress"] * 4
    assert CALLS["fetch"] == 2
    status = liveguard.live.threads.thread_status(hitl, cfg("hitl"))["guard"]
    assert status["stop"]["detail"]["nonretryable"] is True


HITL_SCRIPT = textwrap.dedent("""
    import json, sqlite3, sys
    sys.path[:0] = [{tests!r}]
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from liveguard import NoProgressError
    from liveguard.integrations.langchain import LivenessMiddleware
    import test_live_threads as t
    saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
    app = t.agent(saver, LivenessMiddleware(), HumanInTheLoopMiddleware(interrupt_on={{"fetch": True}}),
                  give_up=False)
    inputs = t.user("load it") if sys.argv[2] == "start" else Command(
        resume={{"decisions": [{{"type": "approve"}}]}})
    try:
        out = app.invoke(inputs, t.cfg("restart"))
        status = "interrupted" if out.get("__interrupt__") else "done"
    except NoProgressError as exc:
        status = exc.violation.code
    print(json.dumps({{"status": status, "fetch": t.CALLS["fetch"]}}))
""")


def test_human_in_the_loop_one_process_per_resume(tmp_path: Path) -> None:
    """Each approval in a new process (SqliteSaver on a file): the loop is still one loop."""
    db = tmp_path / "hitl.sqlite"
    script = tmp_path / "resume.py"
    script.write_text(HITL_SCRIPT.format(tests=str(HERE)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}
    runs = []
    for i in range(6):
        out = subprocess.run([sys.executable, str(script), str(db), "start" if i == 0 else "resume"],
                             capture_output=True, text=True, env=env, check=True, cwd=ROOT)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["status"] for r in runs] == [
        "interrupted", "interrupted", "tool_no_progress", "tool_no_progress",
        "tool_no_progress", "tool_no_progress",
    ]
    assert sum(r["fetch"] for r in runs) == 2  # each process counts its own executions


# ------------------------------------------------------------------------- exit behaviours


@pytest.mark.parametrize("saver_kind", ["memory", "none"])
def test_continue_debounces_the_repeated_call_and_a_ceiling_ends_the_run(saver_kind: str) -> None:
    """The same with no checkpointer (the middleware then writes its value only when a later
    hook of the invocation reads it: here the debounce reads the ledger)."""
    model = RuleModel(give_up=False)
    app = agent(InMemorySaver() if saver_kind == "memory" else None,
                LivenessMiddleware(exit_behavior="continue", ceiling=3), model=model)
    result = app.invoke(user("load it"), cfg("c"))
    assert CALLS["fetch"] == 2  # the debounced calls never reached the tool
    debounced = [m for m in result["messages"]
                 if isinstance(m, ToolMessage) and m.additional_kwargs.get("liveguard")]
    assert len(debounced) == 3
    from liveguard.live._ledger import args_digest  # here: subprocesses import this module

    digest = args_digest({"url": "https://example.com"})
    assert all(f"fetch, args#{digest}" in m.text and "already tried 2 times" in m.text
               and "retryable: false" in m.text for m in debounced)
    last = result["messages"][-1]
    assert last.content.startswith("Stopped by liveguard: debounce_ceiling")
    assert "[blocked]" in model.seen[-1]["system"]  # the model saw the block in its ledger


def test_end_returns_the_stop_message_and_stays_stopped() -> None:
    app = agent(InMemorySaver(), LivenessMiddleware(exit_behavior="end"), give_up=False)
    result = app.invoke(user("load it"), cfg("e"))
    assert result["messages"][-1].content.startswith(
        "Stopped by liveguard: tool_no_progress at step 3 (node 'tools', count 2): ")
    assert "liveguard.clear(graph, config)" in result["messages"][-1].content  # how to get out
    again = app.invoke(user("and again"), cfg("e"))
    assert again["messages"][-1].content == result["messages"][-1].content
    assert CALLS["fetch"] == 2


def test_warn_logs_and_lets_the_thread_run(caplog: pytest.LogCaptureFixture) -> None:
    app = agent(InMemorySaver(), LivenessMiddleware(exit_behavior="warn"), give_up=False,
                model=RuleModel(give_up=False))
    with pytest.raises(Exception, match=r"[Rr]ecursion"):
        app.invoke(user("load it"), {**cfg("w"), "recursion_limit": 12})
    assert CALLS["fetch"] >= 4
    assert "tool_no_progress" in caplog.text
    assert BULKY not in caplog.text


@pytest.mark.parametrize("decision", ["approve", "reject", "edit"])
def test_interrupt_pauses_for_a_person(decision: str) -> None:
    model = RuleModel(give_up=False)
    app = agent(InMemorySaver(), LivenessMiddleware(exit_behavior="interrupt"), model=model)
    paused = app.invoke(user("load it"), cfg("i"))
    (found,) = paused["__interrupt__"]
    value = found.value
    assert (value["codes"], value["count"], value["step"]) == (["tool_no_progress"], 2, 3)
    assert CALLS["fetch"] == 2
    if decision == "approve":
        again = app.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("i"))
        assert CALLS["fetch"] == 4  # the windows were cleared: two more tries, then a new pause
        assert again["__interrupt__"]
    elif decision == "reject":
        done = app.invoke(Command(resume={"decisions": [{"type": "reject"}]}), cfg("i"))
        assert done["messages"][-1].content.startswith("Stopped by liveguard: tool_no_progress")
        assert CALLS["fetch"] == 2
    else:
        model.give_up = True
        edit = {"type": "edit", "edited_action": {"name": "continue_run",
                                                  "args": {"message": "url=https://example.org"}}}
        done = app.invoke(Command(resume={"decisions": [edit]}), cfg("i"))
        assert "url=https://example.org" in model.seen[-2]["contents"][-1]  # the person's turn
        assert done["messages"][-1].content.startswith("done after")
        assert CALLS["fetch"] == 3


# ---------------------------------------------------------------------------------- the ledger


class Summarizer(BaseChatModel):
    """Summarises any conversation into one short line."""

    @property
    def _llm_type(self) -> str:
        return "liveguard-summarizer"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Earlier: some work."))])


def test_the_ledger_survives_summarization() -> None:
    """After the bulky failure is summarised away, the model still sees the failure."""
    model = RuleModel(give_up=True)
    summarize = SummarizationMiddleware(model=Summarizer(), trigger=("messages", 5),
                                        keep=("messages", 2))
    app = create_agent(model, [fetch, lookup], checkpointer=InMemorySaver(),
                       middleware=[LivenessMiddleware(), summarize])
    for text in ("load it", "key=a", "key=b"):
        app.invoke(user(text), cfg("s"))
    last = model.seen[-1]
    assert not any(BULKY in c for c in last["contents"])  # summarised away
    from liveguard.live._ledger import args_digest  # here: subprocesses import this module

    digest = args_digest({"url": "https://example.com"})
    assert f"fetch args#{digest}: failed (retryable: false) x" in last["system"]

    plain = RuleModel(give_up=True)  # without the middleware nothing keeps the fact
    app = create_agent(plain, [fetch, lookup], checkpointer=InMemorySaver(), middleware=[summarize])
    for text in ("load it", "key=a", "key=b"):
        app.invoke(user(text), cfg("s"))
    assert not any(BULKY in c or "timeout" in c for c in plain.seen[-1]["contents"])
    assert "retryable" not in plain.seen[-1]["system"]


# ------------------------------------------------------------------------- run and thread limits


def test_run_and_thread_limits() -> None:
    policy = Policy.tool_agent(run_steps=3, thread_steps=8)
    model = RuleModel(give_up=True)
    app = create_agent(model, [lookup_turn], checkpointer=InMemorySaver(),
                       middleware=[LivenessMiddleware(policy=policy)])
    outcomes = []
    for i in range(4):
        try:
            app.invoke(user(f"url=https://example.com/{i}"), cfg("lim"))
            outcomes.append("ok")
        except NoProgressError as exc:
            outcomes.append(f"{exc.violation.code}:{exc.violation.detail['scope']}")
    # each turn is 3 steps (request, tool, answer): the run limit never fires; the 9th
    # step of the thread (turn 3) passes the thread limit, and the thread stays stopped
    assert outcomes == ["ok", "ok", "step_limit:thread", "step_limit:thread"]
    tight = create_agent(RuleModel(give_up=True), [lookup_turn], checkpointer=InMemorySaver(),
                         middleware=[LivenessMiddleware(policy=Policy.tool_agent(run_steps=2))])
    with pytest.raises(NoProgressError, match="step_limit"):
        tight.invoke(user("one"), cfg("run"))


@tool("fetch")
def lookup_turn(url: str) -> str:
    """A fetch that works (named fetch, so the rule model answers after it)."""
    return f"page {url} ok"


# ------------------------------------------------------------------------------ healthy threads


def test_healthy_threads_stay_silent(caplog: pytest.LogCaptureFixture) -> None:
    """40 distinct calls on one thread, one per user turn: no stop, no warning."""
    app = agent(InMemorySaver(), LivenessMiddleware(), tools=[lookup_turn])
    for i in range(40):
        result = app.invoke(user(f"url=https://example.com/{i}"), cfg("healthy"))
        assert result["messages"][-1].content.startswith("done after")
    assert "liveguard" not in caplog.text


# ----------------------------------------------------------------------------------------- CLI


CLI_MODULE = textwrap.dedent("""
    import sys
    sys.path[:0] = [{tests!r}]
    from liveguard.integrations.langchain import LivenessMiddleware
    import test_live_threads as t
    graph = t.agent(None, LivenessMiddleware(), give_up=False)
""")


def test_cli_shows_and_clears_a_stopped_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "cli.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    app = agent(SqliteSaver(conn), LivenessMiddleware(), give_up=False)
    with pytest.raises(NoProgressError):
        app.invoke(user("load it"), cfg("cli"))
    (tmp_path / "cli_agent.py").write_text(CLI_MODULE.format(tests=str(HERE)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli_main(["threads", "show", "cli_agent:graph", "--thread", "cli", "--sqlite", str(db)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["agent"]["stop"]["code"] == "tool_no_progress"
    assert cli_main(["threads", "clear", "cli_agent:graph", "--thread", "cli", "--sqlite", str(db)]) == 0
    assert capsys.readouterr().out == "cleared tool_no_progress at step 3\n"
    assert app.get_state(cfg("cli")).values[STATE_KEY]["stop"] is None
    assert cli_main(["threads", "clear", "cli_agent:graph", "--thread", "cli"]) == 2  # no saver
    assert cli_main(["threads", "clear", "nope", "--thread", "cli"]) == 2
    conn.close()


def test_a_damaged_saved_state_starts_the_windows_afresh(caplog: pytest.LogCaptureFixture) -> None:
    """A snapshot of another version never kills the agent: logged, then the windows restart."""
    app = agent(InMemorySaver(), LivenessMiddleware(), give_up=False)
    with pytest.raises(NoProgressError):
        app.invoke(user("load it"), cfg("bad"))
    liveguard.clear(app, cfg("bad"))
    saved = app.get_state(cfg("bad")).values[STATE_KEY]
    assert "k" not in saved  # clear() leaves no token: the next call restores from the state
    app.update_state(cfg("bad"), {STATE_KEY: {**saved, "m": {"v": 99}}}, as_node="model")
    CALLS["fetch"] = 0
    with pytest.raises(NoProgressError):  # a fresh Monitor: two more tries, then the stop
        app.invoke(user("url=https://example.net"), cfg("bad"))
    assert CALLS["fetch"] == 2
    assert "code=guard_error type=SnapshotError" in caplog.text


POLLS: dict[str, int] = {}


@tool("fetch")
def poll_job(url: str) -> str:
    """Poll a job: running, running, then done (named fetch, so the rule model polls again)."""
    POLLS[url] = POLLS.get(url, 0) + 1
    if POLLS[url] < 3:
        return json.dumps({"status": "running", "error": "not yet"})
    return json.dumps({"status": "done"})


def test_a_poll_that_resolves_stays_silent(caplog: pytest.LogCaptureFixture) -> None:
    """running, running, done on three jobs of one thread: no stop, no warning."""
    POLLS.clear()

    class Poller(RuleModel):
        def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                      run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
            last = messages[-1]
            if isinstance(last, ToolMessage) and "done" in last.text:
                return ChatResult(generations=[ChatGeneration(message=AIMessage(
                    content=f"job finished after {len(messages)} messages"))])
            self.give_up = False
            return super()._generate(messages, stop, run_manager, **kwargs)

    app = agent(InMemorySaver(), LivenessMiddleware(), model=Poller(), tools=[poll_job])
    for job in ("a", "b", "c"):
        result = app.invoke(user(f"url=job-{job}"), cfg("poll"))
        assert result["messages"][-1].content.startswith("job finished")
    assert POLLS == {"job-a": 3, "job-b": 3, "job-c": 3}
    assert "liveguard" not in caplog.text
