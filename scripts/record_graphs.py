"""Record every scenario of the target graphs into golden_datasets/.

Each scenario of ``graphs.campaign``, ``graphs.coder_reviewer`` and ``graphs.sql_agent``
runs on a fresh graph with a real ``SqliteSaver`` (in-memory SQLite) under a local run
collector, ``langchain_core``'s ``RunCollectorCallbackHandler``: the tracer builds the
same run tree LangSmith stores (one chain run per graph, one per node task, with the
chat model and tool runs inside). No tracing service is contacted
(``LANGSMITH_TRACING``/``LANGCHAIN_TRACING_V2`` are forced off).

Two files per graph:

* ``golden_datasets/<graph>.jsonl``: the root run converted with
  :func:`liveguard.readers.langsmith.run_to_trajectory`, with the run id ``<graph>-<scenario>``,
  metadata ``{"scenario", "policy"}`` and its hand-written expected verdict
  (:data:`EXPECTED`); no ``outcome`` (the root's outputs are in the export).
* ``golden_datasets/langsmith/<graph>.json``: the same root runs as a LangSmith-style
  JSON export (a list of root runs, ``child_runs`` nested; see
  :func:`liveguard.readers.langsmith.run_to_dict`). Random values are replaced by stable ones:
  every UUID (run ids, task ids in checkpoint namespaces, message ids) by a UUID5 of
  graph, scenario and order of first appearance; times by a synthetic clock (1 ms per
  run start/end, in tree order); ``dotted_order`` is rebuilt from both; the project
  (``session_id``) is a UUID5 of the graph name. The root run's metadata also carries
  ``graph`` and the ``expected`` verdict, so the export scores on its own. Package
  versions (``lc_versions``) are left out so a dependency bump does not churn the file.

The campaign graph's approval step (``approve_send``) never waits for a person here:
the recorder builds it with ``campaign.scripted_graph`` (a scripted ``approve`` and a fixed
audit clock), and the judges are off (every ``AGENT_EVAL_*`` judge variable and API key is
unset, so no key: ``no_api_key``; no ``AGENT_EVAL_AUTOAPPROVE``), so every scenario that
reaches the step records one ``approve_send`` visit: the verdict row it computed and its
audit record (codes and digests, never the draft). No judge is ever called.

Both outputs are byte-for-byte reproducible, and the script checks that the export
converts back to exactly the steps written to the JSONL file. Run from the repo root:
``python scripts/record_graphs.py [--out DIR]``.

The verdicts in :data:`EXPECTED` are reasoned from the rules with the graph's allow-set
(``expected_paths/<graph>.yaml``) and the run's policy preset (``tool_agent`` for
``sql_agent``, else the workflow defaults); they are never computed by the Monitor.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sqlite3
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# Never trace to a service: the collector below is the only tracer.
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"
# Never call a judge (no key), never auto-approve: the recording is the same on every machine.
for _name in ("AGENT_EVAL_AUTOAPPROVE", "AGENT_EVAL_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY",
              "AGENT_EVAL_BASE_URL", "AGENT_EVAL_MODEL", "LLM_KILL_SWITCH", "AGENT_EVAL_MAX_REVISITS",
              "AGENT_EVAL_LOOP_GUARD", "AGENT_EVAL_TRAJECTORY_ANOMALY", "AGENT_EVAL_CHECKPOINT_URL"):
    os.environ.pop(_name, None)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

from liveguard.core.model import Expected, Trajectory  # noqa: E402
from liveguard.readers.jsonl import write_jsonl  # noqa: E402
from liveguard.readers.langsmith import run_to_dict, run_to_trajectory  # noqa: E402

OUT = ROOT / "golden_datasets"
GRAPHS: tuple[str, ...] = ("campaign", "coder_reviewer", "sql_agent")
POLICY: dict[str, str] = {"sql_agent": "tool_agent"}
"""Policy preset per graph (metadata ``policy``); graphs not listed use the workflow defaults."""

EXPORT_NAMESPACE = uuid.UUID("5b0b7a4e-3c1d-4f55-9a51-6c6976656775")
"""UUID5 namespace of the stable ids in the LangSmith exports."""
EXPORT_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
"""Synthetic clock of the exports: scenario *i* of a graph starts at EPOCH + *i* hours."""
DROPPED_METADATA: frozenset[str] = frozenset({"lc_versions"})
UUID_RE = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

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


def metadata_for(graph_name: str, scenario: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"scenario": scenario}
    if graph_name in POLICY:
        metadata["policy"] = POLICY[graph_name]
    return metadata


def record(graph_name: str, scenario: str) -> Any:
    """Run one scenario on a fresh graph under a run collector; return the root run."""
    module = importlib.import_module(f"graphs.{graph_name}")
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    collector = RunCollectorCallbackHandler()
    try:
        # A graph with an approval step has a scripted variant: no person is asked while recording.
        build = getattr(module, "scripted_graph", module.build_graph)
        compiled = build(scenario, checkpointer=SqliteSaver(conn))
        config = {
            "recursion_limit": 100,
            "callbacks": [collector],
            "metadata": metadata_for(graph_name, scenario),
            "configurable": {"thread_id": f"{graph_name}-{scenario}"},
        }
        compiled.invoke(module.initial_input(scenario), config)
    finally:
        conn.close()
    if len(collector.traced_runs) != 1:
        raise SystemExit(f"{graph_name}-{scenario}: expected 1 root run, got {len(collector.traced_runs)}")
    return collector.traced_runs[0]


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%S%fZ")


def export_run(root: Any, graph_name: str, index: int, scenario: str, expected: Expected) -> dict[str, Any]:
    """The root run as a deterministic LangSmith-style export (see the module docstring)."""
    data = run_to_dict(root)
    clock = [EXPORT_EPOCH + timedelta(hours=index)]

    def tick() -> str:
        clock[0] += timedelta(milliseconds=1)
        return clock[0].isoformat()

    def retime(run: dict[str, Any]) -> None:
        run["start_time"] = tick()
        for child in run["child_runs"]:
            retime(child)
        run["end_time"] = tick()
        run["events"] = [
            {**event, "time": run["end_time"] if event.get("name") == "end" else run["start_time"]}
            for event in run.get("events") or []
        ]
        run["dotted_order"] = None  # rebuilt from the stable ids below
        metadata = (run.get("extra") or {}).get("metadata")
        if isinstance(metadata, dict):
            for key in DROPPED_METADATA:
                metadata.pop(key, None)

    retime(data)
    # Numbered in order of first appearance in the sorted-keys form (independent of the
    # payloads' key order); the export keeps the runs' own key order.
    stable: dict[bytes, bytes] = {}
    for match in UUID_RE.finditer(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)):
        old = match.group(0)
        if old not in stable:
            name = f"liveguard-golden/{graph_name}/{scenario}/{len(stable)}"
            stable[old] = str(uuid.uuid5(EXPORT_NAMESPACE, name)).encode()
    data = orjson.loads(UUID_RE.sub(lambda m: stable[m.group(0)], orjson.dumps(data)))

    def reorder(run: dict[str, Any], parent_order: str | None) -> None:
        start = datetime.fromisoformat(run["start_time"])
        own = f"{_stamp(start)}{run['id']}"
        run["dotted_order"] = f"{parent_order}.{own}" if parent_order else own
        run["trace_id"] = data["id"]
        run["session_id"] = str(uuid.uuid5(EXPORT_NAMESPACE, f"liveguard-golden/project/{graph_name}"))
        for child in run["child_runs"]:
            reorder(child, run["dotted_order"])

    reorder(data, None)
    metadata = data["extra"].setdefault("metadata", {})
    metadata["graph"] = graph_name
    metadata["expected"] = expected.model_dump(mode="json")
    return data


def graph_runs(graph_name: str) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    module = importlib.import_module(f"graphs.{graph_name}")
    expected = EXPECTED[graph_name]
    scenarios: tuple[str, ...] = module.SCENARIOS
    if set(scenarios) != set(expected):
        msg = f"{graph_name}: EXPECTED covers {sorted(expected)}, the graph has {sorted(scenarios)}"
        raise SystemExit(msg)
    runs: list[Trajectory] = []
    exports: list[dict[str, Any]] = []
    for index, scenario in enumerate(scenarios):
        passed, codes = expected[scenario]
        verdict = Expected(passed=passed, hard_codes=sorted(set(codes)))
        root = record(graph_name, scenario)
        converted = run_to_trajectory(root, graph=module.GRAPH_NAME, expected=verdict)
        if converted.status != "success":
            raise SystemExit(f"{graph_name}-{scenario}: the run ended with status {converted.status}")
        run = converted.model_copy(update={
            "run_id": f"{graph_name}-{scenario}",
            "metadata": metadata_for(graph_name, scenario),
            "outcome": None,
        })
        export = export_run(root, graph_name, index, scenario, verdict)
        if run_to_trajectory(orjson.loads(orjson.dumps(export))).steps != run.steps:
            raise SystemExit(f"{graph_name}-{scenario}: the export does not convert back to the same steps")
        runs.append(run)
        exports.append(export)
    return runs, exports


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output directory (default: golden_datasets/)")
    args = parser.parse_args(argv)
    out: Path = args.out
    (out / "langsmith").mkdir(parents=True, exist_ok=True)
    for graph_name in GRAPHS:
        runs, exports = graph_runs(graph_name)
        path = out / f"{graph_name}.jsonl"
        write_jsonl(path, runs)
        export_path = out / "langsmith" / f"{graph_name}.json"
        export_path.write_bytes(orjson.dumps(exports, option=orjson.OPT_INDENT_2) + b"\n")
        print(f"wrote {path} and {export_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
