"""One process of the approval race tests (tests/test_approval_races.py).

``python tests/race_worker.py URL THREAD start``
    runs ``approval_graphs.build`` until the approval step interrupts.
``python tests/race_worker.py URL THREAD resume ANSWER_JSON [--look DIR] [--user-saver]``
    resumes with a plain ``Command(resume=ANSWER)`` (what a user's own code does). With
    ``--look DIR``: first checks that the thread waits for approval (the "is it pending?"
    lookup), then creates ``DIR/looked.ready`` and waits for ``DIR/looked.go``.
``--user-saver``: the saver is built the usual LangGraph way
(``PostgresSaver.from_conn_string(url)`` + ``setup()``), not by liveguard's opener.

Prints one JSON line: ``{"ok": true, "pending": bool, "sent": ...}``, ``{"conflict": "..."}``
or ``{"error": "<type>: ..."}``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langgraph.types import Command

import approval_graphs
from liveguard.live.approval import ApprovalConflict
from liveguard.live.checkpoints import open_saver


@contextlib.contextmanager
def _saver(url: str, user: bool) -> Iterator[Any]:
    if not user:
        with open_saver(url) as saver:
            yield saver
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver


def main(argv: list[str]) -> int:
    url, thread, what = argv[:3]
    user = "--user-saver" in argv
    look = argv[argv.index("--look") + 1] if "--look" in argv else None
    with _saver(url, user) as saver:
        graph = approval_graphs.build(checkpointer=saver)
        config: dict[str, Any] = {"configurable": {"thread_id": thread}}
        try:
            if what == "start":
                out = graph.invoke({}, config)
            else:
                if look is not None:
                    assert graph.get_state(config).interrupts, "not pending at lookup"
                    (Path(look) / "looked.ready").touch()
                    deadline = time.monotonic() + 120
                    while not (Path(look) / "looked.go").exists() and time.monotonic() < deadline:
                        time.sleep(0.002)
                out = graph.invoke(Command(resume=json.loads(argv[3])), config)
        except ApprovalConflict as exc:
            print(json.dumps({"conflict": str(exc)}))
            return 0
        except Exception as exc:
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
            return 0
    print(json.dumps({"ok": True, "pending": "__interrupt__" in out, "sent": out.get("sent")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
