"""Target graph ``sql_agent``: a real ``langchain.agents.create_agent`` agent with one tool.

The agent is the stock model <-> tools loop of ``create_agent``. Its nodes are
:data:`MODEL_NODE` (``"model"``) and :data:`TOOLS_NODE` (``"tools"``). The only tool is
:func:`run_sql`. Each call builds a fresh in-memory SQLite database with two small
tables, ``orders(id, region, amount)`` and ``refresh_jobs(id, status)``, runs the query
and returns JSON: ``{"columns": [...], "rows": [...]}`` on success, or
``{"error": "<sqlite message>", "retryable": false}`` when the SQL fails.

The model is :class:`graphs._scripted.ScriptedChatModel`, a fake chat model that replays
a fixed script of ``AIMessage`` turns per scenario. Turn *n* of the conversation gets
``script[n]``, so one compiled agent can be run many times as long as every run uses a
fresh ``thread_id``. Tool-call ids differ between repeats (``call_1``, ``call_2``, ...),
and the ``args`` key order alternates (``query`` first, then ``max_rows`` first), as
real models do.

Summaries: :class:`StepSummaryMiddleware` adds a ``summary`` state key to both nodes. It
uses ``wrap_model_call`` (returning an ``ExtendedModelResponse``) and ``wrap_tool_call``
(returning a ``Command``). It adds no node, but ``create_agent`` adds a ``model -> model``
conditional edge whenever a ``wrap_model_call`` middleware is present (middleware may
inject synthetic tool messages). So ``get_graph()`` and ``expected_paths/sql_agent.yaml``
are ``__start__ -> model``, ``model -> tools | model | __end__``, ``tools -> model``.
The scripted runs never take ``model -> model``.

Scenarios (``__start__``/``__end__`` omitted):

``healthy``
    "Total order amount per region?" The first query hits the non-existent table
    ``sales`` (error), the second queries ``orders`` correctly, then the model answers.
    ``model, tools, model, tools, model`` (5 steps).
``looping``
    The model repeats the identical failing query (``FROM sales``) N=6 times, with new
    call ids and alternating arg key order. Each call gets the identical error. Then it
    gives up.
    ``(model, tools) x 6, model`` (13 steps).
``ping_pong``
    The model alternates between two failing queries, ``FROM sales`` and
    ``FROM order_totals`` (A, B, A, B, A, B: N=6 calls, 3 each), then gives up.
    ``(model, tools) x 6, model`` (13 steps).
``stalled``
    "Has refresh job 7 finished?" The model polls
    ``SELECT status FROM refresh_jobs WHERE id = 7`` N=4 times. The query succeeds, but
    the result is always ``running`` (no progress). Then the model gives up.
    ``(model, tools) x 4, model`` (9 steps).

``illegal_hop`` and ``dead_end`` are not supported: ``create_agent``'s nodes route
themselves, and forcing an undeclared hop would need a custom node, so this would no
longer be a stock agent.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, NotRequired

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.tools import tool
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command

from graphs._scripted import ScriptedChatModel, check_scenario

__all__ = [
    "GRAPH_NAME",
    "MODEL_NODE",
    "NODES",
    "SCENARIOS",
    "TOOLS_NODE",
    "TOOL_NAME",
    "SQLAgentState",
    "StepSummaryMiddleware",
    "build_graph",
    "graph",
    "initial_input",
    "run_sql",
    "script_for",
]

GRAPH_NAME = "sql_agent"
SCENARIOS: tuple[str, ...] = ("healthy", "looping", "ping_pong", "stalled")
MODEL_NODE = "model"
"""Node name ``create_agent`` gives the model call."""
TOOLS_NODE = "tools"
"""Node name ``create_agent`` gives the ``ToolNode``."""
NODES: tuple[str, ...] = (MODEL_NODE, TOOLS_NODE)
TOOL_NAME = "run_sql"

LOOPING_CALLS = 6
"""``looping``: identical failing ``run_sql`` calls before the model gives up."""
PING_PONG_CALLS = 6
"""``ping_pong``: alternating failing calls (3 per query) before the model gives up."""
STALLED_POLLS = 4
"""``stalled``: identical successful-but-unchanged polls before the model gives up."""

SYSTEM_PROMPT = "You answer questions about the shop database. Use run_sql for every lookup."
QUESTIONS: dict[str, str] = {
    "healthy": "What is the total order amount per region?",
    "looping": "What is the total order amount per region?",
    "ping_pong": "What is the total order amount per region?",
    "stalled": "Has the nightly refresh job 7 finished?",
}

_SCHEMA = """
CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT NOT NULL, amount INTEGER NOT NULL);
INSERT INTO orders (id, region, amount) VALUES
    (1, 'north', 120), (2, 'south', 80), (3, 'north', 45), (4, 'east', 200), (5, 'south', 60);
CREATE TABLE refresh_jobs (id INTEGER PRIMARY KEY, status TEXT NOT NULL);
INSERT INTO refresh_jobs (id, status) VALUES (6, 'done'), (7, 'running');
"""

QUERY_SALES = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"
QUERY_ORDER_TOTALS = "SELECT region, total FROM order_totals ORDER BY region"
QUERY_ORDERS = "SELECT region, SUM(amount) AS total FROM orders GROUP BY region ORDER BY region"
QUERY_JOB_STATUS = "SELECT status FROM refresh_jobs WHERE id = 7"


@tool
def run_sql(query: str, max_rows: int = 20) -> str:
    """Run one read-only SQL query against the shop database and return JSON.

    Tables: orders(id, region, amount) and refresh_jobs(id, status).
    """
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        cursor = conn.execute(query)
        columns = [col[0] for col in cursor.description or ()]
        rows = [list(row) for row in cursor.fetchmany(max_rows)]
    except sqlite3.Error as exc:
        return json.dumps({"error": str(exc), "retryable": False})
    finally:
        conn.close()
    return json.dumps({"columns": columns, "rows": rows})


class SQLAgentState(AgentState[Any]):
    """``create_agent`` state plus the per-step ``summary`` written by the middleware."""

    summary: NotRequired[str]


def _describe_call(call: ToolCall) -> str:
    args = ", ".join(f"{key}={value!r}" for key, value in sorted(call["args"].items()))
    return f"call {call['name']}({args})"


def _describe_result(name: str, content: str) -> str:
    try:
        payload = json.loads(content)
    except ValueError:
        return f"{name} returned text: {content[:80]}"
    if isinstance(payload, dict) and "error" in payload:
        return f"{name} error: {payload['error']}"
    if isinstance(payload, dict) and "rows" in payload:
        rows = payload["rows"]
        return f"{name} ok: {len(rows)} row(s) {json.dumps(rows)}"
    return f"{name} returned {content[:80]}"


class StepSummaryMiddleware(AgentMiddleware[SQLAgentState, None, Any]):
    """Adds a human-readable ``summary`` key to the model and tools node updates."""

    state_schema = SQLAgentState

    def wrap_model_call(
        self,
        request: ModelRequest[None],
        handler: Callable[[ModelRequest[None]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        response = handler(request)
        message = next((m for m in response.result if isinstance(m, AIMessage)), None)
        if message is None:
            summary = "model returned no message"
        elif message.tool_calls:
            summary = "; ".join(_describe_call(call) for call in message.tool_calls)
        else:
            summary = f"answer: {message.text}"
        return ExtendedModelResponse(
            model_response=response, command=Command(update={"summary": summary})
        )

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        result = handler(request)
        if not isinstance(result, ToolMessage):
            return result
        summary = _describe_result(request.tool_call["name"], result.text)
        return Command(update={"messages": [result], "summary": summary})


def _call(number: int, query: str) -> AIMessage:
    """One scripted tool-calling turn; odd and even turns order the args differently."""
    args: dict[str, Any] = (
        {"query": query, "max_rows": 20} if number % 2 else {"max_rows": 20, "query": query}
    )
    return AIMessage(
        content="",
        tool_calls=[ToolCall(name=TOOL_NAME, args=args, id=f"call_{number}")],
    )


def script_for(scenario: str) -> tuple[AIMessage, ...]:
    """The scripted model turns of ``scenario``, in order."""
    check_scenario(GRAPH_NAME, scenario, SCENARIOS)
    if scenario == "healthy":
        return (
            _call(1, QUERY_SALES),
            _call(2, QUERY_ORDERS),
            AIMessage(content="Totals per region: east 200, north 165, south 140."),
        )
    if scenario == "looping":
        calls = [_call(n, QUERY_SALES) for n in range(1, LOOPING_CALLS + 1)]
        give_up = "I could not compute the totals: the sales table does not exist."
    elif scenario == "ping_pong":
        queries = (QUERY_SALES, QUERY_ORDER_TOTALS)
        calls = [_call(n, queries[(n - 1) % 2]) for n in range(1, PING_PONG_CALLS + 1)]
        give_up = "I could not compute the totals: neither sales nor order_totals exists."
    else:  # stalled
        calls = [_call(n, QUERY_JOB_STATUS) for n in range(1, STALLED_POLLS + 1)]
        give_up = f"Refresh job 7 is still running after {STALLED_POLLS} checks."
    return (*calls, AIMessage(content=give_up))


def initial_input(scenario: str) -> dict[str, Any]:
    """Input for ``graph.invoke``/``graph.stream``: the user's question for ``scenario``."""
    check_scenario(GRAPH_NAME, scenario, SCENARIOS)
    return {"messages": [{"role": "user", "content": QUESTIONS[scenario]}]}


def build_graph(
    scenario: str = "healthy", *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the ``create_agent`` agent whose scripted model plays ``scenario``."""
    model = ScriptedChatModel(script=script_for(scenario))
    return create_agent(
        model,
        [run_sql],
        system_prompt=SYSTEM_PROMPT,
        middleware=[StepSummaryMiddleware()],
        checkpointer=checkpointer,
        name=GRAPH_NAME,
    )


graph = build_graph()
