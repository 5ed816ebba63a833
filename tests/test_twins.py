"""Issue 29 item 4: sync and async one way. Every public sync I/O function has its async
twin, with the same parameters, and the twins agree (same results on real savers)."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from liveguard import NoProgressError
from liveguard.integrations.langgraph import guard
from liveguard.live.checkpoints import (
    aclaim,
    aindex_pending,
    amark_sent,
    aopen_saver,
    arelease,
    claim,
    index_pending,
    iter_index,
    mark_sent,
    open_saver,
    release,
)
from liveguard.live.threads import aclear, athread_status, clear, thread_status
from test_live_core import cfg, poll_graph

IO_MODULES = (
    "liveguard.live.checkpoints", "liveguard.live.threads", "liveguard.live.hitl", "liveguard.live.approval",
)
"""The modules of the live path (checkpointers, threads, holds, approvals)."""
IO_PARAMETERS = {"saver", "graph", "url"}
"""A public function taking one of these does I/O on a checkpointer or a graph."""
SYNC_ONLY = {
    ("liveguard.live.checkpoints", "iter_index"): "the CLI's read-only listing: it opens its own sync saver",
    ("liveguard.live.checkpoints", "has_checkpoints"): "the CLI's read-only check: its own sync saver",
    ("liveguard.live.approval", "read_thread"): "the approval step's reader, called in its own thread by "
                                           "both drivers of the step (its body, saver_history, is one)",
}


def sync_io_functions() -> list[tuple[str, str, Any]]:
    found = []
    for name in IO_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            fn = getattr(module, attr)
            if not inspect.isfunction(fn) or inspect.iscoroutinefunction(fn) or (attr.startswith("a") and (
                    attr[1:] in module.__all__)):
                continue
            params = set(inspect.signature(fn).parameters)
            if params & IO_PARAMETERS or attr in ("ask", "resume_approval"):
                found.append((name, attr, fn))
    return found


def test_every_public_sync_io_function_has_its_async_twin_with_the_same_parameters() -> None:
    functions = sync_io_functions()
    assert len(functions) >= 10
    for module_name, attr, fn in functions:
        if (module_name, attr) in SYNC_ONLY:
            continue
        module = importlib.import_module(module_name)
        twin = getattr(module, "a" + attr, None)
        assert twin is not None, f"{module_name}.{attr} has no async twin"
        assert "a" + attr in module.__all__
        ours = [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]
        theirs = [(p.name, p.kind) for p in inspect.signature(twin).parameters.values()]
        assert ours == theirs, f"{module_name}.{attr}: the twins' parameters differ"


# ----------------------------------------------------------------------------- they agree
def claims_flow(url: str) -> list[Any]:
    with open_saver(url) as saver:
        won = claim(saver, "t", "k", by="ann", action="approve", at="1")
        lost = claim(saver, "t", "k", by="bob", action="reject", at="2")
        index_pending(saver, "t", "k2", interrupt_id="i2", at="3", reasons=["r"], codes=["c"], error=None)
        mark_sent(saver, "t", "k", outcome="sent", at="4")
        release(saver, "t", "k")
        again = claim(saver, "t", "k", by="cy", action="edit", at="5")
        return [won, lost, again, list(iter_index(saver))]


async def aclaims_flow(url: str) -> list[Any]:
    async with aopen_saver(url) as saver:
        won = await aclaim(saver, "t", "k", by="ann", action="approve", at="1")
        lost = await aclaim(saver, "t", "k", by="bob", action="reject", at="2")
        await aindex_pending(saver, "t", "k2", interrupt_id="i2", at="3", reasons=["r"], codes=["c"],
                             error=None)
        await amark_sent(saver, "t", "k", outcome="sent", at="4")
        await arelease(saver, "t", "k")
        again = await aclaim(saver, "t", "k", by="cy", action="edit", at="5")
    with open_saver(url, create=False) as reader:
        return [won, lost, again, list(iter_index(reader))]


def test_the_claim_twins_agree_on_sqlite(tmp_path: Path) -> None:
    sync = claims_flow(f"sqlite:///{tmp_path / 'sync.sqlite'}")
    asynchronous = asyncio.run(aclaims_flow(f"sqlite:///{tmp_path / 'async.sqlite'}"))
    assert sync == asynchronous
    assert [c.won for c in sync[:3]] == [True, False, True]


def stopped(app: Any, thread: str) -> None:
    app.invoke({"topic": "a"}, cfg(thread))
    with pytest.raises(NoProgressError):
        app.invoke(None, app.update_state(app.get_state(cfg(thread)).config, {"topic": "a"},
                                          as_node="__start__"))


def test_clear_and_thread_status_twins_agree(tmp_path: Path) -> None:
    """The same stopped thread on SqliteSaver (sync) and AsyncSqliteSaver (async)."""
    conn = sqlite3.connect(tmp_path / "sync.sqlite", check_same_thread=False)
    app = guard(poll_graph(SqliteSaver(conn)))
    stopped(app, "s")
    sync = [thread_status(app, cfg("s")), clear(app, cfg("s")), thread_status(app, cfg("s"))]
    conn.close()

    async def scenario() -> list[Any]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")) as saver:
            aapp = guard(poll_graph(saver))
            await aapp.ainvoke({"topic": "a"}, cfg("s"))
            fork = await aapp.aupdate_state((await aapp.aget_state(cfg("s"))).config, {"topic": "a"},
                                            as_node="__start__")
            with pytest.raises(NoProgressError):
                await aapp.ainvoke(None, fork)
            return [await athread_status(aapp, cfg("s")), await aclear(aapp, cfg("s")),
                    await athread_status(aapp, cfg("s"))]

    asynchronous = asyncio.run(scenario())
    assert sync == asynchronous
    assert sync[0]["guard"]["stop"]["code"] == "no_progress_stall"
    assert sync[2]["guard"]["stop"] is None
