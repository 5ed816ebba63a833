"""Issue 17, the live side: healthy shapes the live guards must leave alone, and their twins.

Every case of issue 17's "Why" that concerns the live guards, on a real LangGraph graph
(``StateGraph``, ``Send``, the Functional API, ``create_agent``, ``create_react_agent``)
with real checkpointers (InMemorySaver, SqliteSaver on a file, one process killed with
SIGKILL). Each healthy case failed on the old guard for the reason its docstring names;
each has a looping twin that is still stopped, at the step named.
"""

from __future__ import annotations

import operator
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from liveguard import NoProgressError, Policy
from liveguard.integrations.langchain import LivenessMiddleware
from liveguard.integrations.langgraph import guard

ROOT = Path(__file__).resolve().parent.parent


def cfg(thread: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **extra}}


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "core.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


# ------------------------------------------------------------------------------ Send fan-out
class Docs(TypedDict, total=False):
    docs: list[str]
    labels: Annotated[list[str], operator.add]


def fan_out_graph(label: Any) -> Any:
    """start -> one ``Send("classify", {"doc": d})`` per document -> end."""
    def start(state: Docs) -> dict[str, Any]:
        return {}

    def classify(item: dict[str, str]) -> dict[str, Any]:
        return {"labels": [label(item["doc"])]}

    builder = StateGraph(Docs)
    builder.add_node("start", start)
    builder.add_node("classify", classify)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", lambda s: [Send("classify", {"doc": d}) for d in s["docs"]])
    builder.add_edge("classify", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_a_send_fan_out_over_four_documents_is_not_a_revisit_cycle() -> None:
    """Old guard: node_revisit_cycle at the 4th ``classify`` (a node name counted as a loop)."""
    app = guard(fan_out_graph(lambda d: f"label of {d}"))
    out = app.invoke({"docs": ["a", "b", "c", "d"]}, cfg("fan"))
    assert sorted(out["labels"]) == ["label of a", "label of b", "label of c", "label of d"]


def test_two_sends_whose_different_inputs_give_the_same_label_are_not_a_stall() -> None:
    """Old guard: no_progress_stall (two identical outputs back to back, inputs unseen)."""
    app = guard(fan_out_graph(lambda d: "invoice"))
    assert app.invoke({"docs": ["bill-1", "bill-2"]}, cfg("same-label"))["labels"] == ["invoice"] * 2


def test_the_fan_out_twin_the_same_document_sent_again_is_stopped() -> None:
    """The same input giving the same output back to back is a stall: at the 2nd Send (step 2)."""
    app = guard(fan_out_graph(lambda d: "invoice"))
    with pytest.raises(NoProgressError) as stopped:
        app.invoke({"docs": ["bill-1", "bill-1", "bill-1", "bill-1"]}, cfg("same-doc"))
    assert (stopped.value.violation.code, stopped.value.violation.step) == ("no_progress_stall", 2)


# ------------------------------------------------------------------------ the Functional API
def functional(items: list[Any], executed: list[Any], label: str = "done") -> Any:
    @task
    def process(item: Any) -> str:
        executed.append(item)
        return label

    @entrypoint(checkpointer=InMemorySaver())
    def run(todo: list[Any]) -> list[str]:
        return [process(item).result() for item in todo]

    return run


def test_a_task_called_for_four_items_is_not_a_revisit_cycle() -> None:
    """Old guard: node_revisit_cycle at the 4th ``process`` call."""
    executed: list[Any] = []
    app = guard(functional([], executed))
    assert app.invoke(["a", "b", "c", "d"], cfg("items")) == ["done"] * 4
    assert executed == ["a", "b", "c", "d"]


def test_a_sync_entrypoint_loop_stops_at_the_violating_task() -> None:
    """Old guard: detected at the 2nd call, raised when the entrypoint returned (300 calls)."""
    executed: list[Any] = []

    @task
    def probe(item: Any) -> str:
        executed.append(item)
        return "still pending"

    @entrypoint(checkpointer=InMemorySaver())
    def spin(n: int) -> str:
        for _ in range(n):
            probe("job-7").result()
        return "gave up"

    with pytest.raises(NoProgressError) as stopped:
        guard(spin).invoke(300, cfg("spin"))
    assert stopped.value.violation.code == "no_progress_stall"
    assert len(executed) == 2  # stopped as the 2nd identical call ended, not 298 calls later


def test_an_async_entrypoint_loop_stops_at_the_same_task() -> None:
    import asyncio

    executed: list[Any] = []

    @task
    async def probe(item: Any) -> str:
        executed.append(item)
        return "still pending"

    @entrypoint(checkpointer=InMemorySaver())
    async def spin(n: int) -> str:
        for _ in range(n):
            await probe("job-7")
        return "gave up"

    with pytest.raises(NoProgressError):
        asyncio.run(guard(spin).ainvoke(300, cfg("aspin")))
    assert len(executed) == 2


# ------------------------------------------------------------------------------ chat graphs
class Chat(TypedDict, total=False):
    question: str
    docs: list[str]
    answer: str
    rounds: int


def chat_graph(answer: Any, *, saver: Any = None, again: bool = False) -> Any:
    """retrieve -> generate; with ``again`` generate sends the turn back to retrieve."""
    def retrieve(state: Chat) -> dict[str, Any]:
        return {"docs": [f"doc on {state['question']}"]}

    def generate(state: Chat) -> dict[str, Any]:
        if not again:
            return {"answer": answer(state["question"])}
        return {"answer": answer(state["question"]), "rounds": state.get("rounds", 0) + 1}

    builder = StateGraph(Chat)
    builder.add_node("retrieve", retrieve)
    builder.add_node("generate", generate)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "generate")
    if again:
        builder.add_conditional_edges(
            "generate", lambda s: "retrieve" if s.get("rounds", 0) < 50 else END)
    else:
        builder.add_edge("generate", END)
    return builder.compile(checkpointer=saver or InMemorySaver())


def test_a_chat_graph_answers_a_new_question_every_turn_and_is_never_stopped() -> None:
    """Old guard: node_revisit_cycle at turn 4, and the thread stayed stopped for good."""
    app = guard(chat_graph(lambda q: f"answer to {q}"))
    for turn in range(8):
        out = app.invoke({"question": f"question {turn}"}, cfg("chat"))
        assert out["answer"] == f"answer to question {turn}"


def test_the_chat_twin_a_graph_that_retrieves_again_and_again_is_stopped() -> None:
    """retrieve, generate, retrieve, ... with nothing new but the loop counter ``rounds``:
    content_cycle at step 3 (main: repeated_content at step 4). The counter is not progress."""
    app = guard(chat_graph(lambda q: "let me look again", again=True))
    with pytest.raises(NoProgressError) as stopped:
        app.invoke({"question": "q"}, cfg("chat-loop"))
    assert (stopped.value.violation.code, stopped.value.violation.step) == ("content_cycle", 3)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_caller_that_stops_reading_still_closes_and_saves(mode: str) -> None:
    """The caller takes two updates and closes the stream: the guard's call still closes the
    graph's stream and saves what it saw (no "generator ignored GeneratorExit", nothing lost),
    so resuming the thread is stopped where one unbroken call is: content_cycle at step 3.
    ``stream`` and ``astream`` drive one call body; both must behave alike."""
    import asyncio

    app = guard(chat_graph(lambda q: "let me look again", again=True))
    config = cfg(f"leave-{mode}")
    if mode == "sync":
        parts = app.stream({"question": "q"}, config, stream_mode="updates")
        seen = [next(parts), next(parts)]
        parts.close()
    else:
        async def two() -> list[Any]:
            parts = app.astream({"question": "q"}, config, stream_mode="updates")
            taken = [await anext(parts), await anext(parts)]
            await parts.aclose()
            return taken

        seen = asyncio.run(two())
    assert [next(iter(part)) for part in seen] == ["retrieve", "generate"]
    with pytest.raises(NoProgressError) as stopped:
        app.invoke(None, config)
    assert (stopped.value.violation.code, stopped.value.violation.step) == ("content_cycle", 3)


def test_the_same_short_answer_to_three_different_requests_is_progress_guard() -> None:
    """Old guard: repeated_content at the 3rd "Done."."""
    app = guard(chat_graph(lambda q: "Done."))
    for turn in range(4):
        assert app.invoke({"question": f"task {turn}"}, cfg("done"))["answer"] == "Done."


def test_the_same_request_answered_the_same_way_is_still_stopped_guard() -> None:
    app = guard(chat_graph(lambda q: "Done."))
    for _ in range(2):
        app.invoke({"question": "task 0"}, cfg("done-again"))
    with pytest.raises(NoProgressError) as stopped:
        app.invoke({"question": "task 0"}, cfg("done-again"))
    assert stopped.value.violation.code in {"repeated_content", "content_cycle"}


# ------------------------------------------------------------------------ scripted chat models
class Scripted(BaseChatModel):
    """A chat model that answers from the conversation (no randomness, no network)."""

    mode: str = "poll"

    @property
    def _llm_type(self) -> str:
        return "liveguard-scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        last, n = messages[-1], len(messages)
        if self.mode == "summary":
            reply = AIMessage(content="summary of the earlier turns")
        elif self.mode == "done":
            reply = AIMessage(content="Done.")
        elif self.mode == "lookup":  # a new key per turn, five turns, then an answer
            done = sum(1 for m in messages if isinstance(m, ToolMessage))
            reply = (AIMessage(content=f"found {done} values") if done >= 5 else AIMessage(
                content="", tool_calls=[{"name": "lookup", "args": {"key": f"k{done}"},
                                         "id": f"call_{n}", "type": "tool_call"}]))
        elif isinstance(last, ToolMessage) and last.text == "done":
            reply = AIMessage(content="the job finished")
        else:  # poll the job again
            reply = AIMessage(content="", tool_calls=[
                {"name": "status", "args": {"job": "j1"}, "id": f"call_{n}", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def lookup(key: str) -> str:
    """Look a key up (a new answer per key)."""
    return f"value of {key}"


# ------------------------------------------------------------------ create_react_agent + hooks
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("hook", ["pre_model_hook", "post_model_hook"])
def test_create_react_agent_with_a_hook_is_a_tool_agent(hook: str) -> None:
    """Old guard: the workflow policy; node_revisit_cycle at the 4th model turn."""
    from langgraph.prebuilt import create_react_agent

    def noop(state: Any) -> dict[str, Any]:
        return {}

    graph = create_react_agent(Scripted(mode="lookup"), [lookup], checkpointer=InMemorySaver(),
                               **{hook: noop})
    app = guard(graph)
    assert app.policy.revisit_limit("agent") is None
    out = app.invoke({"messages": [HumanMessage("look up five keys")]}, cfg(hook))
    assert out["messages"][-1].content == "found 5 values"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_react_twin_an_identical_failing_call_is_stopped() -> None:
    from langgraph.prebuilt import create_react_agent

    @tool
    def status(job: str) -> str:
        """The job's status (it never changes)."""
        return "running"

    graph = create_react_agent(Scripted(mode="poll"), [status], checkpointer=InMemorySaver(),
                               pre_model_hook=lambda s: {})
    with pytest.raises(NoProgressError) as stopped:
        guard(graph).invoke({"messages": [HumanMessage("wait for j1")]}, cfg("react-loop"))
    assert stopped.value.violation.code == "tool_no_progress"
    assert stopped.value.violation.count == 3


# --------------------------------------------------------------- the same short answer, middleware
def test_the_same_short_answer_to_three_different_requests_is_progress_middleware() -> None:
    """Old middleware: repeated_content at the 3rd "Done."."""
    app = create_agent(Scripted(mode="done"), [], checkpointer=InMemorySaver(),
                       middleware=[LivenessMiddleware()])
    for turn in range(4):
        out = app.invoke({"messages": [HumanMessage(f"archive folder {turn}")]}, cfg("mw-done"))
        assert out["messages"][-1].content == "Done."


def test_the_middleware_sees_each_new_request_once() -> None:
    """The user's turn is fed as one ``__input__`` step per new request (not per model call)."""
    app = create_agent(Scripted(mode="lookup"), [lookup], checkpointer=InMemorySaver(),
                       middleware=[LivenessMiddleware()])
    app.invoke({"messages": [HumanMessage("first")]}, cfg("mw-turns"))
    first = app.get_state(cfg("mw-turns")).values["liveguard"]["m"]["n"]
    app.invoke({"messages": [HumanMessage("second")]}, cfg("mw-turns"))
    second = app.get_state(cfg("mw-turns")).values["liveguard"]["m"]["n"]
    assert (first, second - first) == (11, 2)  # five tool turns and an answer; the request, the answer


# ------------------------------------------------------------------------ SummarizationMiddleware
def polling_agent(results: list[str], *, summarize: bool, polls: list[str] | None = None) -> Any:
    answers = iter(results)

    @tool
    def status(job: str) -> str:
        """The job's status."""
        answer = next(answers)
        if polls is not None:
            polls.append(answer)
        return answer

    middleware = [SummarizationMiddleware(Scripted(mode="summary"), trigger=("messages", 5),
                                          keep=("messages", 2))] if summarize else []
    return create_agent(Scripted(mode="poll"), [status], middleware=middleware,
                        checkpointer=InMemorySaver())


def test_a_resolving_poll_behind_summarization_is_not_stopped() -> None:
    """Old guard: the kept ToolMessage counted again; tool_no_progress after 2 polls."""
    app = guard(polling_agent(["running", "running", "done"], summarize=True))
    out = app.invoke({"messages": [HumanMessage("wait for j1")]}, cfg("summ"))
    assert out["messages"][-1].content == "the job finished"


def test_the_summarization_twin_a_poll_that_never_resolves_is_stopped_at_the_same_poll() -> None:
    """Stopped at the 3rd identical poll, as without SummarizationMiddleware (never at the 2nd)."""
    for summarize in (False, True):
        polls: list[str] = []
        app = guard(polling_agent(["running"] * 10, summarize=summarize, polls=polls))
        with pytest.raises(NoProgressError) as stopped:
            app.invoke({"messages": [HumanMessage("wait for j1")]}, cfg(f"summ-loop-{summarize}"))
        violation = stopped.value.violation
        assert (violation.code, violation.count, violation.node) == ("tool_no_progress", 3, "tools")
        assert polls == ["running"] * 3


# ---------------------------------------------------------------------------- exit behaviours
def test_exit_behavior_continue_ends_the_run_at_its_ceiling() -> None:
    """Old guard: ``continue`` behaved as ``warn``; the loop ran to the graph's own end."""
    app = guard(chat_graph(lambda q: "let me look again", again=True), exit_behavior="continue",
                ceiling=3)
    chunks = list(app.stream({"question": "q"}, cfg("continue"), stream_mode="updates"))
    assert chunks[-1]["__liveguard__"]["code"] in {"content_cycle", "no_progress_stall",
                                                   "repeated_content"}
    generated = sum(1 for c in chunks if "generate" in c)
    assert generated < 10  # ended at the 3rd violation; the graph itself would go 50 rounds


# ------------------------------------------------------------------- time travel and forks
class Topic(TypedDict, total=False):
    topic: str
    notes: str
    draft: str


def research_graph(saver: Any = None) -> Any:
    builder = StateGraph(Topic)
    builder.add_node("plan", lambda s: {"notes": f"plan for {s['topic']}"})
    builder.add_node("search", lambda s: {"notes": f"results on {s['topic']}"})
    builder.add_node("write", lambda s: {"draft": f"draft on {s['topic']}"})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "search")
    builder.add_edge("search", "write")
    builder.add_edge("write", END)
    return builder.compile(checkpointer=saver or InMemorySaver())


def checkpoint_before(app: Any, config: dict[str, Any], node: str) -> dict[str, Any]:
    """The config of the (oldest) checkpoint whose next node is ``node``."""
    found = [s for s in app.get_state_history(config) if s.next == (node,)]
    return found[-1].config  # type: ignore[no-any-return]


def test_replaying_a_healthy_run_from_an_earlier_checkpoint_is_not_a_cycle(
        sqlite_saver: SqliteSaver) -> None:
    """Old guard: the thread's one record held the abandoned future; content_cycle."""
    app = guard(research_graph(sqlite_saver))
    app.invoke({"topic": "tides"}, cfg("replay"))
    for _ in range(3):
        app.invoke(None, checkpoint_before(app, cfg("replay"), "search"))
    assert app.get_state(cfg("replay")).values["draft"] == "draft on tides"


def test_three_update_state_forks_with_new_topics_are_not_revisits() -> None:
    """Old guard (revisit ceiling 3): the forks' visits added up; node_revisit_cycle."""
    app = guard(research_graph(), policy=Policy.workflow())
    app.invoke({"topic": "tides"}, cfg("forks"))
    base = checkpoint_before(app, cfg("forks"), "search")
    for topic in ("eels", "kelp", "krill"):
        fork = app.update_state(base, {"topic": topic})
        app.invoke(None, fork)
        assert app.get_state(fork).values["topic"] == topic


def poll_graph(saver: Any) -> Any:
    builder = StateGraph(Topic)
    builder.add_node("poll", lambda s: {"notes": f"running {s['topic']}"})
    builder.add_edge(START, "poll")
    builder.add_edge("poll", END)
    return builder.compile(checkpointer=saver)


def test_a_fork_whose_own_history_is_a_stall_is_stopped() -> None:
    """Old guard: the thread's record read [a, b, a] (no stall); the fork's own is [a, a]."""
    app = guard(poll_graph(InMemorySaver()))
    app.invoke({"topic": "a"}, cfg("fork-stall"))
    after_a = app.get_state(cfg("fork-stall")).config
    app.invoke({"topic": "b"}, cfg("fork-stall"))
    fork = app.update_state(after_a, {"topic": "a"}, as_node="__start__")
    with pytest.raises(NoProgressError) as stopped:
        app.invoke(None, fork)
    assert stopped.value.violation.code == "no_progress_stall"


# ---------------------------------------------------------------------- overlapping calls
def test_a_stop_is_never_erased_by_an_overlapping_call() -> None:
    """Old guard: the slower call wrote its record (no stop) last; the next call ran."""
    import threading

    inside, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def poll(state: Topic) -> dict[str, Any]:
        ran.append(state["topic"])
        if state["topic"] == "slow":
            inside.set()
            release.wait(30)
        return {"notes": "same"}

    builder = StateGraph(Topic)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_conditional_edges("poll", lambda s: "poll" if s["topic"] == "fast" else END)
    app = guard(builder.compile(checkpointer=InMemorySaver()))
    errors: list[BaseException] = []

    def slow_call() -> None:
        try:
            app.invoke({"topic": "slow"}, cfg("overlap"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=slow_call)
    worker.start()
    assert inside.wait(30)
    with pytest.raises(NoProgressError) as stopped:  # a looping call on the same thread
        app.invoke({"topic": "fast"}, cfg("overlap"))
    release.set()
    worker.join(30)
    assert not errors
    ran.clear()
    with pytest.raises(NoProgressError) as again:  # the stop outlived the slower call's end
        app.invoke({"topic": "once"}, cfg("overlap"))
    assert again.value.violation == stopped.value.violation
    assert ran == []  # answered from the saved stop, without running a node


# ----------------------------------------------------------------------------- kill -9
CHILD = textwrap.dedent("""
    import os, signal, sqlite3, sys
    from typing import TypedDict
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from liveguard import NoProgressError
    from liveguard.integrations.langgraph import guard

    class S(TypedDict, total=False):
        status: str

    runs = 0

    def poll(state):
        global runs
        runs += 1
        if runs == 2:  # the 2nd poll of this process: killed mid-call, mid-loop
            os.kill(os.getpid(), signal.SIGKILL)
        return {"status": "running"}

    builder = StateGraph(S)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_edge("poll", "poll")
    saver = SqliteSaver(sqlite3.connect(sys.argv[1], check_same_thread=False))
    app = guard(builder.compile(checkpointer=saver))
    config = {"configurable": {"thread_id": "k"}}
    first = app.get_state(config).values == {}
    try:
        app.invoke({"status": "start"} if first else None, config, durability="sync")
    except NoProgressError as exc:
        print(exc.violation.code, exc.violation.step)
        sys.exit(3)
""")


def test_a_process_killed_mid_call_keeps_the_count(tmp_path: Path) -> None:
    """Old guard: the record was written when a call ended; every process started afresh."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    import liveguard

    here = str(Path(liveguard.__file__).resolve().parent.parent)  # the liveguard under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH")) if p)}
    codes = []
    for _ in range(3):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / "k.sqlite")],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        codes.append(done.returncode)
        if done.returncode == 3:
            assert done.stdout.split()[0] == "no_progress_stall"
            break
    assert codes == [-9, 3]  # killed once, then stopped at its first poll


def test_the_async_guard_follows_the_lineage_on_an_async_saver(tmp_path: Path) -> None:
    """astream on AsyncSqliteSaver: a fork's own stall is stopped, a replay is not."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def scenario() -> tuple[str, str]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            app = guard(poll_graph(saver))
            await app.ainvoke({"topic": "a"}, cfg("async-replay"))
            before = [s.config async for s in app.aget_state_history(cfg("async-replay"))][1]
            replayed = await app.ainvoke(None, before)  # its own history: [a], not [a, a]
            await app.ainvoke({"topic": "a"}, cfg("async-fork"))
            after_a = (await app.aget_state(cfg("async-fork"))).config
            await app.ainvoke({"topic": "b"}, cfg("async-fork"))
            fork = await app.aupdate_state(after_a, {"topic": "a"}, as_node="__start__")
            with pytest.raises(NoProgressError) as stopped:  # its own history: [a, a]
                await app.ainvoke(None, fork)
            return replayed["notes"], stopped.value.violation.code

    assert asyncio.run(scenario()) == ("running a", "no_progress_stall")


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_loop_across_calls_is_one_loop_whatever_the_durability(durability: str) -> None:
    """The same status polled once per call: stopped at the 2nd call in every durability mode."""
    app = guard(poll_graph(InMemorySaver()))
    app.invoke({"topic": "a"}, cfg(durability), durability=durability)
    fork = app.update_state(app.get_state(cfg(durability)).config, {"topic": "a"},
                            as_node="__start__")
    with pytest.raises(NoProgressError) as stopped:
        app.invoke(None, fork, durability=durability)
    assert (stopped.value.violation.code, stopped.value.violation.step) == ("no_progress_stall", 1)
