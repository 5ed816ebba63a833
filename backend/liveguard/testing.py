"""Trajectory builders for tests: ours and yours.

Every builder returns plain :class:`~liveguard.core.model.Step` lists, deterministic for
the same arguments. Tool-call builders vary what real models vary between repeats
(call ids, JSON whitespace, key order) so tests exercise the canonical fingerprint.

>>> from liveguard import check_trajectory
>>> [v.code for v in check_trajectory(ping_pong(rounds=2))]
['content_cycle']
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from liveguard.core.model import Expected, Step, Trajectory

__all__ = [
    "agent_turn",
    "cycle",
    "messages",
    "ping_pong",
    "poll",
    "repeated_tool_call",
    "tool_result_step",
    "trajectory",
    "varied_json",
]


def messages(*pairs: tuple[str, str]) -> list[Step]:
    """``messages(("coder", "v1"), ("reviewer", "ok"))``: one message step per (node, summary)."""
    return [Step(node=node, summary=summary) for node, summary in pairs]


def ping_pong(
    a: str = "coder",
    b: str = "reviewer",
    *,
    rounds: int = 2,
    a_text: str = "def add(a, b): return a - b",
    b_text: str = "REJECT: add() subtracts",
) -> list[Step]:
    """A→B→A→B…: two agents trading the same two messages ``rounds`` times."""
    return [Step(node=n, summary=t) for _ in range(rounds) for n, t in ((a, a_text), (b, b_text))]


def cycle(nodes: Sequence[str], *, rounds: int = 2, texts: Sequence[str] | None = None) -> list[Step]:
    """The same block of message steps, one per node, repeated ``rounds`` times."""
    texts = texts or [f"{node} says the same thing" for node in nodes]
    return [Step(node=n, summary=t) for _ in range(rounds) for n, t in zip(nodes, texts, strict=True)]


def varied_json(args: Mapping[str, Any], variant: int) -> str:
    """The same arguments as JSON text, with whitespace and key order varying by ``variant``."""
    items = list(args.items())
    if variant % 2:
        items.reverse()
    separators = [(",", ":"), (", ", ": "), (" ,", " : ")][variant % 3]
    return json.dumps(dict(items), separators=separators)


def tool_result_step(
    tool: str,
    args: Any,
    result: Any = None,
    *,
    node: str = "tools",
    error: Any = None,
    call_id: str | None = None,
) -> Step:
    """A tool step. With ``call_id`` the result is an OpenAI-format tool message dict."""
    if call_id is not None:
        result = {"role": "tool", "tool_call_id": call_id, "content": result}
    return Step(node=node, tool=tool, args=args, result=result, error=error)


def repeated_tool_call(
    tool: str = "run_sql",
    args: Mapping[str, Any] | None = None,
    result: Any = '{"error": "no such table: ordrs"}',
    *,
    times: int = 3,
    node: str = "tools",
) -> list[Step]:
    """The same failing call ``times`` times, as a model would send it: fresh call ids,
    JSON arguments whose whitespace and key order differ between repeats."""
    args = args or {"query": "SELECT * FROM ordrs", "limit": 10}
    return [
        tool_result_step(tool, varied_json(args, i), result, node=node, call_id=f"call_{i:04d}")
        for i in range(times)
    ]


def agent_turn(tool: str, args: Mapping[str, Any], result: Any, *, turn: int = 0) -> list[Step]:
    """One ``create_agent`` turn: the model's tool-call request, then the tool's result."""
    call_id = f"call_{turn:04d}"
    request = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": tool, "arguments": varied_json(args, turn)},
            }
        ],
    }
    return [
        Step(node="model", output=request),
        tool_result_step(tool, dict(args), result, node="tools", call_id=call_id),
    ]


def poll(
    statuses: Iterable[str], *, tool: str = "check_job", args: Mapping[str, Any] | None = None
) -> list[Step]:
    """An agent polling a job: same request each turn, results as given (e.g. running, done)."""
    args = args or {"job_id": "job-7"}
    steps: list[Step] = []
    for turn, status in enumerate(statuses):
        steps += agent_turn(tool, args, json.dumps({"status": status}), turn=turn)
    return steps


def trajectory(
    run_id: str,
    steps: list[Step],
    *,
    graph: str | None = None,
    expected: tuple[bool, Sequence[str]] | None = None,
    **fields: Any,
) -> Trajectory:
    """A Trajectory; ``expected=(passed, hard_codes)`` records the golden verdict."""
    exp = None
    if expected is not None:
        exp = Expected(passed=expected[0], hard_codes=sorted(set(expected[1])))
    return Trajectory(run_id=run_id, graph=graph, steps=steps, expected=exp, **fields)
