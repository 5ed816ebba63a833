"""Record every scenario of the target graphs into golden_datasets/<graph>.jsonl.

Each scenario of ``graphs.campaign``, ``graphs.coder_reviewer`` and ``graphs.sql_agent``
is streamed with ``stream_mode="updates"`` on a fresh graph with a real ``SqliteSaver``
(in-memory SQLite), converted with :func:`liveguard.readers.stream.steps_from_updates`,
and written with its hand-written expected verdict (:data:`EXPECTED`).

The output is byte-for-byte reproducible: LangChain message objects are dumped to plain
dicts without their random ``id`` and provider metadata; the scripted tool-call ids
(``call_1``, ...) are kept. Run from the repo root: ``python scripts/record_graphs.py``.

The verdicts in :data:`EXPECTED` are reasoned from the rules with the graph's allow-set
(``expected_paths/<graph>.yaml``) and the run's policy preset (``tool_agent`` for
``sql_agent``, else the workflow defaults); they are never computed by the Monitor.
"""

from __future__ import annotations

import importlib
import sqlite3
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from langchain_core.messages import BaseMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from liveguard.model import Step, Trajectory  # noqa: E402
from liveguard.readers.jsonl import write_jsonl  # noqa: E402
from liveguard.readers.stream import steps_from_updates  # noqa: E402
from liveguard.testing import trajectory  # noqa: E402

OUT = ROOT / "golden_datasets"
GRAPHS: tuple[str, ...] = ("campaign", "coder_reviewer", "sql_agent")
POLICY: dict[str, str] = {"sql_agent": "tool_agent"}
"""Policy preset per graph (metadata ``policy``); graphs not listed use the workflow defaults."""

MESSAGE_KEYS: tuple[str, ...] = (
    "type", "content", "name", "tool_calls", "invalid_tool_calls", "tool_call_id", "status",
)
"""Message fields kept in the datasets (no ``id``, ``response_metadata``, ``usage_metadata``)."""

# Hand-written verdicts: (passed, hard codes). Reasoned from rules/*.py, policy.py defaults
# (window 24, max_revisits 3, stall 2, repeat 3 in 10, cycle_repeats 2, tool_repeats 3 in 6,
# 2 when "retryable": false, max_visits 4) and each graph's allow-set (limits override both
# max_revisits and max_visits of their node; tool_agent exempts model/tools from revisits).
EXPECTED: dict[str, dict[str, tuple[bool, list[str]]]] = {
    "campaign": {
        # Every revisit writes new content; compose 2/3, gate 2/4, check_reply 3/10 visits;
        # every hop is in the allow-set; the run ends on check_reply (-> __end__ allowed).
        "healthy": (True, []),
        # 12 identical check_reply polls: stall at the 2nd, repeat at the 3rd, and the 11th
        # visit crosses check_reply's limit 10 (revisits in the 24-step window and total).
        # Period-1 repetition is not a content_cycle (a shorter period explains it).
        "looping": (False, ["excessive_loop", "no_progress_stall", "node_revisit_cycle",
                            "repeated_content"]),
        # 6 identical (compose, gate) rounds: period-2 message cycle at the 2nd round,
        # compose's 3rd identical draft in 10 message steps, compose crosses its limit 3
        # (4th visit) and gate the default 3 revisits / 4 visits.
        "ping_pong": (False, ["content_cycle", "excessive_loop", "node_revisit_cycle",
                              "repeated_content"]),
        # Two identical consecutive check_reply steps: a stall, nothing else.
        "stalled": (False, ["no_progress_stall"]),
        # compose_touch -> send_touch is not in the allow-set.
        "illegal_hop": (False, ["illegal_transition"]),
        # Ends on gate_draft (no edge to __end__): dead_end is soft, so the run passes.
        "dead_end": (True, []),
    },
    "coder_reviewer": {
        # coder -> coder is a legal self-retry with new content; coder 3/5, reviewer 2/4.
        "healthy": (True, []),
        # 8 rounds of new content: no content rule fires, but coder's 6th visit crosses its
        # limit 5 and reviewer's 5th its limit 4 (revisit window and total visits).
        "looping": (False, ["excessive_loop", "node_revisit_cycle"]),
        # 6 identical (coder, reviewer) rounds: cycle, repeat, and both limits crossed.
        "ping_pong": (False, ["content_cycle", "excessive_loop", "node_revisit_cycle",
                              "repeated_content"]),
        # Two identical consecutive coder steps (same code, same build error).
        "stalled": (False, ["no_progress_stall"]),
        # reviewer -> reviewer is not in the allow-set.
        "illegal_hop": (False, ["illegal_transition"]),
        # Ends on coder (no edge to __end__): soft dead_end only.
        "dead_end": (True, []),
    },
    "sql_agent": {
        # Two different calls (the failing one is not repeated), then an answer;
        # model 3/6, tools 2/5 visits; model/tools exempt from revisits (tool_agent).
        "healthy": (True, []),
        # 6 identical failing calls: the error says "retryable": false, so tool_no_progress
        # fires at the 2nd identical tool step; the (request, tool) block repeated 3 times
        # (run_sql's no_progress 3) is a content_cycle; tools' 6th visit crosses limit 5 and
        # model's 7th visit limit 6 (excessive_loop; revisits are exempt).
        "looping": (False, ["content_cycle", "excessive_loop", "tool_no_progress"]),
        # A, B, A, B, A, B failing calls: each query's 2nd non-retryable failure fires
        # tool_no_progress, the 4-step block repeats 3 times (content_cycle), and the
        # visit counts are the same as looping (excessive_loop).
        "ping_pong": (False, ["content_cycle", "excessive_loop", "tool_no_progress"]),
        # 4 identical successful polls returning "running": tool_no_progress at the 3rd,
        # content_cycle at the 3rd (request, tool) block; model 5/6, tools 4/5 visits.
        "stalled": (False, ["content_cycle", "tool_no_progress"]),
    },
}


def plain(value: Any) -> Any:
    """``value`` with every LangChain message as a plain dict without ids or provider metadata."""
    if isinstance(value, BaseMessage):
        dumped = value.model_dump()
        return {
            key: plain(dumped.get(key))
            for key in MESSAGE_KEYS
            if key in ("type", "content") or dumped.get(key) not in (None, [], {}, "")
        }
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def plain_step(step: Step) -> Step:
    return step.model_copy(
        update={
            "output": plain(step.output),
            "args": plain(step.args),
            "result": plain(step.result),
            "error": plain(step.error),
        }
    )


def record(graph_name: str, scenario: str) -> list[Step]:
    """Stream one scenario on a fresh graph with an in-memory SqliteSaver; return its steps."""
    module = importlib.import_module(f"graphs.{graph_name}")
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        compiled = module.build_graph(scenario, checkpointer=SqliteSaver(conn))
        config = {
            "recursion_limit": 100,
            "configurable": {"thread_id": f"{graph_name}-{scenario}"},
        }
        chunks = compiled.stream(module.initial_input(scenario), config, stream_mode="updates")
        steps = steps_from_updates(chunks)
    finally:
        conn.close()
    return [plain_step(step) for step in steps]


def graph_runs(graph_name: str) -> list[Trajectory]:
    module = importlib.import_module(f"graphs.{graph_name}")
    expected = EXPECTED[graph_name]
    scenarios: tuple[str, ...] = module.SCENARIOS
    if set(scenarios) != set(expected):
        msg = f"{graph_name}: EXPECTED covers {sorted(expected)}, the graph has {sorted(scenarios)}"
        raise SystemExit(msg)
    runs = []
    for scenario in scenarios:
        metadata: dict[str, Any] = {"scenario": scenario}
        if graph_name in POLICY:
            metadata["policy"] = POLICY[graph_name]
        runs.append(
            trajectory(
                f"{graph_name}-{scenario}",
                record(graph_name, scenario),
                graph=module.GRAPH_NAME,
                expected=expected[scenario],
                status="success",
                metadata=metadata,
            )
        )
    return runs


def main() -> int:
    OUT.mkdir(exist_ok=True)
    for graph_name in GRAPHS:
        path = OUT / f"{graph_name}.jsonl"
        write_jsonl(path, graph_runs(graph_name))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
