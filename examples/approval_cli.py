"""Draft-first approval with the CLI: the graph holds a draft, a person approves it from the shell.

``compose`` writes a draft; ``approve_send`` (``liveguard.live.approval.approval_gate``) evaluates
the thread and, because no judge is configured (so nothing can be auto-approved), holds the
draft with ``interrupt()``: its value is a LangChain ``HITLRequest`` (one ``send_draft`` action
with the draft in ``args``, a description, the allowed decisions), which Agent Chat UI and Agent
Inbox can answer too. The thread waits in the SQLite checkpointer. The script then runs what a
person would::

    liveguard approvals list --checkpoint sqlite:///PATH
    liveguard approvals show THREAD --checkpoint sqlite:///PATH
    liveguard approvals approve THREAD --by ana --graph approval_cli:graph --checkpoint sqlite:///PATH

(the CLI resumes with ``{"decisions": [{"type": "approve"}], "by": "ana", "note": ...}``, the
answer a review UI sends)
and the draft is sent exactly once (``send`` appends it to an outbox file). A second
approve finds nothing waiting and sends nothing.

    python examples/approval_cli.py            # from any directory
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from liveguard.live.approval import ApprovalState, approval_gate

HERE = Path(__file__).resolve().parent


class DraftState(ApprovalState, total=False):
    lead: str
    outbox: str  # the file `send` appends to
    draft: str


def compose(state: DraftState) -> dict[str, Any]:
    return {"draft": f"Hi {state['lead']}, the pricing sheet you asked for is attached."}


def send(state: DraftState) -> dict[str, Any]:
    with open(state["outbox"], "a", encoding="utf-8") as outbox:
        outbox.write(state["draft"] + "\n")
    return {}


def build_graph(checkpointer: Any = None) -> Any:
    builder = StateGraph(DraftState)
    builder.add_node("compose", compose)
    builder.add_node("approve_send", approval_gate(send="send", draft_key="draft", graph_name="outreach"),
                     destinations=("send", END))
    builder.add_node("send", send)
    builder.add_edge(START, "compose")
    builder.add_edge("compose", "approve_send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=checkpointer, name="outreach")


graph = build_graph()
"""What ``--graph approval_cli:graph`` loads; the CLI gives it the checkpointer."""


def liveguard_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``liveguard ARGS`` (as ``python -m liveguard.cli``), run here so ``--graph`` finds this module."""
    done = subprocess.run([sys.executable, "-m", "liveguard.cli", *args], cwd=HERE,
                          capture_output=True, text=True, check=False)
    print(f"$ liveguard {shlex.join(args)}\n{done.stdout}{done.stderr}".rstrip())
    return done


def main(tmp: Path) -> int:
    db, outbox = tmp / "checkpoints.sqlite", tmp / "outbox.txt"
    url = f"sqlite:///{db}"
    config = {"configurable": {"thread_id": "lead-17"}}
    with SqliteSaver.from_conn_string(str(db)) as saver:
        held = build_graph(saver).invoke({"lead": "Ada", "outbox": str(outbox)}, config)
    if "__interrupt__" not in held:
        print("not held: the draft was expected to wait for a person")
        return 1
    request = held["__interrupt__"][0].value
    print(f"held for a person: {request['reasons']}")
    (action,), (review,) = request["action_requests"], request["review_configs"]
    print(f"asks: {action['name']}, allowed: {', '.join(review['allowed_decisions'])}")
    listed = liveguard_cli("approvals", "list", "--checkpoint", url)
    shown = liveguard_cli("approvals", "show", "lead-17", "--checkpoint", url)
    approved = liveguard_cli("approvals", "approve", "lead-17", "--by", "ana", "--note", "looks good",
                             "--graph", "approval_cli:graph", "--checkpoint", url)
    twice = liveguard_cli("approvals", "approve", "lead-17", "--by", "ana",
                          "--graph", "approval_cli:graph", "--checkpoint", url)
    sent = outbox.read_text(encoding="utf-8").splitlines() if outbox.exists() else []
    print(f"outbox: {len(sent)} message(s) sent")
    ok = ("lead-17" in listed.stdout and "allowed decisions: approve, edit, reject" in shown.stdout
          and approved.returncode == 0 and twice.returncode != 0 and sent == [action["args"]["draft"]])
    return 0 if ok else 1


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp_dir:
        sys.exit(main(Path(tmp_dir)))
