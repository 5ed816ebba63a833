"""The gate built for CI: JSON and JUnit output, report --fail-on, progress only on a terminal,
and the GitHub Actions job of docs/ci.md, run command by command through the console script."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml
from benchmarks.scale_corpus import iter_runs

EXE = Path(sys.executable).with_name("liveguard")  # the console script installed beside python
REPO = Path(__file__).resolve().parent.parent
ALLOW = """graph: scale_agent
transitions:
  __start__: [supervisor]
  supervisor: [model]
  model: [tools, __end__]
  tools: [model]
limits:
  model: 40
  tools: 40
"""


def env() -> dict[str, str]:
    """The environment with no judge key (structural decisions are asked for explicitly)."""
    drop = ("AGENT_EVAL_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "RAY_ADDRESS")
    return {k: v for k, v in os.environ.items() if k not in drop}


def workspace(root: Path, runs: list[dict[str, Any]]) -> Path:
    """``recorded_runs/runs.jsonl`` and ``expected_paths/scale_agent.yaml`` under ``root``."""
    (root / "recorded_runs").mkdir(parents=True)
    (root / "expected_paths").mkdir()
    (root / "expected_paths" / "scale_agent.yaml").write_text(ALLOW)
    with (root / "recorded_runs" / "runs.jsonl").open("w") as f:
        for run in runs:
            f.write(json.dumps(run) + "\n")
    return root


def looping_first(n: int, loops: int) -> list[dict[str, Any]]:
    """``loops`` looping runs first (the oldest, in input order), then ``n`` healthy ones."""
    looping = [r for r in iter_runs(200, loop_rate=0.5) if r["metadata"]["scenario"] == "looping"][:loops]
    healthy = list(iter_runs(n + 200, loop_rate=0.0))[200:]
    return looping + healthy


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert EXE.exists(), "the liveguard console script is not installed"
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, check=False, cwd=cwd,
                          env=env(), timeout=300)


# -- gate --format json, --window, --junit --------------------------------------------------------
def test_gate_json_states_decision_evidence_and_counts(tmp_path: Path) -> None:
    root = workspace(tmp_path, looping_first(60, 3))
    common = ("recorded_runs/", "--paths", "expected_paths/", "--no-judges", "--format", "json")
    every = cli("gate", *common, cwd=root)
    assert every.returncode == 4, every.stderr
    got = json.loads(every.stdout)
    assert got["decision"] == "ROLLBACK"
    assert got["exit_code"] == 4
    assert got["window"] is None
    assert got["counts"] == {"given": 63, "covered": 63, "passed": 60, "failed": 3, "left_out": 0,
                             "left_out_with_hard_findings": 0, "rollback": 3, "unreadable": 0}
    assert "tool_no_progress" in got["evidence"]["rollback_codes"]
    assert [e["run_id"] for e in got["evidence"]["rollback"]] == [r["run_id"] for r in looping_first(0, 3)]
    for entry in got["evidence"]["rollback"]:
        assert entry["hard"]
        assert all(re.fullmatch(r"[a-z_]+@\d+", hit) for hit in entry["hard"]), entry
        assert any(hit.startswith("tool_no_progress@") for hit in entry["hard"]), entry
    # The last 60 only: the three looping runs are left out, and hold the release.
    windowed = cli("gate", *common, "--window", "60", cwd=root)
    assert windowed.returncode == 3
    held = json.loads(windowed.stdout)
    assert held["decision"] == "HOLD"
    assert held["window"] == 60
    assert held["counts"]["covered"] == 60
    assert held["counts"]["left_out"] == 3
    assert held["counts"]["left_out_with_hard_findings"] == 3
    assert len(held["evidence"]["left_out_with_hard_findings"]) == 3
    assert "left out of the window (last 60) with hard findings" in held["reasons"][0]
    text = cli("gate", "recorded_runs/", "--paths", "expected_paths/", "--no-judges", "--window", "60",
               cwd=root)
    stated = "window: last 60 of 63 runs (covered: 60, left out: 3, 3 of them with hard findings)"
    assert stated in text.stdout
    assert text.stdout.count("left out with hard findings: scale-") == 3


def test_gate_junit_has_one_test_case_per_run(tmp_path: Path) -> None:
    root = workspace(tmp_path, looping_first(20, 2))
    with (root / "recorded_runs" / "runs.jsonl").open("a") as f:
        f.write('{"run_id": "broken", "steps": [\n')
    proc = cli("gate", "recorded_runs/", "--paths", "expected_paths/", "--no-judges", "--junit", "out.xml",
               cwd=root)
    assert proc.returncode == 2  # an unreadable run refuses the decision
    suite = ET.parse(root / "out.xml").getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == 23
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("23", "2", "1")
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failed) == {r["run_id"] for r in looping_first(0, 2)}
    for failure in failed.values():
        assert failure is not None
        assert failure.get("type") == "hard"
        message = failure.get("message") or ""
        assert re.fullmatch(r"[a-z_]+@\d+(, [a-z_]+@\d+)*", message), message
        assert "tool_no_progress@" in message
    errors = [c for c in cases if c.find("error") is not None]
    assert [c.get("file") for c in errors] == ["recorded_runs/runs.jsonl:23"]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["decision"] == "REFUSE"
    assert props["unreadable"] == "1"


@pytest.mark.parametrize(("loops", "decision"), [(2, "ROLLBACK"), (0, "PROMOTE")])
def test_report_fail_on_mirrors_the_gate(tmp_path: Path, loops: int, decision: str) -> None:
    root = workspace(tmp_path, looping_first(20, loops))
    common = ("recorded_runs/", "--paths", "expected_paths/", "--no-judges")
    gate = cli("gate", *common, cwd=root)
    assert gate.stdout.split()[0] == decision
    plain = cli("report", *common, "-o", "r.html", cwd=root)
    assert plain.returncode == 0, plain.stderr  # no --fail-on: written is success
    for fail_on in ("rollback", "hold"):
        proc = cli("report", *common, "-o", "r.html", "--fail-on", fail_on, cwd=root)
        assert proc.returncode == gate.returncode, (fail_on, proc.stderr)
        assert f"decision {decision}" in proc.stdout
    # A HOLD (too few runs) fails only --fail-on hold.
    hold = ("--min-runs", "1000")
    assert cli("gate", *common, *hold, cwd=root).returncode == (4 if loops else 3)
    if not loops:
        report = ("report", *common, *hold, "-o", "r.html", "--fail-on")
        assert cli(*report, "rollback", cwd=root).returncode == 0
        assert cli(*report, "hold", cwd=root).returncode == 3


# -- progress: a terminal gets it, a pipe never ---------------------------------------------------
def _stderr_of(args: list[str], cwd: Path, *, tty: bool) -> tuple[int, str]:
    """Run the console script with stderr on a pseudo-terminal (``tty``) or a pipe."""
    if not tty:
        proc = subprocess.run([str(EXE), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              cwd=cwd, env=env(), check=False, timeout=300)
        return proc.returncode, proc.stderr.decode(errors="replace")
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([str(EXE), *args], stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd,
                              env={**env(), "COLUMNS": "100"}, check=False, timeout=300)
    finally:
        os.close(slave)
    reader.join(timeout=30)
    os.close(master)
    return proc.returncode, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("command", ["score", "gate", "report"])
def test_progress_on_a_terminal_never_on_a_pipe(tmp_path: Path, command: str) -> None:
    root = workspace(tmp_path, looping_first(300, 0))
    args = [command, "recorded_runs/", "--paths", "expected_paths/", "--no-judges", "--jobs", "1",
            *(["-o", "r.html"] if command == "report" else [])]
    status, on_tty = _stderr_of(args, root, tty=True)
    assert status == 0, on_tty
    # tqdm's counter, drawn as it starts (later redraws depend on the clock): the command,
    # the runs counted so far, the elapsed time and a rate.
    assert re.search(rf"liveguard {command}: scoring: \d+ run \[\d\d:\d\d, [^\]]* run/s\]", on_tty), on_tty
    status, on_pipe = _stderr_of(args, root, tty=False)
    assert status == 0, on_pipe
    assert "scoring" not in on_pipe
    assert " run/s" not in on_pipe
    assert "\r" not in on_pipe
    assert "allow-sets: loaded 1" in on_pipe  # the pipe still gets the command's notes


# -- docs/ci.md: the GitHub Actions job, run -------------------------------------------------------
def ci_job() -> dict[str, Any]:
    text = (REPO / "docs" / "ci.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "docs/ci.md has one workflow"
    workflow = yaml.safe_load(blocks[0])
    jobs = workflow["jobs"]
    assert list(jobs) == ["gate"]
    job: dict[str, Any] = jobs["gate"]
    return job


def run_job(root: Path) -> list[tuple[str, int | None]]:
    """The job's ``run:`` steps in order, as a runner runs them (``bash -eo pipefail``): a
    failed step skips the later ones unless they say ``if: always()``. The install step is
    the test suite's own install: the console script beside this Python goes first on PATH."""
    path = f"{EXE.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    failed = False
    results: list[tuple[str, int | None]] = []
    for step in ci_job()["steps"]:
        if "run" not in step:
            assert step["uses"].split("@")[0] in (
                "actions/checkout", "actions/setup-python", "actions/upload-artifact")
            continue
        command = step["run"].strip()
        if command == "pip install .":
            continue
        if failed and step.get("if") != "always()":
            results.append((command, None))
            continue
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command], cwd=root,
                              env={**env(), "PATH": path}, capture_output=True, text=True, check=False,
                              timeout=300)
        results.append((command, proc.returncode))
        failed = failed or proc.returncode != 0
    return results


def artifact(root: Path) -> list[str]:
    paths = ci_job()["steps"][-1]["with"]["path"].split()
    return [p for p in paths if not (root / p).exists()]


def test_the_ci_job_of_the_docs_passes_on_healthy_runs(tmp_path: Path) -> None:
    root = workspace(tmp_path, looping_first(40, 0))
    results = run_job(root)
    assert [cmd.split()[1] for cmd, _ in results] == ["score", "gate", "report"]
    assert [status for _, status in results] == [0, 0, 0]
    assert artifact(root) == []
    assert json.loads((root / "gate.json").read_text())["decision"] == "PROMOTE"
    assert len((root / "scores.jsonl").read_text().splitlines()) == 40
    cases = ET.parse(root / "gate-junit.xml").getroot().iter("testcase")
    assert sum(1 for _ in cases) == 40
    assert (root / "report" / "index.html").is_file()
    assert len(list((root / "report" / "index_pages").glob("run-*.html"))) == 40


def test_the_ci_job_of_the_docs_fails_on_looping_runs_and_still_reports(tmp_path: Path) -> None:
    root = workspace(tmp_path, looping_first(40, 2))
    results = run_job(root)
    assert [status for _, status in results] == [0, 4, 0]  # the gate fails the job; the report runs
    assert artifact(root) == []
    gate = json.loads((root / "gate.json").read_text())
    assert (gate["decision"], gate["counts"]["rollback"]) == ("ROLLBACK", 2)
    assert 'data-decision="ROLLBACK"' in (root / "report" / "index.html").read_text()

