"""Live guards on real graphs: ``guard(graph)`` and ``LivenessMiddleware`` for ``create_agent``.

Nothing under test is mocked: the target graphs in ``graphs/`` run for real (the sql_agent
with its scripted chat model and real SQLite tool), checkpoints go to a real SqliteSaver,
and node, model and tool executions are counted by a LangChain callback handler, i.e. by
what actually ran, not by what the guard says.
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict
from uuid import UUID

import pytest
from graphs._scripted import ScriptedChatModel
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import GraphOutput, interrupt

from graphs import campaign, coder_reviewer, sql_agent
from liveguard import NoProgressError, Policy
from liveguard.core.allowset import load_allowset
from liveguard.integrations.langchain import LivenessMiddleware
from liveguard.integrations.langgraph import GuardedGraph, guard
from liveguard.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
SECRET = "ACME-SECRET-7f3a"
STOP_TEXT = ("Stopped by liveguard: tool_no_progress at step 3 (node 'tools', count 2): tool 'run_sql' "
             "was called with the same arguments and got the same non-retryable failure 2 times, nothing "
             "new in between. Repeating: steps 1 and 3 (digest dda4a58d4eb9). The thread stays stopped "
             "until it is cleared: liveguard.clear(graph, config), or `liveguard threads clear MODULE:ATTR "
             "--thread THREAD_ID`, or POST /liveguard/threads/THREAD_ID/clear on the LangGraph server.")
"""The stop message (issue 30): the rule in words, the two steps that repeat by index and
digest (never their text), and the three ways to clear the thread."""


# ------------------------------------------------------------------------------------- helpers


class Executions(BaseCallbackHandler):
    """Counts what really ran: graph nodes, chat-model calls and tool calls."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.model_calls = 0
        self.tool_calls = 0

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, metadata: Any = None, **kwargs: Any
    ) -> None:
        name = kwargs.get("name")
        if name is not None and name == (metadata or {}).get("langgraph_node"):
            self.nodes.append(name)

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.model_calls += 1

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self.tool_calls += 1


def counted(executions: Executions, **config: Any) -> dict[str, Any]:
    return {"callbacks": [executions], **config}


def drain(chunks: Iterator[Any], into: list[Any]) -> None:
    """Consume a stream, keeping every chunk it yields before it raises."""
    for chunk in chunks:
        into.append(chunk)


async def adrain(chunks: AsyncIterator[Any], into: list[Any]) -> None:
    async for chunk in chunks:
        into.append(chunk)


@pytest.fixture
def saver() -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def build_agent(
    scenario: str, *middleware: Any, summaries: bool = True, script: Any = None, tools: Any = None
) -> Any:
    """``graphs.sql_agent.build_graph`` with extra middleware (after the summaries)."""
    return create_agent(
        ScriptedChatModel(script=script or sql_agent.script_for(scenario)),
        tools or [sql_agent.run_sql],
        system_prompt=sql_agent.SYSTEM_PROMPT,
        middleware=[*([sql_agent.StepSummaryMiddleware()] if summaries else []), *middleware],
        name=sql_agent.GRAPH_NAME,
    )


def without_ids(value: Any) -> Any:
    """Messages minus the ids LangChain generates per run; stream metadata minus run ids."""
    if isinstance(value, BaseMessage):
        return (type(value).__name__, value.content, getattr(value, "tool_calls", None),
                getattr(value, "tool_call_id", None), value.name)
    if isinstance(value, dict):
        if "langgraph_node" in value:  # "messages" mode metadata: keep what is deterministic
            return {k: value[k] for k in ("langgraph_node", "langgraph_step")}
        return {k: without_ids(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(without_ids(v) for v in value)
    return value


class Opaque:
    """A state value of a type no canonical form supports; its repr is secret."""

    def __repr__(self) -> str:
        return SECRET


class LoopState(TypedDict, total=False):
    summary: str
    blob: Any
    polls: Annotated[list[str], operator.add]


def polling_graph(polls: int, *, opaque_first: bool = False) -> Any:
    """``start -> poll x polls``: every poll writes the same update, with a secret in its text."""

    def start(state: LoopState) -> dict[str, Any]:
        return {"blob": Opaque()} if opaque_first else {"summary": "started"}

    def poll(state: LoopState) -> dict[str, Any]:
        return {"summary": f"inbox empty, token {SECRET}", "polls": ["poll"]}

    def route(state: LoopState) -> Literal["poll", "__end__"]:
        return "poll" if len(state.get("polls", [])) < polls else "__end__"

    builder = StateGraph(LoopState)
    builder.add_node("start", start)
    builder.add_node("poll", poll)
    builder.add_edge(START, "start")
    builder.add_edge("start", "poll")
    builder.add_conditional_edges("poll", route)
    return builder.compile(name="polling")


# ------------------------------------------------------------- guard(graph): stops, early


STOPS = [
    # module, scenario, code, step of the stop, node executions unguarded
    (campaign, "looping", "no_progress_stall", 6, 17),  # campaign: its approval step is scripted
    (campaign, "ping_pong", "content_cycle", 4, 16),
    (coder_reviewer, "ping_pong", "content_cycle", 3, 12),
    (coder_reviewer, "stalled", "no_progress_stall", 1, 3),
]


@pytest.mark.parametrize(("module", "scenario", "code", "step", "unguarded"), STOPS,
                         ids=[f"{m.GRAPH_NAME}-{s}" for m, s, *_ in STOPS])
def test_guard_stops_a_looping_graph_at_the_repeat(
    module: Any, scenario: str, code: str, step: int, unguarded: int
) -> None:
    free = Executions()
    build = getattr(module, "scripted_graph", module.build_graph)  # no person to ask in these runs
    build(scenario).invoke(module.initial_input(scenario), counted(free))
    assert len(free.nodes) == unguarded

    ran = Executions()
    chunks: list[Any] = []
    guarded = guard(build(scenario))
    stream = guarded.stream(module.initial_input(scenario), counted(ran), stream_mode="updates")
    with pytest.raises(NoProgressError) as stopped:
        drain(stream, chunks)
    violation = stopped.value.violation
    assert (violation.code, violation.step, violation.severity) == (code, step, "hard")
    # The violating step's chunk is the last one yielded; no node started after it.
    assert len(chunks) == step + 1
    assert ran.nodes == free.nodes[: step + 1]
    assert len(ran.nodes) < unguarded


def test_invoke_ainvoke_and_astream_stop_too() -> None:
    guarded = guard(campaign.scripted_graph("looping"))
    inputs = campaign.initial_input("looping")
    with pytest.raises(NoProgressError, match=r"no_progress_stall at step 6"):
        guarded.invoke(inputs)

    async def run() -> tuple[list[Any], Executions]:
        ran, chunks = Executions(), list[Any]()
        with pytest.raises(NoProgressError) as stopped:
            await adrain(guarded.astream(inputs, counted(ran), stream_mode="values"), chunks)
        assert stopped.value.violation.step == 6
        with pytest.raises(NoProgressError, match="no_progress_stall"):
            await guarded.ainvoke(inputs)
        return chunks, ran

    chunks, ran = asyncio.run(run())
    assert len(ran.nodes) == 7
    # values: the input, then one chunk per completed step before the violating one
    # (approve_send appends nothing to "steps")
    assert [len(c["steps"]) for c in chunks] == [0, 1, 2, 3, 3, 4, 5]


def test_stopped_thread_is_left_where_the_guard_stopped_it(saver: SqliteSaver) -> None:
    """With a real SqliteSaver: the thread keeps the 7 steps that ran and waits on the 8th."""
    inputs = campaign.initial_input("looping")
    graph = campaign.scripted_graph("looping", checkpointer=saver)
    graph.invoke(inputs, thread("free"))
    guarded = guard(graph)
    with pytest.raises(NoProgressError) as stopped:
        guarded.invoke(inputs, thread("guarded"))
    assert stopped.value.violation.step == 6

    state = guarded.get_state(thread("guarded"))
    assert state.values["steps"] == [
        "load_lead", "compose_touch", "gate_draft", "send_touch", "check_reply", "check_reply",
    ]
    assert state.next == ("check_reply",)  # the 8th step, which never ran
    assert len(list(guarded.get_state_history(thread("guarded")))) == 9  # input + 7 steps + start
    assert len(list(graph.get_state_history(thread("free")))) == 19
    assert graph.get_state(thread("free")).next == ()


# ------------------------------------------------------------ guard(graph): healthy runs


@pytest.mark.parametrize("module", [campaign, coder_reviewer], ids=lambda m: m.GRAPH_NAME)
def test_guarded_invoke_returns_the_unguarded_final_state(module: Any) -> None:
    graph = getattr(module, "scripted_graph", module.build_graph)("healthy")
    inputs = module.initial_input("healthy")
    guarded = guard(graph)
    expected = graph.invoke(inputs)
    assert guarded.invoke(inputs) == expected
    assert asyncio.run(guarded.ainvoke(inputs)) == expected
    assert guarded.invoke(inputs, version="v2") == graph.invoke(inputs, version="v2")
    assert isinstance(guarded.invoke(inputs, version="v2"), GraphOutput)
    assert guarded.invoke(inputs, stream_mode="updates") == graph.invoke(inputs, stream_mode="updates")


MODES: list[Any] = [None, "updates", "values", ["updates"], ["values"], ["updates", "values"],
                    ["values", "checkpoints"]]


@pytest.mark.parametrize("stream_mode", MODES, ids=repr)
@pytest.mark.parametrize("extra", [{}, {"subgraphs": True}, {"version": "v2"}], ids=repr)
def test_guarded_stream_yields_the_unguarded_chunks(stream_mode: Any, extra: dict[str, Any]) -> None:
    graph, inputs = campaign.scripted_graph("healthy"), campaign.initial_input("healthy")
    expected = list(graph.stream(inputs, stream_mode=stream_mode, **extra))
    assert list(guard(graph).stream(inputs, stream_mode=stream_mode, **extra)) == expected

    async def collect() -> list[Any]:
        return [c async for c in guard(graph).astream(inputs, stream_mode=stream_mode, **extra)]

    assert asyncio.run(collect()) == expected


@pytest.mark.parametrize("stream_mode", ["messages", ["updates", "messages"]], ids=repr)
def test_guarded_create_agent_stream_in_messages_mode(stream_mode: Any) -> None:
    graph, inputs = sql_agent.build_graph("healthy"), sql_agent.initial_input("healthy")
    expected = without_ids(list(graph.stream(inputs, stream_mode=stream_mode)))
    got = without_ids(list(guard(graph).stream(inputs, stream_mode=stream_mode)))
    assert got == expected
    tokens = [c for c in got if not isinstance(stream_mode, list) or c[0] == "messages"]
    assert len(tokens) == 5  # model, tool, model, tool, model: one message each
    assert without_ids(guard(graph).invoke(inputs)) == without_ids(graph.invoke(inputs))


def test_guard_on_a_create_agent_graph_picks_the_tool_agent_policy() -> None:
    """model/tools graphs get the tool-agent preset; the stream view stops the looping agent."""
    agent_guard = guard(sql_agent.build_graph("looping"))
    assert agent_guard.policy.revisit_limit("model") is None
    assert agent_guard.policy.revisit_limit("tools") is None
    # issue 17: an arbitrary graph gets no revisit ceiling unless one is set explicitly
    workflow_default = guard(campaign.graph).policy
    assert workflow_default.revisit_limit("draft") == workflow_default.window + 1
    assert workflow_default.model_copy(update={"max_revisits": 3}) == Settings.from_env().policy(Policy())
    explicit = Policy.workflow(stall=3)
    assert guard(campaign.graph, policy=explicit).policy is explicit
    ran = Executions()
    with pytest.raises(NoProgressError) as stopped:
        agent_guard.invoke(sql_agent.initial_input("looping"), counted(ran))
    assert (stopped.value.violation.code, stopped.value.violation.step) == ("tool_no_progress", 3)
    assert ran.tool_calls == 2


def test_allow_set_rules_and_the_severity_floor() -> None:
    allow_set = load_allowset(ROOT / "expected_paths" / "campaign.yaml")
    hop = guard(campaign.build_graph("illegal_hop"), allow_set=allow_set)
    with pytest.raises(NoProgressError) as stopped:
        hop.invoke(campaign.initial_input("illegal_hop"))
    assert stopped.value.violation.code == "illegal_transition"
    assert stopped.value.violation.detail["to"] == "send_touch"

    dead_end, inputs = campaign.build_graph("dead_end"), campaign.initial_input("dead_end")
    assert guard(dead_end, allow_set=allow_set).invoke(inputs) == dead_end.invoke(inputs)
    with pytest.raises(NoProgressError) as soft:  # checked after the last chunk
        guard(dead_end, allow_set=allow_set, severity="soft").invoke(inputs)
    assert (soft.value.violation.code, soft.value.violation.severity) == ("dead_end", "soft")


def test_interrupted_run_returns_what_langgraph_returns(saver: SqliteSaver) -> None:
    class State(TypedDict, total=False):
        draft: str
        approved: bool

    def write(state: State) -> dict[str, Any]:
        return {"draft": "v1"}

    def approve(state: State) -> dict[str, Any]:
        return {"approved": interrupt({"question": "send draft?"})}

    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("approve", approve)
    builder.add_edge(START, "write")
    builder.add_edge("write", "approve")
    graph = builder.compile(checkpointer=saver)
    expected = graph.invoke({}, thread("free"))
    got = guard(graph, severity="soft").invoke({}, thread("guarded"))
    assert {k: v for k, v in got.items() if k != "__interrupt__"} == {"draft": "v1"}
    assert [i.value for i in got["__interrupt__"]] == [i.value for i in expected["__interrupt__"]]


def test_passthrough_and_validation() -> None:
    graph = campaign.scripted_graph("looping")
    guarded = guard(graph)
    assert guarded.graph is graph
    assert guarded.name == "campaign"  # attribute passthrough
    assert guarded.get_graph().nodes.keys() == graph.get_graph().nodes.keys()
    configured = guarded.with_config(recursion_limit=50)
    assert isinstance(configured, GuardedGraph)
    with pytest.raises(NoProgressError):
        configured.invoke(campaign.initial_input("looping"))
    assert guard(guarded).graph is graph  # re-guarding wraps the graph, not the wrapper
    with pytest.raises(ValueError, match="exit_behavior"):
        guard(graph, exit_behavior="stop")  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match="on_violation"):
        assert guard(graph, on_violation="raise").exit_behavior == "error"
    with pytest.raises(ValueError, match="severity"):
        guard(graph, severity="medium")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="compiled LangGraph graph"):
        guard(object())


# ------------------------------------------------ guard(graph): warn mode, failures, privacy


def test_warn_mode_logs_codes_never_text_and_lets_the_run_finish(
    caplog: pytest.LogCaptureFixture,
) -> None:
    graph = polling_graph(6)
    with pytest.raises(NoProgressError, match="no_progress_stall at step 2"):
        guard(graph).invoke({})  # the same loop, guarded, stops at the 2nd identical poll
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="liveguard.guard"):
        final = guard(graph, exit_behavior="warn").invoke({})
    assert final == graph.invoke({})
    assert final["polls"] == ["poll"] * 6
    codes = [r.getMessage().split()[1] for r in caplog.records]
    assert "no_progress_stall" in codes
    assert all("run continues" in r.getMessage() for r in caplog.records)
    assert "step 2 (node=poll, count=2, digest=" in caplog.text
    assert SECRET not in caplog.text
    assert "inbox empty" not in caplog.text


def test_a_guard_failure_is_logged_and_the_run_completes(caplog: pytest.LogCaptureFixture) -> None:
    """An update that cannot be fingerprinted disables the guard for that run, not the graph."""
    graph = polling_graph(6, opaque_first=True)
    with caplog.at_level(logging.WARNING, logger="liveguard.guard"):
        final = guard(graph).invoke({})
        ran = Executions()
        chunks = list(guard(graph).stream({}, counted(ran), stream_mode="updates"))
    assert isinstance(final["blob"], Opaque)
    assert final["polls"] == ["poll"] * 6  # the identical polls were not stopped
    assert len(chunks) == len(ran.nodes) == 7
    failures = [r.getMessage() for r in caplog.records]
    assert len(failures) == 2  # once per run, then silent for the rest of it
    assert all("code=guard_error type=FingerprintError" in m for m in failures)
    assert SECRET not in caplog.text


def test_integrations_package_imports_no_framework() -> None:
    code = (
        "import sys, liveguard, liveguard.integrations, liveguard.integrations.langgraph\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain', 'langchain_core'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# ------------------------------------------------------------- LivenessMiddleware (create_agent)


def test_middleware_raises_at_the_second_identical_nonretryable_failure() -> None:
    free = Executions()
    build_agent("looping").invoke(sql_agent.initial_input("looping"), counted(free))
    assert (free.model_calls, free.tool_calls) == (7, 6)

    ran = Executions()
    agent = build_agent("looping", LivenessMiddleware())
    with pytest.raises(NoProgressError) as stopped:
        agent.invoke(sql_agent.initial_input("looping"), counted(ran))
    violation = stopped.value.violation
    assert (violation.code, violation.step, violation.node, violation.count) == (
        "tool_no_progress", 3, "tools", 2)
    assert violation.detail["nonretryable"] is True
    assert violation.detail["steps"] == [1, 3]
    assert (ran.model_calls, ran.tool_calls) == (2, 2)  # of 7 and 6 scripted


def test_middleware_stop_leaves_a_valid_thread(saver: SqliteSaver) -> None:
    """With a real SqliteSaver: the stopped thread ends on the answered 2nd call, no dangling call."""
    agent = create_agent(
        ScriptedChatModel(script=sql_agent.script_for("looping")),
        [sql_agent.run_sql],
        middleware=[LivenessMiddleware()],
        checkpointer=saver,
    )
    with pytest.raises(NoProgressError):
        agent.invoke(sql_agent.initial_input("looping"), thread("agent"))
    messages = agent.get_state(thread("agent")).values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert messages[-1].content == STOP_TEXT  # the stop is saved with the thread
    answered = {m.tool_call_id for m in messages if m.type == "tool"}
    assert answered == {c["id"] for m in messages if m.type == "ai" for c in m.tool_calls}


def test_middleware_end_mode_finishes_with_a_stop_message() -> None:
    ran = Executions()
    agent = build_agent("looping", LivenessMiddleware(exit_behavior="end"))
    result = agent.invoke(sql_agent.initial_input("looping"), counted(ran))
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    assert last.content == STOP_TEXT
    assert last.tool_calls == []
    assert last.response_metadata["liveguard"]["code"] == "tool_no_progress"
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert (ran.model_calls, ran.tool_calls) == (2, 2)  # the stop message costs no model call
    assert result["summary"] == f"answer: {STOP_TEXT}"


def test_middleware_leaves_a_healthy_agent_alone() -> None:
    inputs = sql_agent.initial_input("healthy")
    expected = build_agent("healthy").invoke(inputs)
    for behavior in ("error", "end", "continue", "interrupt", "warn"):
        got = build_agent("healthy", LivenessMiddleware(exit_behavior=behavior)).invoke(inputs)
        assert got["messages"][-1].content == "Totals per region: east 200, north 165, south 140."
        assert without_ids(got) == without_ids(expected)


def test_two_invocations_never_share_a_monitor(caplog: pytest.LogCaptureFixture) -> None:
    """The healthy run's first call fails non-retryably: shared state would stop run two."""
    healthy = build_agent("healthy", LivenessMiddleware())
    for _ in range(3):
        assert healthy.invoke(sql_agent.initial_input("healthy"))["messages"][-1].content.startswith(
            "Totals")
    ending = build_agent("looping", LivenessMiddleware(exit_behavior="end"))
    for _ in range(2):  # a leaked stop would end run two before its first model call
        ran = Executions()
        result = ending.invoke(sql_agent.initial_input("looping"), counted(ran))
        assert result["messages"][-1].content == STOP_TEXT
        assert (ran.model_calls, ran.tool_calls) == (2, 2)
    for _ in range(3):  # batch: concurrent runs in threads, one liveness state each
        ran = Executions()
        results = ending.batch([sql_agent.initial_input("looping")] * 4, counted(ran))
        assert [r["messages"][-1].content for r in results] == [STOP_TEXT] * 4
        assert ran.tool_calls == 8
    assert "guard_error" not in caplog.text  # concurrent runs never trip the guard itself


def test_middleware_guards_ainvoke_and_astream() -> None:
    """StepSummaryMiddleware has no async hooks, so these agents run without it."""
    inputs = sql_agent.initial_input("looping")

    async def run() -> None:
        agent = build_agent("looping", LivenessMiddleware(), summaries=False)
        ran = Executions()
        with pytest.raises(NoProgressError) as stopped:
            await agent.ainvoke(inputs, counted(ran))
        assert (stopped.value.violation.code, stopped.value.violation.step) == ("tool_no_progress", 3)
        assert ran.tool_calls == 2
        chunks: list[Any] = []
        with pytest.raises(NoProgressError):
            await adrain(agent.astream(inputs, stream_mode="updates"), chunks)
        # the 2nd failing call's result is kept; the next model call raises instead of running
        names = [next(iter(c)) for c in chunks]
        assert [n for n in names if n != "LivenessMiddleware.after_model"] == [
            "model", "tools", "model", "tools", "model"]  # the last model step: the stop message
        ending = build_agent("looping", LivenessMiddleware(exit_behavior="end"), summaries=False)

        async def one() -> tuple[str, int]:
            ran = Executions()
            result = await ending.ainvoke(inputs, counted(ran))
            return result["messages"][-1].content, ran.tool_calls

        # concurrent runs through one middleware interleave, yet each stops at its own step 3
        assert await asyncio.gather(*(one() for _ in range(4))) == [(STOP_TEXT, 2)] * 4
        healthy = build_agent("healthy", LivenessMiddleware(), summaries=False)
        answer = (await healthy.ainvoke(sql_agent.initial_input("healthy")))["messages"][-1]
        assert answer.content.startswith("Totals per region")

    asyncio.run(run())


def test_middleware_first_in_the_list_reads_tool_results_from_commands() -> None:
    """Outermost, it gets StepSummaryMiddleware's Command(update={"messages": [...]})."""
    agent = create_agent(
        ScriptedChatModel(script=sql_agent.script_for("looping")),
        [sql_agent.run_sql],
        middleware=[LivenessMiddleware(), sql_agent.StepSummaryMiddleware()],
    )
    with pytest.raises(NoProgressError) as stopped:
        agent.invoke(sql_agent.initial_input("looping"))
    assert (stopped.value.violation.code, stopped.value.violation.step) == ("tool_no_progress", 3)


def test_a_retry_middleware_around_it_cannot_restart_a_stopped_run() -> None:
    """The stop is a response, the error comes from after_model: a retry never sees it."""
    ran = Executions()
    agent = create_agent(
        ScriptedChatModel(script=sql_agent.script_for("looping")),
        [sql_agent.run_sql],
        middleware=[ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False),
                    LivenessMiddleware()],
    )
    with pytest.raises(NoProgressError, match="tool_no_progress at step 3"):
        agent.invoke(sql_agent.initial_input("looping"), counted(ran))
    assert (ran.model_calls, ran.tool_calls) == (2, 2)  # no retry reached the model


@tool
def fetch_page(url: str, options: Any = None) -> str:
    """Fetch a web page (this one always times out, for good)."""
    return json.dumps({"error": "timeout", "retryable": False})


def fetch_script(options: Any) -> tuple[AIMessage, ...]:
    calls = [
        AIMessage(content="", tool_calls=[
            ToolCall(name="fetch_page", args={"url": "https://example.com", "options": options},
                     id=f"call_{n}")])
        for n in range(1, 5)
    ]
    return (*calls, AIMessage(content="The page never loaded."))


def test_middleware_guard_failure_is_logged_and_the_agent_finishes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plain = build_agent("looping", LivenessMiddleware(), script=fetch_script({"retries": 0}),
                        tools=[fetch_page], summaries=False)
    with pytest.raises(NoProgressError):
        plain.invoke({"messages": [{"role": "user", "content": "load it"}]})
    opaque = build_agent("looping", LivenessMiddleware(), script=fetch_script(Opaque()),
                         tools=[fetch_page], summaries=False)
    ran = Executions()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="liveguard.guard"):
        result = opaque.invoke({"messages": [{"role": "user", "content": "load it"}]}, counted(ran))
    assert result["messages"][-1].content == "The page never loaded."
    assert ran.tool_calls == 4
    assert [r.getMessage().split()[1] for r in caplog.records] == ["code=guard_error"]
    assert "type=FingerprintError" in caplog.text
    assert SECRET not in caplog.text


def test_middleware_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="exit_behavior"):
        LivenessMiddleware(exit_behavior="stop")  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning, match="on_violation"):
        assert LivenessMiddleware(on_violation="raise").exit_behavior == "error"
    with pytest.warns(DeprecationWarning, match="deprecated"), pytest.raises(
            ValueError, match="on_violation"):
        LivenessMiddleware(on_violation="stop")
    assert LivenessMiddleware().policy == Settings.from_env().policy(Policy.tool_agent())
