"""A separate worker process for the approval tests: start a campaign thread, or resume one.

``python tests/approval_worker.py URL THREAD SCENARIO start``
    runs the scenario until the approval step interrupts (or the run ends).
``python tests/approval_worker.py URL THREAD SCENARIO resume ANSWER_JSON [READY GO] [CHECKPOINT_ID]``
    creates ``READY`` and waits until ``GO`` exists (so that several workers resume at
    the same moment), then resumes the thread with ``Command(resume=ANSWER)``; from the
    checkpoint ``CHECKPOINT_ID`` when given (a worker that loaded the interrupted
    checkpoint before another worker moved the thread on).

Prints one JSON line: ``{"ok": true, "pending": bool, "sent": ...}`` or
``{"conflict": "<message>"}``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langgraph.types import Command  # noqa: E402

from graphs import campaign  # noqa: E402
from liveguard.live.approval import ApprovalConflict  # noqa: E402
from liveguard.live.checkpoints import open_saver  # noqa: E402


def main(argv: list[str]) -> int:
    url, thread, scenario, what = argv[:4]
    with open_saver(url) as saver:
        graph = campaign.build_graph(scenario, checkpointer=saver)
        config: dict[str, Any] = {"configurable": {"thread_id": thread}, "recursion_limit": 100}
        try:
            if what == "start":
                out = graph.invoke(campaign.initial_input(scenario), config)
            else:
                answer = json.loads(argv[4])
                if len(argv) > 6 and argv[5] != "-":
                    Path(argv[5]).touch()
                    go = Path(argv[6])
                    deadline = time.monotonic() + 60
                    while not go.exists() and time.monotonic() < deadline:
                        time.sleep(0.001)
                if len(argv) > 7:
                    config["configurable"]["checkpoint_id"] = argv[7]
                out = graph.invoke(Command(resume=answer), config)
        except ApprovalConflict as exc:
            print(json.dumps({"conflict": str(exc)}))
            return 0
    print(json.dumps({"ok": True, "pending": "__interrupt__" in out, "sent": out.get("sent")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
