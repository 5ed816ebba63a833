"""A deterministic corpus of whole runs for the scale benchmark (and the engine tests).

Each run is a ``create_agent``-style SQL agent of ``steps`` steps (default 24): a
supervisor summary, then model request → tool result turns (``sql_db_list_tables``,
``sql_db_schema``, ``sql_db_query``, ``fetch_rows``) with fresh call ids, varying
arguments and 200 B–1 KB results, and a final answer. ``loop_rate`` of the runs
(default 5%) loop: from the middle on, the same query with the same result is asked
again and again (``tool_no_progress``). Every run names the ``tool_agent`` policy in its
metadata. The same seed gives the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SEED", "iter_runs", "write_corpus"]

SEED = 20261130
_CITIES = ("Zürich", "São Paulo", "Kraków", "Montréal", "東京", "London", "Austin", "Lyon")
_STATUS = ("shipped", "pending", "delivered", "cancelled")
_TOOLS = ("sql_db_list_tables", "sql_db_schema", "sql_db_query", "fetch_rows")


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789", k=24))


def _rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [
        {
            "order_id": rng.randint(10_000, 99_999),
            "city": rng.choice(_CITIES),
            "total": round(rng.uniform(5, 900), 2),
            "status": rng.choice(_STATUS),
        }
        for _ in range(n)
    ]


def _turn(rng: random.Random, tool: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
    call = _call_id(rng)
    request = {
        "node": "model",
        "output": {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": tool, "arguments": orjson.dumps(args).decode()},
                }
            ],
        },
    }
    return [request, {"node": "tools", "tool": tool, "args": args, "result": result}]


def _run(rng: random.Random, index: int, steps: int, loop: bool) -> dict[str, Any]:
    out: list[dict[str, Any]] = [
        {"node": "supervisor", "summary": f"run {index}: routed question to analyst"}
    ]
    stuck_args = {"query": f"SELECT * FROM orders WHERE order_id = {rng.randint(1, 10**6)}", "limit": 10}
    stuck_result = orjson.dumps({"error": "timeout", "retryable": True}).decode()
    turn = 0
    while len(out) < steps - 1:
        if loop and len(out) >= steps // 2:
            out += _turn(rng, "sql_db_query", stuck_args, stuck_result)
            continue
        tool = _TOOLS[turn % len(_TOOLS)]
        turn += 1
        if tool == "sql_db_list_tables":
            args: dict[str, Any] = {}
            result = f"customers, orders, products, order_items_{rng.randint(1, 10**6)}"
        elif tool == "sql_db_schema":
            args = {"table_names": f"orders, t{rng.randint(1, 10**6)}"}
            result = (
                "CREATE TABLE orders (order_id INTEGER, city TEXT, total NUMERIC, status TEXT) -- "
                + str(rng.random())
            )
        elif tool == "sql_db_query":
            args = {
                "query": f"SELECT city, SUM(total) FROM orders WHERE total > {rng.randint(1, 900)} "
                f"GROUP BY city LIMIT {rng.randint(5, 50)}",
                "limit": 10,
            }
            result = orjson.dumps(_rows(rng, rng.randint(2, 8))).decode()
        else:
            args = {
                "table": "orders",
                "filters": {"status": rng.choice(_STATUS)},
                "offset": rng.randint(0, 40) * 10,
            }
            result = orjson.dumps(_rows(rng, rng.randint(1, 6))).decode()
        out += _turn(rng, tool, args, result)
    out = out[: steps - 1]
    out.append(
        {"node": "model", "output": {"role": "assistant", "content": f"Answer {index}: {rng.random():.6f}"}}
    )
    return {
        "run_id": f"scale-{index:07d}",
        "graph": "scale_agent",
        "status": "success",
        "metadata": {"scenario": "looping" if loop else "healthy", "policy": "tool_agent"},
        "steps": out,
    }


def iter_runs(
    n: int, *, steps: int = 24, loop_rate: float = 0.05, seed: int = SEED
) -> Iterator[dict[str, Any]]:
    """``n`` runs as JSON-ready dicts, the same for the same arguments."""
    rng = random.Random(seed)
    for index in range(n):
        yield _run(rng, index, steps, rng.random() < loop_rate)


def write_corpus(
    path: str | Path, n: int, *, steps: int = 24, loop_rate: float = 0.05, seed: int = SEED
) -> Path:
    """Write ``n`` runs to ``path`` (JSONL) and return it."""
    path = Path(path)
    with path.open("wb") as out:
        for run in iter_runs(n, steps=steps, loop_rate=loop_rate, seed=seed):
            out.write(orjson.dumps(run) + b"\n")
    return path
