"""liveguard.readers.stream: LangGraph ``stream_mode="updates"`` chunks → Steps.

Unit tests use hand-made chunks (LangChain message objects, OpenAI-style dicts and
plain duck-typed objects); the end-to-end tests stream the real ``graphs.sql_agent``
agent (a stock ``create_agent`` graph with a real SqliteSaver) and feed the Monitor
step by step, as a live guard would.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from liveguard import Monitor, Policy, Step, Violation
from liveguard.core.allowset import load_allowset
from liveguard.readers.stream import UpdateStepper, steps_from_updates

ROOT = Path(__file__).resolve().parent.parent
SQL_ALLOWSET = ROOT / "expected_paths" / "sql_agent.yaml"

ARGS = {"query": "SELECT * FROM ordrs", "max_rows": 20}
ERROR = '{"error": "no such table: ordrs", "retryable": false}'


def ai_call(call_id: str, args: dict[str, Any] | None = None, name: str = "run_sql") -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args or ARGS, "id": call_id}])


# ------------------------------------------------------------------------ tool calls / results


def test_tool_result_gets_the_args_of_its_call_by_id() -> None:
    request = ai_call("call_1")
    steps = steps_from_updates([
        {"model": {"messages": [request], "summary": "call run_sql"}},
        {"tools": {"messages": [ToolMessage(content=ERROR, name="run_sql", tool_call_id="call_1")],
                   "summary": "run_sql error"}},
    ])
    assert steps == [
        Step(node="model", output=request),
        Step(node="tools", tool="run_sql", args=ARGS, result=ERROR),
    ]
    assert steps[0].summary is None  # a request carries no summary
    assert steps[1].summary is None  # the summary stays out of tool steps


def test_single_message_update_and_error_status() -> None:
    steps = steps_from_updates([
        {"model": {"messages": ai_call("c9", {"query": "SELECT 1"})}},  # not wrapped in a list
        {"tools": {"messages": ToolMessage(content="boom", name="run_sql", tool_call_id="c9",
                                           status="error")}},
    ])
    assert steps[1] == Step(node="tools", tool="run_sql", args={"query": "SELECT 1"},
                            result="boom", error="boom")


def test_one_tool_step_per_tool_message_in_call_order_of_the_update() -> None:
    request = AIMessage(content="", tool_calls=[
        {"name": "lookup", "args": {"id": 1}, "id": "a"},
        {"name": "fetch", "args": {"url": "u"}, "id": "b"},
    ])
    steps = steps_from_updates([
        {"model": {"messages": [request]}},
        {"tools": {"messages": [ToolMessage(content="page", name="fetch", tool_call_id="b"),
                                ToolMessage(content="row", name="lookup", tool_call_id="a")]}},
    ])
    assert [(s.tool, s.args, s.result) for s in steps[1:]] == [
        ("fetch", {"url": "u"}, "page"),
        ("lookup", {"id": 1}, "row"),
    ]


def test_parallel_tool_tasks_arrive_as_a_list_of_updates() -> None:
    """Several tasks of one node in one superstep (``Send`` per tool call): a list."""
    request = AIMessage(content="", tool_calls=[
        {"name": "run_sql", "args": {"query": "A"}, "id": "a"},
        {"name": "run_sql", "args": {"query": "B"}, "id": "b"},
    ])
    steps = steps_from_updates([
        {"model": {"messages": [request]}},
        {"tools": [
            {"messages": [ToolMessage(content="ra", name="run_sql", tool_call_id="a")]},
            {"messages": [ToolMessage(content="rb", name="run_sql", tool_call_id="b")]},
        ]},
    ])
    assert [(s.node, s.args, s.result) for s in steps[1:]] == [
        ("tools", {"query": "A"}, "ra"),
        ("tools", {"query": "B"}, "rb"),
    ]


def test_openai_style_dicts() -> None:
    request = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_7", "type": "function",
                        "function": {"name": "run_sql", "arguments": '{"query": "SELECT 7"}'}}],
    }
    result = {"role": "tool", "tool_call_id": "call_7", "content": "[[7]]"}
    steps = steps_from_updates([
        {"agent": {"messages": [request]}},
        {"tools": {"messages": [result]}},
        {"agent": {"messages": [{"role": "assistant", "content": "It is 7."}]}},
    ])
    assert steps == [
        Step(node="agent", output=request),
        Step(node="tools", tool="run_sql", args='{"query": "SELECT 7"}', result="[[7]]"),
        Step(node="agent", output="It is 7."),
    ]


def test_duck_typed_message_objects() -> None:
    call = SimpleNamespace(tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "s1"}],
                           content="")
    result = SimpleNamespace(tool_call_id="s1", name=None, content="hits", status="success")
    steps = steps_from_updates([{"m": {"messages": [call]}}, {"t": {"messages": [result]}}])
    # no name on the tool message: the name of the matching call is used
    assert steps[1] == Step(node="t", tool="search", args={"q": "x"}, result="hits")


def test_unknown_call_id_and_bounded_call_memory() -> None:
    stepper = UpdateStepper(max_calls=2)
    for i in range(3):
        stepper.feed({"model": {"messages": [ai_call(f"c{i}", {"i": i})]}})
    forgotten, kept = (
        stepper.feed({"tools": {"messages": [ToolMessage(content="r", name="run_sql",
                                                         tool_call_id=call_id)]}})[0]
        for call_id in ("c0", "c2")
    )
    assert forgotten == Step(node="tools", tool="run_sql", args=None, result="r")
    assert kept.args == {"i": 2}
    orphan = steps_from_updates([{"tools": {"messages": [{"role": "tool", "tool_call_id": "zz",
                                                           "content": "?"}]}}])
    assert orphan == [Step(node="tools", tool="unknown_tool", args=None, result="?")]
    with pytest.raises(ValueError, match="max_calls"):
        UpdateStepper(max_calls=0)


# ------------------------------------------------------------------------------ message steps


def test_message_step_takes_summary_and_last_message_content() -> None:
    steps = steps_from_updates([
        {"model": {"messages": [HumanMessage("hi"), AIMessage("Totals: 3")],
                   "summary": "answer: Totals: 3"}},
    ])
    assert steps == [Step(node="model", summary="answer: Totals: 3", output="Totals: 3")]


def test_message_step_without_messages_keeps_the_update_minus_bookkeeping() -> None:
    steps = steps_from_updates([
        {"gate": {"summary": "approved v2", "verdict": "approved", "steps": ["gate"]}},
        {"bookkeeping": {"summary": "only a summary", "steps": ["bookkeeping"]}},
        {"odd_summary": {"summary": 42, "draft": "v1"}},
        {"empty": {}},
        {"no_messages": {"messages": [], "steps": ["no_messages"]}},
    ])
    assert steps == [
        Step(node="gate", summary="approved v2", output={"verdict": "approved"}),
        Step(node="bookkeeping", summary="only a summary"),
        Step(node="odd_summary", output={"draft": "v1"}),  # a non-text summary is not a summary
        Step(node="empty"),
        Step(node="no_messages"),
    ]


# ------------------------------------------------------------------------------- odd updates


def test_odd_updates_give_contentless_steps_and_dunder_keys_are_skipped() -> None:
    chunks: list[Any] = [
        {"__interrupt__": ({"value": "approve?"},)},
        {"a": None},
        {"b": "not a dict"},
        {"c": Command(goto="d")},
        {"__metadata__": {"cached": True}, "d": 7},
        {"__start__": {"x": 1}},
    ]
    assert steps_from_updates(chunks) == [Step(node=n) for n in ("a", "b", "c", "d")]
    assert UpdateStepper().feed("not a mapping") == []  # type: ignore[arg-type]


def test_one_chunk_with_several_nodes_keeps_their_order() -> None:
    steps = UpdateStepper().feed({"left": {"summary": "L"}, "right": {"summary": "R"}})
    assert [(s.node, s.summary) for s in steps] == [("left", "L"), ("right", "R")]


def test_module_imports_no_framework() -> None:
    code = (
        "import sys, liveguard.readers.stream\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('langchain', 'langchain_core', "
        "'langgraph')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------ end to end (sql_agent)


@pytest.fixture
def saver() -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def guard(scenario: str, saver: SqliteSaver, policy: Policy) -> tuple[list[Step], list[Violation]]:
    """Stream the sql_agent scenario and feed each step to a Monitor as it arrives."""
    from graphs import sql_agent

    compiled = sql_agent.build_graph(scenario, checkpointer=saver)
    config = {"recursion_limit": 100, "configurable": {"thread_id": f"sql_agent-{scenario}"}}
    monitor = Monitor(policy, load_allowset(SQL_ALLOWSET))
    stepper = UpdateStepper()
    steps: list[Step] = []
    found: list[Violation] = []
    for chunk in compiled.stream(sql_agent.initial_input(scenario), config, stream_mode="updates"):
        for step in stepper.feed(chunk):
            steps.append(step)
            found += monitor.observe(step)
    found += monitor.finish()
    return steps, found


def failing_run_sql_steps(steps: list[Step]) -> list[int]:
    return [i for i, s in enumerate(steps) if s.tool == "run_sql" and "no such table" in s.result]


def test_sql_agent_looping_fires_tool_no_progress(saver: SqliteSaver) -> None:
    steps, found = guard("looping", saver, Policy.tool_agent())
    assert [s.node for s in steps] == ["model", "tools"] * 6 + ["model"]
    failing = failing_run_sql_steps(steps)
    assert len(failing) == 6
    first_call = steps[failing[0]]
    # identical calls (dict equality: the scripted model alternates the args' key order)
    assert all((steps[i].tool, steps[i].args, steps[i].result)
               == (first_call.tool, first_call.args, first_call.result) for i in failing)
    first = next(v for v in found if v.code == "tool_no_progress")
    # The result says "retryable": false, so the non-retryable threshold (2) applies, not
    # the allow-set's no_progress: 3: the 2nd identical failing call is already no progress.
    assert first.step == failing[1]
    assert first.detail["nonretryable"] is True
    assert first.detail["threshold"] == 2
    assert first.detail["steps"] == failing[:2]


def test_sql_agent_looping_fires_at_the_third_call_when_failures_count_as_retryable(
    saver: SqliteSaver,
) -> None:
    """With the non-retryable fast path at the same threshold, run_sql's no_progress 3 applies."""
    _, found = guard("looping", saver, Policy.tool_agent(tool_repeats_nonretryable=3))
    tool_hits = [v for v in found if v.code == "tool_no_progress"]
    assert len(tool_hits) == 1
    assert tool_hits[0].step == 5  # model, tools, model, tools, model, [tools]: the 3rd call
    assert tool_hits[0].detail["steps"] == [1, 3, 5]


def test_sql_agent_healthy_has_no_hard_violation(saver: SqliteSaver) -> None:
    steps, found = guard("healthy", saver, Policy.tool_agent())
    assert [s.node for s in steps] == ["model", "tools", "model", "tools", "model"]
    assert steps[1].args == {"query": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region",
                             "max_rows": 20}
    assert steps[-1].summary == "answer: Totals per region: east 200, north 165, south 140."
    assert [v for v in found if v.hard] == []


# ------------------------------------------------- issue 30: Commands and whole updates


def test_a_list_of_commands_is_read_for_its_messages_and_tool_calls() -> None:
    """The model node of an agent run inside a node returns a list of ``Command`` objects:
    main read it as a contentless visit, and the tool results lost their arguments."""
    request = ai_call("c1", {"to": "ann@example.com"})
    steps = steps_from_updates([
        {"model": [Command(update={"messages": [request]}), Command(goto="tools")]},
        {"tools": {"messages": [ToolMessage(content="queued", name="send_email", tool_call_id="c1")]}},
        {"model": Command(update=[("messages", [AIMessage("all queued")]), ("summary", "done")])},
        {"up": Command(graph=Command.PARENT, update={"messages": [AIMessage("to the parent")]})},
    ])
    assert steps[0].output is request
    assert steps[1] == Step(node="tools", tool="send_email", args={"to": "ann@example.com"}, result="queued")
    assert steps[2] == Step(node="model", summary="done", output="all queued")
    assert steps[3] == Step(node="up")  # the parent's update is the parent's step


def test_an_update_with_messages_is_judged_with_all_its_keys() -> None:
    """A worker posting the same status while its queue shrinks: every key counts (main kept
    only the message); a message that is the whole update stays the message's content."""
    status = AIMessage("working through the queue")
    steps = steps_from_updates([
        {"work": {"messages": [status], "queue": ["b", "c"], "results": ["a"]}},
        {"work": {"messages": [status], "queue": ["c"], "results": ["b"], "steps": ["work"],
                  "liveguard": {"v": 1}, "thread_model_call_count": 3}},
        {"work": {"messages": [status]}},
    ])
    assert [s.output for s in steps] == [
        {"queue": ["b", "c"], "results": ["a"], "messages": "working through the queue"},
        {"queue": ["c"], "results": ["b"], "messages": "working through the queue"},
        "working through the queue",
    ]
