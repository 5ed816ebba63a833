"""The runnable examples in examples/: each runs in a subprocess from a foreign working directory.

Each script uses a scripted model (no key, no network), prints what happened and exits 0
only on the expected outcome; these tests check the exit and the lines that show it.
``examples/server_client.py`` needs a LangGraph server: tests/test_server.py runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BOUND = 300  # seconds per script, on two shared cores

CASES = {
    "agent_middleware.py": [
        "stopped: tool_no_progress at step 5 (node 'tools', seen 3 times); the tool ran 3 times",
        "the thread stays stopped: tool_no_progress at step 5",
    ],
    "guarded_graph.py": [
        "healthy poller finished: job nightly: done after 3 polls",
        "stopped: no_progress_stall at step 1 (node 'poll')",
        "still stopped (saved in checkpoints.sqlite): no_progress_stall",
        "cleared: no_progress_stall; the thread may run again",
    ],
    "approval_cli.py": [
        "held for a person: ['autoapprove_off', 'unjudged:no_api_key']",
        "asks: send_draft, allowed: approve, edit, reject",
        "allowed decisions: approve, edit, reject",
        "thread lead-17: approve by ana; finished",
        "liveguard: thread lead-17: not waiting for approval",
        "outbox: 1 message(s) sent",
    ],
    "ci_gate.py": [
        "scored 26 runs; 26 as expected; not as expected: []",
        "gate over every run: ROLLBACK (exit 4)",
        "gate over 5 healthy runs: PROMOTE (exit 0)",
    ],
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs_from_any_directory(script: str, tmp_path: Path) -> None:
    """The script exits 0 from a temp cwd, and its output shows the expected outcome."""
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=BOUND, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for line in CASES[script]:
        assert line in done.stdout.splitlines(), f"missing {line!r} in:\n{output}"
    assert list(tmp_path.iterdir()) == [], "an example wrote into the caller's working directory"


def test_every_example_is_run() -> None:
    """Each script in examples/ is run by this module or by tests/test_server.py."""
    library = {"server_graphs.py", "server_app.py"}  # loaded by the server, not run
    scripts = {p.name for p in EXAMPLES.glob("*.py")} - library
    assert scripts == {*CASES, "server_client.py"}
