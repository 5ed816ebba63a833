"""The curated surface: ``__all__`` is exactly the public names, and the core stays framework-free."""

from __future__ import annotations

import subprocess
import sys

import liveguard
from liveguard import errors


def test_all_is_exactly_the_public_names() -> None:
    public = {name for name in vars(liveguard) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(liveguard, name)).__name__ == "module"}
    assert len(set(liveguard.__all__)) == len(liveguard.__all__)
    assert set(liveguard.__all__) == public - modules


def test_error_hierarchy_is_rooted() -> None:
    assert issubclass(errors.NoProgressError, errors.LivenessError)
    assert issubclass(errors.FingerprintError, ValueError)
    assert issubclass(errors.SnapshotError, ValueError)
    for name in ("FingerprintError", "PolicyError", "TrajectoryReadError", "SnapshotError",
                 "LivenessError"):
        assert issubclass(getattr(errors, name), errors.LiveguardError)


def test_core_does_not_import_frameworks() -> None:
    """Importing the core (and running it) must not pull in langgraph, langchain, langsmith, openai."""
    code = (
        "import sys, liveguard, liveguard.cli\n"
        "from liveguard.testing import ping_pong\n"
        "liveguard.check_trajectory(ping_pong())\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain', 'langchain_core', 'langsmith', 'openai'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
