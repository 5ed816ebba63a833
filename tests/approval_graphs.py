"""A small graph around the approval step for the race tests: ``write -> gate -> send``.

``send`` really sends in these tests: every execution appends one line to the file named
by ``APPROVAL_SEND_LOG`` (the ground truth for "sent twice": the checkpoint shows only the
run that won). With ``APPROVAL_SEND_PAUSE=DIR`` the send creates ``DIR/sending.ready``
and waits for ``DIR/sending.go`` before sending, so a test can hold the winner inside its
send while another process resumes. ``write`` numbers its drafts (``draft 1``, ``draft 2``
after a rejection, ...).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph

from liveguard.live.approval import ApprovalState, approval_gate, approval_send

__all__ = ["State", "build", "parent_with_subgraph"]


class State(ApprovalState, total=False):
    draft: str
    sent: str
    summary: str
    steps: list[str]


def _wait_for(folder: str, name: str) -> None:
    base = Path(folder)
    (base / f"{name}.ready").touch()
    deadline = time.monotonic() + 120
    while not (base / f"{name}.go").exists() and time.monotonic() < deadline:
        time.sleep(0.002)


def send(state: State) -> dict[str, Any]:
    pause = os.environ.get("APPROVAL_SEND_PAUSE")
    if pause:
        _wait_for(pause, "sending")
    log = os.environ.get("APPROVAL_SEND_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {state['draft']}\n")
    return {"sent": state["draft"]}


def write(state: State) -> dict[str, Any]:
    return {"draft": f"draft {len(state.get('approvals') or []) + 1}"}


def build(checkpointer: Any = None) -> Any:
    """``write -> gate -> send``; a rejection goes back to ``write`` (a new, numbered draft)."""
    builder: Any = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("gate", approval_gate(send="send", revise="write", history_wait=2.0),
                     destinations=("send", "write"))
    builder.add_node("send", approval_send(send))
    builder.add_edge(START, "write")
    builder.add_edge("write", "gate")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=checkpointer)


def parent_with_subgraph(checkpointer: Any = None, rounds: int = 6) -> Any:
    """A parent that ping-pongs ``compose``/``review`` with identical updates ``rounds`` times,
    then calls a subgraph holding the approval step and the send."""
    inner: Any = StateGraph(State)
    inner.add_node("gate", approval_gate(send="send", history_wait=2.0), destinations=("send", END))
    inner.add_node("send", approval_send(send))
    inner.add_edge(START, "gate")
    inner.add_edge("send", END)

    def compose(state: State) -> dict[str, Any]:
        return {"draft": "v1: hello", "summary": "draft v1", "steps": [*state.get("steps", []), "c"]}

    def review(state: State) -> dict[str, Any]:
        return {"summary": "rejected v1: missing link", "steps": [*state.get("steps", []), "r"]}

    def route(state: State) -> str:
        return "outreach" if state.get("steps", []).count("r") >= rounds else "compose"

    builder: Any = StateGraph(State)
    builder.add_node("compose", compose)
    builder.add_node("review", review)
    builder.add_node("outreach", inner.compile())
    builder.add_edge(START, "compose")
    builder.add_edge("compose", "review")
    builder.add_conditional_edges("review", route, ["compose", "outreach"])
    builder.add_edge("outreach", END)
    return builder.compile(checkpointer=checkpointer)
