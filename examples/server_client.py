"""liveguard behind the LangGraph server, driven with ``langgraph_sdk``.

Serves ``langgraph.json`` with ``langgraph dev`` (or uses ``--url`` of a running server), then:

1. runs the guarded poller on a stuck job: the run fails with ``NoProgressError``, and the
   error's message carries the code and the step;
2. runs it again on the same thread: it stops at once (a stopped thread stays stopped);
3. clears the thread with the ``POST /liveguard/threads/{id}/clear`` route (``server_app.py``);
4. runs the campaign: its draft is held for a person (a pending interrupt in the thread
   state), then answers it with LangChain's HITL decisions (``command={"resume": ...}``)
   and checks that the draft was sent once.

    pip install 'langgraph-cli[inmem]'      # part of liveguard's dev extra
    python examples/server_client.py [--url http://127.0.0.1:2024]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

HERE = Path(__file__).resolve().parent


@contextlib.contextmanager
def langgraph_dev(bound: float = 180.0) -> Iterator[str]:
    """``langgraph dev`` on 127.0.0.1 and a free port, until the block ends."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([str(Path(sys.executable).parent / "langgraph"), "dev", "--host", "127.0.0.1",
                             "--port", str(port), "--no-browser", "--no-reload"],
                            cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + bound
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"langgraph dev did not start (exit {proc.poll()})")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def drive(url: str) -> int:
    with get_sync_client(url=url, timeout=120.0) as client:
        def run(thread_id: str, graph_id: str, **kwargs: Any) -> Any:
            created = client.runs.create(thread_id, graph_id, **kwargs)
            return client.runs.join(thread_id, created["run_id"])

        thread_id = client.threads.create()["thread_id"]
        first = run(thread_id, "guarded", input={"job": "stuck"})
        print(f"guarded poller: {first['__error__']['error']}: {first['__error__']['message']}")
        again = run(thread_id, "guarded", input={"job": "stuck"})
        print(f"second run on the thread: {again['__error__']['message']} (stopped at once)")
        cleared = httpx.post(f"{url}/liveguard/threads/{thread_id}/clear",
                             json={"assistant_id": "guarded"}, timeout=120.0).json()["cleared"]
        print(f"cleared through the server: {cleared['code']} at step {cleared['step']}")

        thread_id = client.threads.create()["thread_id"]
        run(thread_id, "campaign", input={"lead_id": 17, "lead_name": "Ada Park", "steps": []})
        thread = client.threads.get(thread_id)
        (held,) = [i["value"] for items in thread["interrupts"].values() for i in items]
        print(f"campaign: {thread['status']}, draft held for a person: {held['reasons']}; "
              f"asks {held['action_requests'][0]['name']} "
              f"({', '.join(held['review_configs'][0]['allowed_decisions'])})")
        done = run(thread_id, "campaign",
                   command={"resume": {"decisions": [{"type": "approve"}], "by": "ana", "note": "ok"}})
        sends = done.get("steps", []).count("send_touch")
        print(f"approved by ana through the SDK: sent {sends} time(s); thread "
              f"{client.threads.get(thread_id)['status']}")
        return 0 if sends == 1 and "no_progress" in first["__error__"]["message"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="a running server (default: start langgraph dev)")
    url = parser.parse_args().url
    if url:
        return drive(url)
    with langgraph_dev() as started:
        return drive(started)


if __name__ == "__main__":
    sys.exit(main())
