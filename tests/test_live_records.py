"""Issue 18 item 11 and the threads CLI: a damaged guard record, and ``liveguard threads``.

A damaged ``__liveguard__`` record (a malformed ``stop``, a list, ``None``) is a logged
``guard_error`` that keeps the thread stopped, never pydantic's error at the agent and
never a forgotten stop; ``clear`` (library, CLI, middleware) always works. The CLI takes
``--checkpoint URL`` (SQLite and a real PostgreSQL), keeps ``--sqlite`` as an alias, and
answers bad input with exit 2 and one line.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

import liveguard
from liveguard import NoProgressError
from liveguard.cli import main as cli_main
from liveguard.integrations.langchain import STATE_KEY, LivenessMiddleware
from liveguard.integrations.langgraph import THREAD_KEY, THREAD_NS, guard
from pg_server import postgres_url  # noqa: F401 - the throwaway PostgreSQL server fixture
from test_live_core import Scripted, cfg, lookup

HERE = Path(__file__).resolve().parent
STOP_ROW = "00000000-0000-0000-0000-000000000000"
"""The stop record's fixed checkpoint id (the same id the one-row record of old had)."""


class S(TypedDict, total=False):
    n: int
    notes: str


RAN: list[int] = []


def counter_graph(saver: Any) -> Any:
    """One node; each call adds a new note (a healthy call is never stopped by itself)."""
    def step(state: S) -> dict[str, Any]:
        RAN.append(1)
        n = state.get("n", 0) + 1
        return {"n": n, "notes": f"note {n}"}

    builder = StateGraph(S)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(checkpointer=saver)


def damage(saver: Any, thread: str, value: Any) -> None:
    """Write ``value`` as the thread's stop record, as a damaged database would hold it."""
    checkpoint = empty_checkpoint()
    checkpoint["id"] = STOP_ROW
    checkpoint["channel_values"] = {THREAD_KEY: value}
    checkpoint["channel_versions"] = {THREAD_KEY: "damaged"}
    saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": THREAD_NS}}, checkpoint,
              {"source": "update", "step": -1, "parents": {}}, {THREAD_KEY: "damaged"})


DAMAGED = {
    "malformed-stop": {"stop": {"code": 7, "step": "x"}, "held": False},
    "list": [1, 2, 3],
    "none": None,
}


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_a_damaged_record_keeps_the_thread_stopped_with_a_logged_guard_error(
        kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """Old guard: a malformed stop raised ValidationError at the agent; a list or None forgot it."""
    saver = InMemorySaver()
    app = guard(counter_graph(saver))
    app.invoke({"n": 0}, cfg("dmg"))
    damage(saver, "dmg", DAMAGED[kind])
    RAN.clear()
    with pytest.raises(NoProgressError) as stopped:
        app.invoke({"n": 0}, cfg("dmg"))
    assert stopped.value.violation.code == "guard_error"
    assert stopped.value.violation.detail == {"reason": "damaged_record"}
    assert RAN == []  # refused without running a node
    assert "code=guard_error reason=damaged_record" in caplog.text
    assert "7" not in caplog.text.split("reason=damaged_record")[1].split("\n")[0]  # no payload


@pytest.mark.parametrize("kind", sorted(DAMAGED))
def test_clear_always_works_on_a_damaged_record(kind: str) -> None:
    """Old guard: liveguard.clear raised the same ValidationError; the thread was stuck."""
    saver = InMemorySaver()
    app = guard(counter_graph(saver))
    app.invoke({"n": 0}, cfg("dmg-clear"))
    damage(saver, "dmg-clear", DAMAGED[kind])
    cleared = liveguard.clear(app, cfg("dmg-clear"))
    assert cleared is not None
    assert cleared.code == "guard_error"
    RAN.clear()
    app.invoke({"n": 0}, cfg("dmg-clear"))
    assert RAN == [1]
    assert liveguard.clear(app, cfg("dmg-clear")) is None


def test_the_middleware_keeps_a_damaged_stop_and_clear_lifts_it(caplog: pytest.LogCaptureFixture) -> None:
    """Old middleware: a malformed stop raised ValidationError on every invoke and in clear."""
    app = create_agent(Scripted(mode="lookup"), [lookup], checkpointer=InMemorySaver(),
                       middleware=[LivenessMiddleware()])
    app.invoke({"messages": [HumanMessage("first")]}, cfg("mw-dmg"))
    saved = dict(app.get_state(cfg("mw-dmg")).values[STATE_KEY])
    saved.update(stop={"code": None}, k=None)
    app.update_state(cfg("mw-dmg"), {STATE_KEY: saved}, as_node="model")
    with pytest.raises(NoProgressError) as stopped:
        app.invoke({"messages": [HumanMessage("second")]}, cfg("mw-dmg"))
    assert stopped.value.violation.code == "guard_error"
    assert "reason=damaged_record" in caplog.text
    cleared = liveguard.clear(app, cfg("mw-dmg"))
    assert cleared is not None
    assert cleared.code == "guard_error"
    out = app.invoke({"messages": [HumanMessage("third")]}, cfg("mw-dmg"))
    assert out["messages"][-1].content.startswith("found")


# -------------------------------------------------------------------------------- the CLI
CLI_MODULE = textwrap.dedent("""
    import sys
    sys.path[:0] = [{tests!r}]
    from langgraph.checkpoint.memory import InMemorySaver
    from liveguard.integrations.langgraph import guard
    import test_live_records as t
    graph = guard(t.counter_graph(InMemorySaver()))
    def factory():
        return graph
""")


@pytest.fixture
def cli_graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "records_app.py").write_text(CLI_MODULE.format(tests=str(HERE)))
    (tmp_path / "broken_app.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def stopped_thread(saver: Any, thread: str) -> None:
    app = guard(counter_graph(saver))
    app.invoke({"n": 0}, cfg(thread))
    damage(saver, thread, {"stop": {"code": 7}})


def test_threads_take_checkpoint_urls_and_keep_sqlite_as_an_alias(
        cli_graph: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = cli_graph / "t.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    stopped_thread(SqliteSaver(conn), "t1")
    conn.close()
    url = f"sqlite:///{db}"
    assert cli_main(["threads", "show", "records_app:graph", "--thread", "t1", "--checkpoint", url]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["guard"]["stop"]["code"] == "guard_error"
    assert shown["guard"]["steps"] == 1
    assert cli_main(["threads", "clear", "records_app:graph", "--thread", "t1", "--sqlite", str(db)]) == 0
    assert capsys.readouterr().out == "cleared guard_error at step 0\n"
    assert cli_main(["threads", "show", "records_app:graph", "--thread", "t1", "--checkpoint", url]) == 0
    assert json.loads(capsys.readouterr().out)["guard"]["stop"] is None


def test_threads_on_postgres(cli_graph: Path, postgres_url: str,  # noqa: F811
                             capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        stopped_thread(saver, "pg-1")
    args = ["records_app:graph", "--thread", "pg-1", "--checkpoint", postgres_url]
    assert cli_main(["threads", "show", *args]) == 0
    assert json.loads(capsys.readouterr().out)["guard"]["stop"]["code"] == "guard_error"
    assert cli_main(["threads", "clear", *args]) == 0
    assert capsys.readouterr().out == "cleared guard_error at step 0\n"
    bad = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    assert cli_main(["threads", "show", "records_app:graph", "--thread", "x", "--checkpoint", bad]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize(("case", "why"), [
    ("unknown-thread", "no checkpoint"),
    ("factory", "not a compiled graph"),
    ("garbage-file", "not a LangGraph checkpoint database"),
    ("missing-file", "no such checkpoint file"),
    ("import-error", "RuntimeError"),
    ("bad-scheme", "not supported"),
])
def test_threads_answer_bad_input_with_exit_2_and_one_line(
        cli_graph: Path, case: str, why: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Old CLI: an unknown thread printed nulls with exit 0; a factory or a garbage file: 70."""
    db = cli_graph / "ok.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    stopped_thread(SqliteSaver(conn), "known")
    conn.close()
    (cli_graph / "garbage.sqlite").write_bytes(b"\x00not sqlite at all" * 64)
    target, thread, where = "records_app:graph", "known", ["--sqlite", str(db)]
    if case == "unknown-thread":
        thread = "nobody"
    elif case == "factory":
        target = "records_app:factory"
    elif case == "garbage-file":
        where = ["--sqlite", str(cli_graph / "garbage.sqlite")]
    elif case == "missing-file":
        where = ["--checkpoint", f"sqlite:///{cli_graph / 'nope' / 'x.sqlite'}"]
    elif case == "import-error":
        target = "broken_app:graph"
    else:
        where = ["--checkpoint", "mysql://x"]
    assert cli_main(["threads", "show", target, "--thread", thread, *where]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert why in err[0]
    assert not (cli_graph / "nope").exists()  # reading never creates


def test_the_lineage_and_the_stop_on_postgres(postgres_url: str) -> None:  # noqa: F811
    """PostgresSaver keeps channel values by version and never overwrites one: each record
    write has its own, so a fork reads its own windows and a cleared stop stays cleared."""
    from langgraph.checkpoint.postgres import PostgresSaver

    from test_live_core import poll_graph

    with PostgresSaver.from_conn_string(postgres_url) as saver:
        saver.setup()
        app = guard(poll_graph(saver))
        app.invoke({"topic": "a"}, cfg("pg-lineage"))
        after_a = app.get_state(cfg("pg-lineage")).config
        app.invoke({"topic": "b"}, cfg("pg-lineage"))
        fork = app.update_state(after_a, {"topic": "a"}, as_node="__start__")
        with pytest.raises(NoProgressError) as stopped:
            app.invoke(None, fork)
        assert stopped.value.violation.code == "no_progress_stall"
        with pytest.raises(NoProgressError):  # the thread stays stopped
            app.invoke({"topic": "c"}, cfg("pg-lineage"))
        assert liveguard.clear(app, cfg("pg-lineage")) == stopped.value.violation
        assert app.invoke({"topic": "c"}, cfg("pg-lineage"))["notes"] == "running c"
