"""Exactly once under deterministic interleavings, the pending index, and exit 2 for database faults.

Real processes (tests/race_worker.py, the ``liveguard`` console script), real savers (a
SQLite file; the PostgreSQL server of tests/pg_server.py) and the small graph of
tests/approval_graphs.py, whose ``send`` logs every real execution to a file: that log, not
the checkpoint, shows a duplicate. Interleavings are fixed by pause hooks that wait on
files the test creates (``LIVEGUARD_PAUSE_DIR``, ``APPROVAL_SEND_PAUSE``, ``--look``), never
by sleeps.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.types import Command

import approval_graphs
from fake_openai import FakeOpenAI, free_port
from liveguard.cli import main
from liveguard.live.approval import ApprovalClaimError, ApprovalConflict
from liveguard.live.checkpoints import (
    CLAIMS_TABLE,
    PENDING_TABLE,
    ensure_tables,
    iter_index,
    open_saver,
)
from pg_server import postgres_url  # noqa: F401 - the throwaway PostgreSQL server fixture

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "race_worker.py"
LIVEGUARD = Path(sys.executable).with_name("liveguard")
GRAPH = "approval_graphs:build"
GOOD = {"score": 0.9, "confidence": 0.9, "reason": "fine"}
APPROVE_ANN = {"decisions": [{"type": "approve"}], "by": "ann"}
APPROVE_BOB = {"decisions": [{"type": "approve"}], "by": "bob"}


# -- helpers -----------------------------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'threads.sqlite'}"
    pg: str = request.getfixturevalue("postgres_url")
    return pg


@pytest.fixture
def thread(request: pytest.FixtureRequest) -> str:
    """A thread id of its own for each test (the PostgreSQL database is shared by the session)."""
    return "t-" + request.node.name.replace("[", "-").rstrip("]")


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def start(url: str, thread: str) -> str:
    """Run the graph until the approval step holds draft 1; return the interrupt id."""
    with open_saver(url) as saver:
        out = approval_graphs.build(saver).invoke({}, cfg(thread))
    (item,) = out["__interrupt__"]
    return str(item.id)


def worker(url: str, thread: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), url, thread, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def console(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([str(LIVEGUARD), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=TESTS, env={**os.environ, **(env or {})})


def result_of(proc: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-3000:]
    parsed: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return parsed


def wait_for(path: Path, *procs: subprocess.Popen[str]) -> None:
    """Wait until a paused process has created ``path`` (fails at once if one of them died)."""
    deadline = time.monotonic() + 120
    while not path.exists():
        for proc in procs:
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"process ended before {path.name}: {out[-2000:]} {err[-2000:]}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.005)


def sent_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out)
    return status, out.getvalue()


def head_next(url: str, thread: str) -> tuple[str, ...]:
    with open_saver(url) as saver:
        return tuple(approval_graphs.build(saver).get_state(cfg(thread)).next)


# -- 1. double send ----------------------------------------------------------------------------
def test_a_resumer_that_did_not_win_never_sends(url: str, thread: str, tmp_path: Path) -> None:
    """B looks the interrupt up, pauses; A approves and holds inside its send; B resumes the
    thread A moved on (its next node is the send). B must not send: one line in the send log."""
    start(url, thread)
    log, dir_a, dir_b = tmp_path / "sent.log", tmp_path / "a", tmp_path / "b"
    dir_a.mkdir()
    dir_b.mkdir()
    b = worker(url, thread, "resume", json.dumps(APPROVE_BOB), "--look", str(dir_b),
               env={"APPROVAL_SEND_LOG": str(log)})
    wait_for(dir_b / "looked.ready", b)
    a = worker(url, thread, "resume", json.dumps({"decisions": [{"type": "approve"}], "by": "ann"}),
               env={"APPROVAL_SEND_LOG": str(log), "APPROVAL_SEND_PAUSE": str(dir_a)})
    wait_for(dir_a / "sending.ready", a)
    deadline = time.monotonic() + 60
    while head_next(url, thread) != ("send",):  # A's approval checkpoint is stored
        assert time.monotonic() < deadline
        time.sleep(0.005)
    (dir_b / "looked.go").touch()
    late = result_of(b)
    (dir_a / "sending.go").touch()
    won = result_of(a)
    assert won.get("ok"), won
    assert won["sent"] == "draft 1", won
    assert "already decided (approve by ann" in late.get("conflict", ""), late
    assert len(sent_lines(log)) == 1, sent_lines(log)


def test_cli_paused_after_its_lookup_decides_nothing(url: str, thread: str, tmp_path: Path) -> None:
    """Two CLIs approve one interrupt; B pauses right after its "is it pending?" lookup and A
    finishes first. B exits 2 with one line and nothing is sent twice."""
    start(url, thread)
    log, pause = tmp_path / "sent.log", tmp_path / "pause"
    pause.mkdir()
    env = {"APPROVAL_SEND_LOG": str(log)}
    b = console("approvals", "approve", thread, "--by", "bob", "--graph", GRAPH, "--checkpoint", url,
                env={**env, "LIVEGUARD_PAUSE_DIR": str(pause)})
    wait_for(pause / "cli_looked_up.ready", b)
    a = console("approvals", "approve", thread, "--by", "ann", "--graph", GRAPH, "--checkpoint", url, env=env)
    _a_out, a_err = a.communicate(timeout=120)
    assert a.returncode == 0, a_err
    (pause / "cli_looked_up.go").touch()
    _b_out, b_err = b.communicate(timeout=120)
    assert b.returncode == 2, b_err
    assert len(b_err.strip().splitlines()) == 1
    assert "no longer pending" in b_err
    assert len(sent_lines(log)) == 1


# -- 2. a failed claim leaves no answer behind -------------------------------------------------
def _fail_claims(url: str, thread: str, on: bool) -> None:
    """Make the claim insert of ``thread`` fail (a real database error, raised by a trigger)."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url[len("sqlite:///"):])
        with conn:
            conn.execute("CREATE TABLE IF NOT EXISTS lg_fail (t TEXT)")
            conn.execute(f"CREATE TRIGGER IF NOT EXISTS lg_fail_claim BEFORE INSERT ON {CLAIMS_TABLE} "
                         "WHEN EXISTS (SELECT 1 FROM lg_fail WHERE t = NEW.thread_id) "
                         "BEGIN SELECT RAISE(ABORT, 'injected claim failure'); END")
            flip = "INSERT INTO lg_fail VALUES (?)" if on else "DELETE FROM lg_fail WHERE t = ?"
            conn.execute(flip, (thread,))
        conn.close()
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS lg_fail (t TEXT)")
        conn.execute("CREATE OR REPLACE FUNCTION lg_fail_fn() RETURNS trigger AS $$ BEGIN "
                     "IF EXISTS (SELECT 1 FROM lg_fail WHERE t = NEW.thread_id) THEN "
                     "RAISE EXCEPTION 'injected claim failure'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
        conn.execute(f"DROP TRIGGER IF EXISTS lg_fail_claim ON {CLAIMS_TABLE}")
        conn.execute(f"CREATE TRIGGER lg_fail_claim BEFORE INSERT ON {CLAIMS_TABLE} "
                     "FOR EACH ROW EXECUTE FUNCTION lg_fail_fn()")
        flip = "INSERT INTO lg_fail VALUES (%s)" if on else "DELETE FROM lg_fail WHERE t = %s"
        conn.execute(flip, (thread,))


def test_reject_after_a_failed_claim_sends_nothing(url: str, thread: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "sent.log"
    monkeypatch.setenv("APPROVAL_SEND_LOG", str(log))
    start(url, thread)
    _fail_claims(url, thread, on=True)
    with open_saver(url) as saver:
        graph = approval_graphs.build(saver)
        with pytest.raises(Exception) as failed:  # noqa: PT011 - its type is checked below
            graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "ann"}), cfg(thread))
        _fail_claims(url, thread, on=False)
        # A plain continue does not replay the approve whose claim failed.
        again = graph.invoke(None, cfg(thread))
        assert "sent" not in again, "the approve whose claim failed was replayed"
        assert again["__interrupt__"][0].value["action_requests"][0]["args"]["draft"] == "draft 1"
        out = graph.invoke(Command(resume={"decisions": [{"type": "reject"}], "by": "bob"}), cfg(thread))
        assert "sent" not in out
        assert [r["action"] for r in out["approvals"]] == ["reject"]
        assert out["__interrupt__"][0].value["action_requests"][0]["args"]["draft"] == "draft 2"
    assert isinstance(failed.value, ApprovalClaimError)
    assert "nothing was decided" in str(failed.value)
    assert sent_lines(log) == []


def test_cli_failed_claim_is_exit_2_and_a_later_reject_sends_nothing(
    url: str, thread: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "sent.log"
    monkeypatch.setenv("APPROVAL_SEND_LOG", str(log))
    monkeypatch.syspath_prepend(str(TESTS))
    start(url, thread)
    _fail_claims(url, thread, on=True)
    status, _ = cli("approvals", "approve", thread, "--by", "ann", "--graph", GRAPH, "--checkpoint", url)
    err = capsys.readouterr().err
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1
    assert "could not be recorded" in err
    _fail_claims(url, thread, on=False)
    status, text = cli("approvals", "reject", thread, "--by", "bob", "--graph", GRAPH, "--checkpoint", url)
    assert status == 0, capsys.readouterr().err
    assert text.strip() == f"thread {thread}: reject by bob; waiting for approval again"
    assert sent_lines(log) == []


def test_nul_in_by_on_postgres_is_exit_2_and_the_thread_is_not_stuck(
    postgres_url: str, thread: str, tmp_path: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    log = tmp_path / "sent.log"
    monkeypatch.setenv("APPROVAL_SEND_LOG", str(log))
    monkeypatch.syspath_prepend(str(TESTS))
    start(postgres_url, thread)
    argv = ("--graph", GRAPH, "--checkpoint", postgres_url)
    status, _ = cli("approvals", "approve", thread, "--by", "ann\x00x", *argv)
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert "by: contains a control character" in err
    # The library path: the answer is refused and asked again, nothing stored that replays.
    with open_saver(postgres_url) as saver:
        graph = approval_graphs.build(saver)
        out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "a\x00b"}), cfg(thread))
        assert "by: contains a control character" in out["__interrupt__"][0].value["error"]
    status, _ = cli("approvals", "approve", thread, "--by", "ann", *argv)
    assert status == 0, capsys.readouterr().err
    assert len(sent_lines(log)) == 1


# -- 3. the verdict covers the whole thread ----------------------------------------------------
@pytest.fixture
def judges(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    fake_openai.default_answer = dict(GOOD)
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AGENT_EVAL_API_KEY", "test-key")
    monkeypatch.setenv("AGENT_EVAL_MODEL", "fake-judge")
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    return fake_openai


def test_approval_in_a_subgraph_sees_the_parents_loop(judges: FakeOpenAI, tmp_path: Path) -> None:
    with open_saver(f"sqlite:///{tmp_path / 't.sqlite'}") as saver:
        looping = approval_graphs.parent_with_subgraph(saver, rounds=6).invoke({}, cfg("sub-loop"))
        healthy = approval_graphs.parent_with_subgraph(saver, rounds=1).invoke({}, cfg("sub-ok"))
    assert "sent" not in looping
    payload = looping["__interrupt__"][0].value
    hard = [r for r in payload["reasons"] if r.startswith("hard:")]
    assert hard, payload["reasons"]
    codes = {v["code"] for v in payload["verdict"]["violations"]}
    assert {r.split(":", 1)[1] for r in hard} <= codes
    # The healthy look-alike (one review round) is judged clean and sent without a person.
    assert healthy["sent"] == "v1: hello"
    assert healthy["approvals"][0]["actor"] == "auto"


# -- 5. a user's own PostgresSaver -------------------------------------------------------------
def test_users_own_postgres_saver_is_approved_from_another_process(
    postgres_url: str, tmp_path: Path  # noqa: F811
) -> None:
    db = f"lg_user_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    url = postgres_url.rsplit("/", 1)[0] + "/" + db
    log = tmp_path / "sent.log"
    env = {"APPROVAL_SEND_LOG": str(log)}
    held = result_of(worker(url, "own", "start", "--user-saver", env=env))
    assert held["pending"] is True
    done = result_of(worker(url, "own", "resume", json.dumps(APPROVE_ANN),
                            "--user-saver", env=env))
    assert done.get("ok"), done
    assert done["sent"] == "draft 1", done
    assert len(sent_lines(log)) == 1
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        ensure_tables(saver)  # idempotent: a second time changes nothing
        ensure_tables(saver)
        with saver.conn.cursor() as cur:
            cur.execute("SELECT claim_key, action FROM liveguard_approval_claims "
                        "WHERE claim_key NOT LIKE 'asked:%' ORDER BY claim_key")
            rows = [(r["claim_key"].split(":")[0], r["action"]) for r in cur.fetchall()]
    assert rows == [("send", "sent"), ("task", "approve")]


# -- 7. decisions pinned to an interrupt -------------------------------------------------------
def test_a_decision_pinned_to_a_stale_interrupt_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    url = f"sqlite:///{tmp_path / 't.sqlite'}"
    first = start(url, "pin")
    argv = ("--graph", GRAPH, "--checkpoint", url)
    status, _ = cli("approvals", "reject", "pin", "--by", "bob", "--interrupt", first, *argv)
    assert status == 0, capsys.readouterr().err
    status, shown = cli("approvals", "show", "pin", "--checkpoint", url)
    second = next(line.split()[1] for line in shown.splitlines() if line.startswith("interrupt:"))
    assert second != first
    # The second reject was meant for draft 1: refused, draft 2 untouched.
    status, _ = cli("approvals", "reject", "pin", "--by", "bob", "--interrupt", first, *argv)
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert f"interrupt {first} is not pending" in err
    with open_saver(url) as saver:
        state = approval_graphs.build(saver).get_state(cfg("pin"))
        assert [r["action"] for r in state.values["approvals"]] == ["reject"]
        assert state.interrupts[0].value["action_requests"][0]["args"]["draft"] == "draft 2"
    status, _ = cli("approvals", "approve", "pin", "--by", "ann", "--interrupt", second, *argv)
    assert status == 0, capsys.readouterr().err


# -- approvals list: the pending index ---------------------------------------------------------
def test_the_index_follows_interrupts_and_decisions(url: str, thread: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    interrupt_id = start(url, thread)
    with open_saver(url) as saver:
        rows = {r["thread_id"]: r for r in iter_index(saver)}
    assert rows[thread]["interrupt_id"] == interrupt_id
    assert rows[thread]["reasons"] == ["autoapprove_off", "unjudged:no_api_key"]
    status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert status == 0
    assert {r["thread_id"]: r["interrupt_id"] for r in json.loads(text)}[thread] == interrupt_id
    status, _ = cli("approvals", "approve", thread, "--by", "ann", "--graph", GRAPH, "--checkpoint", url)
    assert status == 0
    with open_saver(url) as saver:
        assert thread not in {r["thread_id"] for r in iter_index(saver)}
    status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert thread not in {r["thread_id"] for r in json.loads(text)}


def test_a_crash_between_index_and_interrupt_never_hides_a_pending_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The index row is written before LangGraph stores the interrupt: killed in between, the
    thread is listed (a superset); the checkpoint decides (show: not waiting); a re-run lists it once."""
    url = f"sqlite:///{tmp_path / 't.sqlite'}"
    pause = tmp_path / "pause"
    pause.mkdir()
    proc = worker(url, "crash", "start", env={"LIVEGUARD_PAUSE_DIR": str(pause)})
    wait_for(pause / "approval_indexed.ready", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert status == 0
    assert [r["thread_id"] for r in json.loads(text)] == ["crash"]
    status, _ = cli("approvals", "show", "crash", "--checkpoint", url)
    assert status == 2
    assert "not waiting for approval" in capsys.readouterr().err
    with open_saver(url) as saver:
        out = approval_graphs.build(saver).invoke(None, cfg("crash"))
    (item,) = out["__interrupt__"]
    status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert [(r["thread_id"], r["interrupt_id"]) for r in json.loads(text)] == [("crash", item.id)]
    # A database without the index (an older liveguard wrote it): list scans the checkpoints.
    conn = sqlite3.connect(url[len("sqlite:///"):])
    with conn:
        conn.execute(f"DROP TABLE {PENDING_TABLE}")
    conn.close()
    status, text = cli("approvals", "list", "--checkpoint", url, "--format", "json")
    assert [(r["thread_id"], r["interrupt_id"]) for r in json.loads(text)] == [("crash", item.id)]


# -- exit 2, never 70, for the environment's faults; reading never creates ---------------------
def _exit_2(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status, _ = cli(*argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1, err
    return err


def _corrupt(path: Path) -> None:
    """A real checkpoint database (held threads, the index) whose pages after the schema are garbage."""
    for n in range(3):
        start(f"sqlite:///{path}", f"c{n}")
    data = bytearray(path.read_bytes())
    assert len(data) > 8192
    data[4096:] = b"\xff" * (len(data) - 4096)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("case", ["directory", "proc", "garbage", "corrupt"])
def test_sqlite_faults_exit_2(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    path = {"directory": tmp_path, "proc": Path("/proc/self/status"),
            "garbage": tmp_path / "garbage.sqlite", "corrupt": tmp_path / "corrupt.sqlite"}[case]
    if case == "garbage":
        path.write_bytes(b"this is not a database\n" * 200)
    if case == "corrupt":
        _corrupt(path)
    url = f"sqlite:///{path}"
    for argv in (("list",), ("list", "--scan"), ("show", "t"),
                 ("approve", "t", "--by", "ann", "--graph", GRAPH)):
        _exit_2(capsys, "approvals", *argv, "--checkpoint", url)


def test_read_only_and_immutable_sqlite_files_exit_2_when_deciding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    folder = tmp_path / "ro"
    folder.mkdir()
    url = f"sqlite:///{folder / 't.sqlite'}"
    start(url, "ro")
    tried = []
    decide = ("approvals", "approve", "ro", "--by", "ann", "--graph", GRAPH, "--checkpoint", url)
    chattr = subprocess.run(["chattr", "+i", str(folder / "t.sqlite")], capture_output=True, check=False)
    if chattr.returncode == 0:
        try:
            tried.append("immutable")
            _exit_2(capsys, *decide)
            assert cli("approvals", "list", "--checkpoint", url)[0] == 0  # reading still works
        finally:
            subprocess.run(["chattr", "-i", str(folder / "t.sqlite")], check=True)
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(folder), str(folder)],
                             capture_output=True, check=False)
    if mounted.returncode == 0:
        try:
            tried.append("read-only mount")
            _exit_2(capsys, *decide)
            assert cli("approvals", "list", "--checkpoint", url)[0] == 0
        finally:
            subprocess.run(["umount", str(folder)], check=True)
    if not tried:
        pytest.skip("neither chattr +i nor a read-only bind mount is allowed here")


def _password_role(server: str) -> None:
    """A role that must give its password (scram), on the session's trust-everything server."""
    with psycopg.connect(server, autocommit=True) as conn:
        hba = Path(conn.execute("SHOW hba_file").fetchone()[0])  # type: ignore[index]
        rule = "host all lg_pw 127.0.0.1/32 scram-sha-256\n"
        text = hba.read_text(encoding="utf-8")
        if rule not in text:
            hba.write_text(rule + text, encoding="utf-8")  # first match wins: only lg_pw is affected
            conn.execute("SELECT pg_reload_conf()")
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'lg_pw'").fetchone() is None:
            conn.execute("CREATE ROLE lg_pw LOGIN PASSWORD 'right-password'")


def test_postgres_faults_exit_2(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    host = postgres_url.rsplit("@", 1)[1].split("/", 1)[0]
    _password_role(postgres_url)
    with psycopg.connect(f"postgresql://lg_pw:right-password@{host}/postgres"):
        pass  # the right password is accepted: the case below fails on the password alone
    cases = {
        "wrong password": f"postgresql://lg_pw:wrong@{host}/postgres",
        "unreachable": f"postgresql://postgres@127.0.0.1:{free_port()}/postgres",
        "no such database": f"postgresql://postgres@{host}/no_such_db",
        "no such role": f"postgresql://nobody:wrong@{host}/postgres",
        "malformed": "postgresql://postgres@127.0.0.1:notaport/postgres",
    }
    for name, url in cases.items():
        for argv in (("list",), ("show", "t")):
            err = _exit_2(capsys, "approvals", *argv, "--checkpoint", url)
            assert "postgresql" in err, (name, err)
            assert "wrong" not in err, "a password is never printed"


def test_reading_never_creates_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for url, where in ((f"sqlite:///{tmp_path / 'typo' / 'x.sqlite'}", tmp_path / "typo"),
                       ("sqlite:////nonexistent/x.sqlite", Path("/nonexistent"))):
        for argv in (("list",), ("show", "t")):
            err = _exit_2(capsys, "approvals", *argv, "--checkpoint", url)
            assert "no such file" in err
        assert not where.exists()


@pytest.fixture(autouse=True)
def _no_leaked_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIVEGUARD_PAUSE_DIR", raising=False)




def test_a_winner_that_dies_inside_its_send_is_never_repeated(tmp_path: Path) -> None:
    """The trade-off, pinned: the winner is killed after its ``sending`` row, before the send
    finished. Nobody sends again (at most once); a later resume is refused, naming the winner."""
    url = f"sqlite:///{tmp_path / 't.sqlite'}"
    start(url, "dies")
    pause, log = tmp_path / "pause", tmp_path / "sent.log"
    pause.mkdir()
    a = worker(url, "dies", "resume", json.dumps({"decisions": [{"type": "approve"}], "by": "ann"}),
               env={"APPROVAL_SEND_PAUSE": str(pause), "APPROVAL_SEND_LOG": str(log)})
    wait_for(pause / "sending.ready", a)
    a.send_signal(signal.SIGKILL)
    a.communicate(timeout=60)
    with open_saver(url) as saver:
        graph = approval_graphs.build(saver)
        with pytest.raises(ApprovalConflict, match="approve by ann"):
            graph.invoke(None, cfg("dies"))
        rows = saver.conn.execute(f"SELECT claim_key, decided_by, action FROM {CLAIMS_TABLE} "
                                  "WHERE thread_id = 'dies' AND claim_key NOT LIKE 'asked:%' "
                                  "ORDER BY claim_key").fetchall()
    assert [(key.split(":")[0], by, action) for key, by, action in rows] == [
        ("send", "ann", "sending"), ("task", "ann", "approve")]
    assert sent_lines(log) == []


def test_list_on_a_database_without_checkpoints_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).close()
    status, text = cli("approvals", "list", "--checkpoint", f"sqlite:///{path}")
    assert (status, text) == (0, "no pending approvals\n")
    assert path.stat().st_size == 0, "a read-only command wrote to the file"
