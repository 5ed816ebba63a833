"""Regenerate golden_datasets/ byte for byte (``make datasets``).

core.jsonl holds hand-scripted runs built with ``liveguard.testing``: each one is a
case the core Monitor must catch or must leave alone, with its expected verdict.
"""

from __future__ import annotations

import sys
from pathlib import Path

from liveguard.core.model import Step, Trajectory
from liveguard.readers.jsonl import write_jsonl
from liveguard.testing import (
    agent_turn,
    cycle,
    messages,
    ping_pong,
    poll,
    repeated_tool_call,
    tool_result_step,
    trajectory,
)

OUT = Path(__file__).resolve().parent.parent / "golden_datasets"
AGENT = {"policy": "tool_agent"}


def core_runs() -> list[Trajectory]:
    retry = [
        tool_result_step("fetch_page", {"url": "https://example.test/a"}, error=f"timeout after {s}s")
        for s in (5, 10, 20)
    ]
    healthy_agent: list[Step] = []
    for turn in range(12):
        healthy_agent += agent_turn("run_sql", {"query": f"SELECT {turn}"}, f"[[{turn}]]", turn=turn)
    return [
        trajectory(
            "core-healthy-workflow",
            messages(("plan", "plan v1"), ("draft", "draft v1"), ("review", "needs intro"),
                     ("draft", "draft v2"), ("review", "approved")),
            graph="core", expected=(True, []),
        ),
        trajectory("core-ping-pong", ping_pong(rounds=3), graph="core",
                   expected=(False, ["content_cycle", "repeated_content"])),
        trajectory("core-three-agent-cycle", cycle(["planner", "critic", "editor"], rounds=2),
                   graph="core", expected=(False, ["content_cycle"])),
        trajectory("core-stall", messages(("check_reply", "no reply"), ("check_reply", "no reply")),
                   graph="core", expected=(False, ["no_progress_stall"])),
        trajectory(
            "core-revisits",
            messages(*[("research", f"finding {i}") for i in range(4)]),
            graph="core", expected=(False, ["node_revisit_cycle"]),
        ),
        trajectory("core-failing-tool", repeated_tool_call(times=3), graph="core",
                   metadata=AGENT, expected=(False, ["tool_no_progress"])),
        trajectory("core-retry-changing-error", retry, graph="core", metadata=AGENT,
                   expected=(True, [])),
        trajectory("core-poll-completes", poll(["running", "running", "done"]), graph="core",
                   metadata=AGENT, expected=(True, [])),
        trajectory("core-poll-stuck", poll(["running"] * 3), graph="core", metadata=AGENT,
                   expected=(False, ["content_cycle", "tool_no_progress"])),
        trajectory("core-healthy-agent", healthy_agent, graph="core", metadata=AGENT,
                   expected=(True, [])),
    ]


def main() -> int:
    OUT.mkdir(exist_ok=True)
    write_jsonl(OUT / "core.jsonl", core_runs())
    print(f"wrote {OUT / 'core.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
