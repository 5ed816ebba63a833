"""The CLI through its real console-script entry point: exit codes, JSONL schema, error rows."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fake_langsmith import FakeLangSmith
from fake_openai import FakeOpenAI
from liveguard.readers.jsonl import write_jsonl
from liveguard.testing import messages, ping_pong, repeated_tool_call, trajectory

EXE = Path(sys.executable).with_name("liveguard")  # the console script installed beside python


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script; ``cwd`` defaults to an empty directory (no ./expected_paths/)."""
    assert EXE.exists(), "the liveguard console script is not installed"
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, env=env, check=False,
                          cwd=cwd or NEUTRAL)


NEUTRAL = Path(tempfile.mkdtemp(prefix="liveguard-cwd-"))
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "a.jsonl", [
        trajectory("healthy", messages(("a", "1"), ("b", "2")), graph="g"),
        trajectory("pingpong", ping_pong(), graph="g"),
    ])
    write_jsonl(tmp_path / "b.jsonl", [
        trajectory("tool", repeated_tool_call(), metadata={"policy": "tool_agent"}),
    ])
    (tmp_path / "notes.txt").write_text("ignored")
    return tmp_path


def test_score_jsonl_schema(runs_dir: Path) -> None:
    proc = run("score", str(runs_dir), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["run_id"] for r in rows] == ["healthy", "pingpong", "tool"]
    assert [r["passed"] for r in rows] == [False, False, False]  # no key: unjudged, not passed
    assert rows[0]["provenance"]["reason"] == "unjudged"
    assert rows[0]["provenance"]["missing"] == ["judges_skipped:no_api_key"]
    structural = run("score", str(runs_dir), "--format", "jsonl", "--no-judges")
    srows = [json.loads(line) for line in structural.stdout.splitlines()]
    assert [r["passed"] for r in srows] == [True, False, False]
    assert srows[0]["provenance"]["reason"] == "structural_only"
    assert rows[1]["violations"] == [
        {"code": "content_cycle", "severity": "hard", "step": 3, "node": "reviewer", "count": 2}
    ]
    for row in rows:
        assert {"run_id", "graph", "passed", "score", "violations", "provenance"} <= set(row)
        assert row["provenance"]["prompt_version"]
    assert rows[0]["provenance"]["judges_skipped"] == "no_api_key"
    assert rows[1]["provenance"]["judges_skipped"] == "hard_violation"


def test_strict_exits_1_when_a_run_fails(runs_dir: Path) -> None:
    assert run("score", str(runs_dir / "a.jsonl"), "--strict").returncode == 1
    assert run("score", str(runs_dir / "a.jsonl")).returncode == 0


def test_unreadable_lines_are_error_rows_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"run_id": "ok", "steps": []}\n{"steps": 3}\n')
    proc = run("score", str(path), "--format", "jsonl")
    assert proc.returncode == 2
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == 2
    assert rows[0]["passed"] is False  # no steps: never a pass
    assert "no_steps" in rows[0]["provenance"]["missing"]
    assert rows[1]["source"] == f"{path}:2"
    assert rows[1]["passed"] is None
    assert "run_id" in rows[1]["error"]


def test_table_output_and_usage_errors(runs_dir: Path) -> None:
    proc = run("score", str(runs_dir))
    assert re.search(r"^FAIL .* pingpong ", proc.stdout, flags=re.M)
    assert "Judges skipped: hard_violation, no_api_key." in proc.stdout
    assert "content_cycle@3" in proc.stdout
    assert run("score").returncode == 2
    assert run("score", str(runs_dir), "--format", "xml").returncode == 2
    assert run("score", str(runs_dir / "empty")).returncode == 2


def test_bad_env_is_a_usage_error(runs_dir: Path) -> None:
    env = {**os.environ, "AGENT_EVAL_MAX_REVISITS": "lots"}
    proc = run("score", str(runs_dir), env=env)
    assert proc.returncode == 2
    assert "AGENT_EVAL_MAX_REVISITS" in proc.stderr


def test_score_with_judges_against_a_local_server(runs_dir: Path, fake_openai: FakeOpenAI) -> None:
    """The real CLI, the real openai client, a local OpenAI-compatible server; loops cost nothing."""
    fake_openai.default_answer = {"score": 0.9, "confidence": 0.7, "reason": "ok"}
    env = {**os.environ, "AGENT_EVAL_BASE_URL": fake_openai.base_url, "AGENT_EVAL_API_KEY": "k"}
    proc = run("score", str(runs_dir), "--format", "jsonl", "--jobs", "2", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["run_id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert rows["healthy"]["score"] == 0.9
    assert rows["healthy"]["provenance"]["judged"] is True
    assert rows["healthy"]["provenance"]["levels"]["trajectory"]["source"] == "judge:deepseek-chat"
    assert len(fake_openai.requests) == 2  # step + trajectory for the healthy run only
    off = run("score", str(runs_dir), "--format", "jsonl", "--no-judges", env=env)
    assert {json.loads(r)["provenance"]["judges_skipped"] for r in off.stdout.splitlines()} == {
        "structural_only"
    }
    assert len(fake_openai.requests) == 2


def test_gate_exit_codes_and_evidence(runs_dir: Path, tmp_path: Path) -> None:
    rollback = run("gate", str(runs_dir), "--min-runs", "1")
    assert rollback.returncode == 4
    assert rollback.stdout.startswith("ROLLBACK")
    assert "rollback evidence: pingpong: content_cycle@3" in rollback.stdout
    assert "judges skipped (no_api_key)" in rollback.stdout
    healthy = tmp_path / "healthy.jsonl"
    write_jsonl(healthy, [trajectory(f"h{i}", messages(("a", f"{i}"), ("b", "x"))) for i in range(3)])
    unjudged = run("gate", str(healthy), "--min-runs", "3")
    assert unjudged.returncode == 3, unjudged.stdout  # unjudged runs are missing evidence
    assert "missing: judges skipped (no_api_key): 3 run(s) unjudged" in unjudged.stdout
    assert run("gate", str(healthy), "--min-runs", "3", "--no-judges").returncode == 0
    hold = run("gate", str(healthy), "--min-runs", "5", "--no-judges")
    assert (hold.returncode, hold.stdout.split()[0]) == (3, "HOLD")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    assert run("gate", str(bad)).returncode == 2
    assert run("gate", str(healthy), "--window", "0").returncode == 2


def test_report_command_writes_a_self_contained_page(runs_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = run("report", str(runs_dir), "-o", str(out), "--min-runs", "1")
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "ROLLBACK" in html
    assert "pingpong" in html
    assert run("report", str(runs_dir), "-o", str(out), "--pass-rate", "2").returncode == 2


def test_score_a_langsmith_project_and_push_feedback(fake_langsmith: FakeLangSmith) -> None:
    """The online path through the real CLI and langsmith client, against the local stand-in."""
    env = {**os.environ, "LANGSMITH_ENDPOINT": fake_langsmith.url, "LANGSMITH_API_KEY": "test-key"}
    proc = run("score", "--langsmith-project", "campaign", "--paths", "expected_paths",
               "--format", "jsonl", "--push-feedback", env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    rows = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(rows) == 6
    assert {r["source"] for r in rows} == {"langsmith:campaign"}
    assert lines[-1] == "-- pushed 6 feedback row(s) to LangSmith"
    posted = {f["run_id"]: f for f in fake_langsmith.feedback}
    assert len(posted) == 6
    by_id = {r["run_id"]: r for r in rows}
    for run_id, feedback in posted.items():
        assert feedback["key"] == "liveness"
        hard = sorted({v["code"] for v in by_id[run_id]["violations"] if v["severity"] == "hard"})
        # feedback_for: liveness is the deterministic floor (hard codes), not the judged verdict
        assert (feedback["score"], feedback["comment"]) == (0 if hard else 1, ",".join(hard) or "ok")
    illegal = next(r for r in rows if r["violations"] and r["violations"][0]["code"] == "illegal_transition")
    assert posted[illegal["run_id"]]["comment"] == "illegal_transition"
    assert run("score", "--push-feedback", "x.jsonl").returncode == 2
    assert run("score").returncode == 2


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    """Every command path of the parser (``score``, ``approvals list``, ...)."""
    out: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                nested = _commands(child, f"{prefix}{name} ")
                out += nested or [f"{prefix}{name}"]
    return out


def test_top_level_help_is_plain_text_listing_every_command() -> None:
    """``liveguard --help``: every command and subcommand the parser has, and no reST markup."""
    from liveguard.cli import build_parser

    proc = run("--help")
    assert proc.returncode == 0, proc.stderr
    commands = _commands(build_parser())
    assert {"score", "gate", "report", "paths derive", "approvals edit", "threads clear"} <= set(commands)
    listed = [name for name in commands if re.search(rf"^  {re.escape(name)}\b", proc.stdout, re.M)]
    assert listed == commands
    assert not re.findall(r"``|:(?:class|mod|func|data|meth):", proc.stdout)
