"""The approval step's cost per visit: ``.venv/bin/python benchmarks/approval.py [--repeats N]``.

Runs the campaign graph's ``ping_pong`` scenario (13 steps before the approval step) on a
SQLite file until the approval step interrupts, with the judges off (``LLM_KILL_SWITCH=1``:
the deterministic floor only, no network), and times, per repeat:

* ``run``: the whole run to the interrupt (14 supersteps, checkpoints written);
* ``gate``: the approval node alone (history read of the thread's checkpoints, the eval
  graph in its own thread, the payload), from the node's own ``langgraph.node`` callbacks;
* ``resume``: approving the interrupt (the stored payload is reused, one claim row, the
  send and one poll).

Reports medians. A report, never a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["LLM_KILL_SWITCH"] = "1"
os.environ.pop("AGENT_EVAL_AUTOAPPROVE", None)

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langgraph.types import Command  # noqa: E402

from graphs import campaign  # noqa: E402
from liveguard.live.checkpoints import open_saver  # noqa: E402


class _NodeTimer(BaseCallbackHandler):
    def __init__(self) -> None:
        self.started: dict[Any, float] = {}
        self.spent: list[float] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        if kwargs.get("name") == "approve_send":
            self.started.setdefault(run_id, time.perf_counter())

    def _end(self, run_id: Any) -> None:
        if run_id in self.started:
            self.spent.append(time.perf_counter() - self.started.pop(run_id))

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        self._end(run_id)  # an interrupt ends the node with GraphInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    runs, resumes = [], []
    timer = _NodeTimer()
    with tempfile.TemporaryDirectory() as tmp, open_saver(f"sqlite:///{tmp}/bench.sqlite") as saver:
        graph = campaign.build_graph("ping_pong", checkpointer=saver)
        for i in range(args.repeats + 1):
            config: dict[str, Any] = {"configurable": {"thread_id": f"b{i}"}, "recursion_limit": 100,
                                      "callbacks": [timer]}
            t0 = time.perf_counter()
            held = graph.invoke(campaign.initial_input("ping_pong"), config)
            t1 = time.perf_counter()
            assert "__interrupt__" in held
            graph.invoke(Command(resume={"action": "approve", "by": "bench"}), {**config, "callbacks": []})
            t2 = time.perf_counter()
            if i:  # the first repeat warms up imports and the SQLite file
                runs.append(t1 - t0)
                resumes.append(t2 - t1)
    gate = timer.spent[1:]
    print(f"ping_pong on SQLite, judges off, {args.repeats} repeats (median):")
    print(f"  run to interrupt   {statistics.median(runs) * 1e3:8.1f} ms")
    print(f"  approval node      {statistics.median(gate) * 1e3:8.1f} ms  (history + eval graph + payload)")
    print(f"  approve + send     {statistics.median(resumes) * 1e3:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
