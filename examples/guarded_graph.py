"""A StateGraph guarded by ``guard()``, with a SQLite checkpointer.

``poll`` checks a job and writes its status. When the job never changes, the poller writes
the same update again and again: the guard stops it (``no_progress_stall``), saves the stop
with the thread in the SQLite file, and every later call on the thread stops at once until
``liveguard.clear`` lifts it. The healthy look-alike (the status changes on every poll, then
the job finishes) runs to the end.

    python examples/guarded_graph.py [CHECKPOINTS.sqlite]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

import liveguard
from liveguard import NoProgressError
from liveguard.integrations.langgraph import guard


class PollState(TypedDict, total=False):
    job: str
    status: str
    polls: int


def poll(state: PollState) -> dict[str, Any]:
    if state["job"] == "stuck":
        return {"status": f"job {state['job']}: still queued"}  # the same update every time
    polls = state.get("polls", 0) + 1
    return {"polls": polls, "status": f"job {state['job']}: {'done' if polls == 3 else f'{polls * 33}%'}"}


def next_step(state: PollState) -> str:
    return END if state.get("status", "").endswith("done") else "poll"


def build_poller() -> Any:
    builder = StateGraph(PollState)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_conditional_edges("poll", next_step, ["poll", END])
    return builder


def main(path: Path) -> int:
    with SqliteSaver.from_conn_string(str(path)) as saver:
        app = guard(build_poller().compile(checkpointer=saver))

        healthy = app.invoke({"job": "nightly"}, {"configurable": {"thread_id": "nightly"}})
        print(f"healthy poller finished: {healthy['status']} after {healthy['polls']} polls")

        stuck = {"configurable": {"thread_id": "stuck"}}
        try:
            app.invoke({"job": "stuck"}, stuck)
            print("not stopped: the stuck poller was expected to loop")
            return 1
        except NoProgressError as exc:
            print(f"stopped: {exc.violation.code} at step {exc.violation.step} (node {exc.violation.node!r})")
        try:
            app.invoke({"job": "stuck"}, stuck)
            print("the stopped thread ran again")
            return 1
        except NoProgressError as exc:
            print(f"still stopped (saved in {path.name}): {exc.violation.code}")
        cleared = liveguard.clear(app, stuck)
        print(f"cleared: {cleared.code if cleared else None}; the thread may run again")
        return 0 if healthy["status"].endswith("done") and cleared is not None else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(Path(sys.argv[1])))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(main(Path(tmp) / "checkpoints.sqlite"))
