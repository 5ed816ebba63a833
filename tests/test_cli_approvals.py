"""``liveguard approvals``: list, show, approve, reject, edit on a real SQLite checkpoint file.

Threads are started with the campaign graph (no judges: the verdict is unjudged, so every
send waits for a person). The deciding commands run through the real console script in
another process, or through ``cli.main`` in this one.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphs import campaign
from liveguard.cli import main
from liveguard.live.checkpoints import (
    DEFAULT_CHECKPOINT_URL,
    CheckpointURLError,
    checkpoint_url,
    open_saver,
)

ROOT = Path(__file__).resolve().parent.parent
LIVEGUARD = Path(sys.executable).with_name("liveguard")
GRAPH = "graphs.campaign:build_graph"


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("AGENT_EVAL_CHECKPOINT_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'threads.sqlite'}"
    with open_saver(url) as saver:
        for thread, scenario in (("held-loop", "ping_pong"), ("held-ok", "healthy")):
            graph = campaign.build_graph(scenario, checkpointer=saver)
            graph.invoke(campaign.initial_input(scenario), {"configurable": {"thread_id": thread}})
        done = campaign.build_graph(
            "healthy", checkpointer=saver,
            approver=lambda p: {"decisions": [{"type": "approve"}], "by": "script"},
        )
        done.invoke(campaign.initial_input("healthy"), {"configurable": {"thread_id": "finished"}})
    return url


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out)
    return status, out.getvalue()


def console(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LIVEGUARD), *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=False)


def state(url: str, thread: str) -> dict[str, Any]:
    with open_saver(url) as saver:
        graph = campaign.build_graph("healthy", checkpointer=saver)
        values: dict[str, Any] = graph.get_state({"configurable": {"thread_id": thread}}).values
        return values


def test_list_shows_pending_threads_only(url: str) -> None:
    status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert status == 0
    rows = {row["thread_id"]: row for row in json.loads(text)}
    assert set(rows) == {"held-loop", "held-ok"}
    assert "hard:content_cycle" in rows["held-loop"]["reasons"]
    assert "content_cycle" in rows["held-loop"]["codes"]
    assert rows["held-ok"]["reasons"] == ["autoapprove_off", "unjudged:no_api_key"]
    assert all(row["at"] for row in rows.values())
    assert "draft" not in rows["held-ok"]
    status, table = cli("approvals", "list", "--checkpoint", url)
    assert status == 0
    assert table.splitlines()[0].split() == ["THREAD", "INTERRUPT", "WHEN", "REASONS", "CODES"]
    assert {line.split()[0] for line in table.splitlines()[1:]} == {"held-loop", "held-ok"}
    # The human-readable table names the interrupt a decision can be pinned to.
    assert {tuple(line.split()[:2]) for line in table.splitlines()[1:]} == {
        (thread, row["interrupt_id"]) for thread, row in rows.items()}


def test_show_gives_the_draft_and_verdict_to_the_person(url: str) -> None:
    """``show`` prints the HITL request: its description, the allowed decisions, the draft."""
    status, text = cli("approvals", "show", "held-loop", "--checkpoint", url, "--format", "json")
    assert status == 0
    shown = json.loads(text)
    assert shown["draft"].startswith("v1: Hi Ada Park")
    assert shown["verdict"]["passed"] is False
    assert shown["allowed_decisions"] == ["approve", "edit", "reject"]
    assert shown["description"].startswith("liveguard holds this draft for a person")
    assert "content_cycle" in shown["description"]
    status, table = cli("approvals", "show", "held-loop", "--checkpoint", url)
    assert status == 0
    assert "allowed decisions: approve, edit, reject\n" in table
    assert f"description:\n{shown['description']}\n" in table
    assert "draft:\nv1: Hi Ada Park" in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show", "nobody"], "thread nobody: unknown"),
        (["show", "finished"], "thread finished: not waiting for approval"),
        (["approve", "nobody", "--by", "ann", "--graph", GRAPH], "thread nobody: unknown"),
        (["approve", "finished", "--by", "ann", "--graph", GRAPH], "finished: not waiting for approval"),
        (["approve", "held-ok", "--by", "ann", "--graph", "graphs.campaign"], "expected MODULE:ATTR"),
        (["approve", "held-ok", "--by", "ann", "--graph", "graphs.nope:graph"], "cannot load"),
        (["approve", "held-ok", "--by", "ann", "--graph", "graphs.campaign:check_scenario"], "no arguments"),
        (["approve", "held-ok", "--by", "ann", "--graph", "graphs.campaign:GRAPH_NAME"], "not a compiled"),
        (["approve", "held-ok", "--by", " ", "--graph", GRAPH], "by: expected a non-empty string"),
        (["approve", "held-ok", "--by", "a\x1b[8mb", "--graph", GRAPH], "by: contains a control character"),
        (["edit", "held-ok", "--by", "a", "--graph", GRAPH, "--draft-file", "/no/f"], "--draft-file"),
    ],
)
def test_bad_requests_exit_2_with_one_line(
    url: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = cli("approvals", *argv, "--checkpoint", url)
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err
    assert "sent" not in state(url, "held-ok")


def test_deciding_needs_by(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = cli("approvals", "approve", "held-ok", "--graph", GRAPH, "--checkpoint", url)
    assert status == 2
    assert "--by" in capsys.readouterr().err


def test_bad_checkpoint_url_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = cli("approvals", "list", "--checkpoint", "mysql://x")
    assert status == 2
    assert "mysql" in capsys.readouterr().err
    with pytest.raises(CheckpointURLError), open_saver("redis://x"):
        pass


def test_approve_from_another_process_sends_once(url: str) -> None:
    done = console("approvals", "approve", "held-ok", "--by", "ann", "--note", "fine",
                   "--graph", GRAPH, "--checkpoint", url, "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["action"], result["by"], result["pending"]) == ("approve", "ann", False)
    values = state(url, "held-ok")
    assert values["sent"] == values["draft"]
    assert [(r["by"], r["note"]) for r in values["approvals"]] == [("ann", "fine")]
    again = console("approvals", "approve", "held-ok", "--by", "bob", "--graph", GRAPH, "--checkpoint", url)
    assert again.returncode == 2
    assert again.stderr.strip() == "liveguard: thread held-ok: not waiting for approval"
    _status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert [row["thread_id"] for row in json.loads(text)] == ["held-loop"]


def test_reject_then_edit(url: str, tmp_path: Path) -> None:
    # --graph names a compiled graph here (the module-level one, compiled without a checkpointer).
    status, text = cli("approvals", "reject", "held-ok", "--by", "bob", "--message", "too long",
                       "--note", "n", "--graph", "graphs.campaign:graph", "--checkpoint", url)
    assert status == 0
    assert text.strip() == "thread held-ok: reject by bob; waiting for approval again"
    assert "sent" not in state(url, "held-ok")
    (rejected,) = state(url, "held-ok")["approvals"]
    assert (rejected["action"], rejected["by"], rejected["note"], rejected["message"]) == (
        "reject", "bob", "n", "too long")
    draft = tmp_path / "draft.txt"
    draft.write_text("v9: Hi Ada, one line.", encoding="utf-8")
    status, text = cli("approvals", "edit", "held-ok", "--by", "cy", "--draft-file", str(draft),
                       "--graph", GRAPH, "--checkpoint", url)
    assert status == 0, text
    values = state(url, "held-ok")
    assert values["sent"] == "v9: Hi Ada, one line."
    assert [r["action"] for r in values["approvals"]] == ["reject", "edit"]


def test_checkpoint_url_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_EVAL_CHECKPOINT_URL", raising=False)
    assert checkpoint_url() == DEFAULT_CHECKPOINT_URL == "sqlite:///.liveguard/checkpoints.sqlite"
    monkeypatch.setenv("AGENT_EVAL_CHECKPOINT_URL", "postgresql://db/x")
    assert checkpoint_url() == "postgresql://db/x"
    assert checkpoint_url("sqlite:///a.db") == "sqlite:///a.db"
    monkeypatch.delenv("AGENT_EVAL_CHECKPOINT_URL")
    monkeypatch.chdir(tmp_path)
    status, text = cli("approvals", "list")
    assert (status, text) == (0, "no pending approvals\n")
    assert not (tmp_path / ".liveguard").exists(), "a read-only command created the default file"
