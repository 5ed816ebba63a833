"""Offline scoring and the release gate, as a CI job runs them (no key: structural only).

1. ``liveguard score golden_datasets/ --no-judges --format json``: every recorded run gets a
   verdict; the script checks each against the run's own ``expected`` block (the hard codes
   and pass/fail), which is a regression test of the detector.
2. ``liveguard gate`` over the same runs: ROLLBACK (exit 4), because some runs loop; a CI job
   fails on a non-zero exit.
3. ``liveguard gate`` over the healthy runs of graphs that have an allow-set: PROMOTE (exit 0);
   a graph without an allow-set is missing evidence, and the gate would HOLD (exit 3).

    python examples/ci_gate.py          # from any directory; reads the repository's golden_datasets/
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN, PATHS = ROOT / "golden_datasets", ROOT / "expected_paths"
EXIT_PROMOTE, EXIT_ROLLBACK = 0, 4


def liveguard(*args: str) -> subprocess.CompletedProcess[str]:
    """``liveguard ARGS`` (as ``python -m liveguard.cli``), one worker, no judges."""
    argv = [*args, "--paths", str(PATHS), "--no-judges", "--jobs", "1"]
    print(f"$ liveguard {shlex.join(argv)}")
    return subprocess.run([sys.executable, "-m", "liveguard.cli", *argv], capture_output=True, text=True,
                          check=False)


def main() -> int:
    files = sorted(GOLDEN.glob("*.jsonl"))
    runs = [json.loads(line) for path in files for line in path.read_text().splitlines() if line.strip()]
    expected = {run["run_id"]: run["expected"] for run in runs}

    scored = liveguard("score", *map(str, files), "--format", "json")
    wrong = []
    for row in json.loads(scored.stdout):
        hard = sorted({v["code"] for v in row["violations"] if v["severity"] == "hard"})
        want = expected[row["run_id"]]
        if (row["passed"], hard) != (want["passed"], sorted(want["hard_codes"])):
            wrong.append(row["run_id"])
    print(f"scored {len(expected)} runs; {len(expected) - len(wrong)} as expected; not as expected: {wrong}")

    gate = liveguard("gate", *map(str, files))
    print(f"gate over every run: {gate.stdout.splitlines()[0]} (exit {gate.returncode})")

    # healthy runs of graphs with an allow-set: a graph without one is missing evidence (HOLD)
    healthy = [run for run in runs
               if run["expected"]["passed"] and (PATHS / f"{run['graph']}.yaml").is_file()]
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "release.jsonl"
        release.write_text("".join(json.dumps(run) + "\n" for run in healthy))
        promote = liveguard("gate", str(release), "--min-runs", str(len(healthy)))
    verdict = promote.stdout.splitlines()[0]
    print(f"gate over {len(healthy)} healthy runs: {verdict} (exit {promote.returncode})")

    ok = not wrong and gate.returncode == EXIT_ROLLBACK and promote.returncode == EXIT_PROMOTE
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
