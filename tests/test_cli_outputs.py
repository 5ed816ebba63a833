"""Outputs CI can read (issue 28, cases 7 and 8).

Every output path the CLI cannot write is exit 2 with one line on stderr, never 70 ("a bug in
liveguard"): ``gate --junit``, ``report -o``, ``paths derive -o``. A run id, graph name or message
with a character XML 1.0 forbids (NUL, ``\\x01``, ``\\x0b``, ESC, a lone surrogate, ``\\uffff``)
leaves the JUnit file well-formed. The CLI runs in process (``liveguard.cli.main``) on a real
JSONL corpus (benchmarks/scale_corpus.py).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from benchmarks.scale_corpus import iter_runs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from liveguard.cli import main
from liveguard.cli.gate import junit_xml
from liveguard.cli.terminal import visible_xml
from liveguard.core.model import Verdict, Violation
from liveguard.evaluate.gate import decide
from liveguard.evaluate.rows import RunRow

FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0's Char production leaves out."""
NASTY = "run\x00one\x01\x0b\x1b[31m"


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """Exit status and the stderr lines of ``liveguard ARGS``, in process."""
    status = main(["--no-judges" if a == "@nj" else a for a in args], out=io.StringIO())
    return status, capsys.readouterr().err.splitlines()


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three healthy runs; the first has control characters in its run id and graph name."""
    monkeypatch.chdir(tmp_path)  # no ./expected_paths/
    for name in ("AGENT_EVAL_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    rows = list(iter_runs(3, loop_rate=0.0))
    rows[0]["run_id"] = NASTY
    rows[0]["graph"] = "graph\x00\x1b"
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def one_error_line(lines: list[str], flag: str) -> str:
    """The command's last stderr line names the output; no traceback, no 'internal error'."""
    assert lines, "nothing on stderr"
    assert not any("internal error" in line or "Traceback" in line for line in lines), lines
    assert lines[-1].startswith(f"liveguard: {flag} "), lines
    return lines[-1]


# -- case 7: exit 2, one line -----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["directory", "folder is a file", "below a file"])
def test_gate_junit_to_a_path_that_cannot_be_a_file_is_exit_2(
    runs: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Checked before scoring: the one line is the only line."""
    (runs.parent / "a-dir").mkdir()
    target = {"directory": "a-dir", "folder is a file": "runs.jsonl/out.xml",
              "below a file": "runs.jsonl/ci/out.xml"}[kind]
    status, lines = cli("gate", str(runs), "@nj", "--jobs", "1", "--junit", target, capsys=capsys)
    assert status == 2
    assert len(lines) == 1, lines
    one_error_line(lines, "--junit")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_gate_junit_that_fails_when_written_is_exit_2(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/full takes the open and refuses the write (no space left): found only at the write."""
    status, lines = cli("gate", str(runs), "@nj", "--jobs", "1", "--junit", "/dev/full", capsys=capsys)
    assert status == 2
    assert "cannot write" in one_error_line(lines, "--junit")


def test_report_to_a_directory_is_exit_2(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (runs.parent / "site").mkdir()
    status, lines = cli("report", str(runs), "@nj", "--jobs", "1", "-o", "site", capsys=capsys)
    assert status == 2
    assert len(lines) == 1, lines
    assert "is a directory" in one_error_line(lines, "-o")


def test_report_whose_page_cannot_be_written_is_exit_2(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A page's name taken by a folder: the write itself fails, after scoring."""
    (runs.parent / "out_pages" / "run-000001.html").mkdir(parents=True)
    status, lines = cli("report", str(runs), "@nj", "--jobs", "1", "-o", "out.html", capsys=capsys)
    assert status == 2
    assert "cannot write" in one_error_line(lines, "-o")


def test_paths_derive_to_a_directory_is_exit_2(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (runs.parent / "allow").mkdir()
    status, lines = cli("paths", "derive", "graphs.campaign:graph", "-o", "allow", capsys=capsys)
    assert status == 2
    one_error_line(lines, "-o")


# -- case 8: well-formed XML, no raw control characters in HTML -------------------------------
def test_gate_junit_with_control_characters_in_names_is_well_formed(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Written into a folder it creates (as ``report -o`` does)."""
    status, lines = cli("gate", str(runs), "@nj", "--jobs", "1", "--junit", "ci/out.xml", capsys=capsys)
    assert status == 3, lines  # HOLD: 3 runs, fewer than --min-runs
    raw = (runs.parent / "ci" / "out.xml").read_bytes()
    assert b"\x00" not in raw
    assert b"\x1b" not in raw
    suite = ET.fromstring(raw).find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "run\\x00one\\x01\\x0b\\x1b[31m"
    assert cases[0].get("classname") == "liveguard.graph\\x00\\x1b"


def test_report_keeps_no_raw_nul_or_esc(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, lines = cli("report", str(runs), "@nj", "--jobs", "1", "-o", "out.html", capsys=capsys)
    assert status == 0, lines
    pages = [runs.parent / "out.html", *sorted((runs.parent / "out_pages").glob("*.html"))]
    assert len(pages) > 2
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not FORBIDDEN.search(text), page.name
    overview = pages[0].read_text(encoding="utf-8")
    assert "run\\x00one\\x01\\x0b\\x1b[31m" in overview


def _verdict(run_id: str, graph: str, reason: str) -> Verdict:
    hit = Violation(code="tool_no_progress", step=3, severity="hard", node=reason, count=3)
    return Verdict(run_id=run_id, graph=graph, passed=False, violations=[hit], prompt_version="none",
                   reason=reason, judges_skipped="no_judges")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_id=st.text(max_size=30), graph=st.text(max_size=30), message=st.text(max_size=60),
       source=st.text(max_size=30))
def test_junit_is_well_formed_for_any_text(run_id: str, graph: str, message: str, source: str) -> None:
    """Whatever text a run carries (run id, graph, error, reason, source), the file parses and
    each name reads back as its visible form."""
    verdict = _verdict(run_id or "r", graph, message)
    rows = [RunRow(source or "s", run_id=run_id or "r", graph=graph, verdict=verdict),
            RunRow(f"{source}:2", run_id=None, graph=graph or None, error=message or None)]
    decision = decide([verdict], min_runs=1, unreadable=[f"{source}:2"])
    root = ET.fromstring(junit_xml(decision, rows))
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [visible_xml(run_id or "r"), visible_xml(f"{source}:2")]
    assert cases[0].get("classname") == visible_xml(f"liveguard.{graph or 'run'}")
    error = cases[1].find("error")
    assert error is not None
    assert error.get("message") == visible_xml(message or "not scored")


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_visible_xml_leaves_nothing_xml_forbids(text: Any) -> None:
    shown = visible_xml(text)
    assert not FORBIDDEN.search(shown)
    if not FORBIDDEN.search(text) and not re.search("[\x7f-\x9f]", text):
        assert shown == text  # ordinary text is untouched
