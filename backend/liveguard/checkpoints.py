"""Durable LangGraph checkpointers from a URL, and the approval claims that make a send exactly-once.

``AGENT_EVAL_CHECKPOINT_URL`` (or ``--checkpoint``) names the saver:

``sqlite:///PATH``
    LangGraph's ``SqliteSaver`` (``AsyncSqliteSaver`` for async callers) on the file ``PATH``
    (relative to the working directory; ``sqlite:////abs/path`` for an absolute one). The
    embedded default, ``sqlite:///.liveguard/checkpoints.sqlite``, is used when nothing is set.
    Several processes on one machine may share the file.
``postgresql://...`` (or ``postgres://...``)
    LangGraph's ``PostgresSaver`` (``AsyncPostgresSaver``), so that worker processes on several
    machines share threads. Needs the ``langgraph-checkpoint-postgres`` and ``psycopg`` packages.

:func:`open_saver` / :func:`aopen_saver` open the saver, create its tables (LangGraph's own
``setup()`` plus one table of ours, ``liveguard_approval_claims``) and close it on exit.

Claims. Two workers resuming the same interrupted thread both re-run the approval node
from the same checkpoint: LangGraph has no compare-and-swap on a thread. So before the
approval step lets a person's decision through, it inserts one row keyed by
``(thread_id, claim_key)`` (the claim key is the interrupted task's id, the same for every
resumer of that interrupt and new for every later interrupt) into the same database as the
checkpoints: ``INSERT ... ON CONFLICT DO NOTHING``. The database's primary key decides: exactly
one resumer inserts the row and goes on to send; every other one reads the winner's row and
stops with :class:`~liveguard.approval.ApprovalConflict`. For an ``InMemorySaver`` (or any
other saver) the claim is process-local (a lock and a set), which is exact within one process.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from liveguard.errors import LiveguardError

__all__ = [
    "CHECKPOINT_URL_ENV",
    "CLAIMS_TABLE",
    "DEFAULT_CHECKPOINT_URL",
    "CheckpointURLError",
    "Claim",
    "aclaim",
    "aopen_saver",
    "checkpoint_url",
    "claim",
    "open_saver",
]

CHECKPOINT_URL_ENV = "AGENT_EVAL_CHECKPOINT_URL"
DEFAULT_CHECKPOINT_URL = "sqlite:///.liveguard/checkpoints.sqlite"
CLAIMS_TABLE = "liveguard_approval_claims"
SQLITE_TIMEOUT = 30.0
"""Seconds a SQLite connection waits for another process's write lock."""

_SQLITE_DDL = (
    f"CREATE TABLE IF NOT EXISTS {CLAIMS_TABLE} (thread_id TEXT NOT NULL, claim_key TEXT NOT NULL, "
    "decided_by TEXT NOT NULL, action TEXT NOT NULL, decided_at TEXT NOT NULL, "
    "PRIMARY KEY (thread_id, claim_key))"
)
_SQLITE_INSERT = (
    f"INSERT OR IGNORE INTO {CLAIMS_TABLE} (thread_id, claim_key, decided_by, action, decided_at) "
    "VALUES (?, ?, ?, ?, ?)"
)
_SQLITE_SELECT = (
    f"SELECT decided_by, action, decided_at FROM {CLAIMS_TABLE} WHERE thread_id = ? AND claim_key = ?"
)
_PG_DDL = _SQLITE_DDL
_PG_INSERT = (
    f"INSERT INTO {CLAIMS_TABLE} (thread_id, claim_key, decided_by, action, decided_at) "
    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
_PG_SELECT = _SQLITE_SELECT.replace("?", "%s")


class CheckpointURLError(LiveguardError, ValueError):
    """A checkpoint URL that names no supported saver."""


@dataclass(frozen=True)
class Claim:
    """Who decided an interrupt first. ``won`` is True for the caller that inserted the row."""

    won: bool
    decided_by: str
    action: str
    decided_at: str


def checkpoint_url(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``explicit``, else ``AGENT_EVAL_CHECKPOINT_URL``, else the embedded SQLite default."""
    env = os.environ if env is None else env
    for value in (explicit, env.get(CHECKPOINT_URL_ENV)):
        if value is not None and value.strip():
            return value.strip()
    return DEFAULT_CHECKPOINT_URL


def _kind(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres"
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise CheckpointURLError(
        f"checkpoint URL scheme {scheme!r} is not supported; use sqlite:///PATH or postgresql://..."
    )


def _sqlite_path(url: str) -> str:
    path = url[len("sqlite:///"):]
    if not path:
        raise CheckpointURLError("sqlite:/// URL names no file; use sqlite:///PATH")
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def open_saver(url: str | None = None) -> Iterator[Any]:
    """A ready sync saver for ``url`` (see :func:`checkpoint_url`), closed on exit."""
    url = checkpoint_url(url)
    if _kind(url) == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(_sqlite_path(url), check_same_thread=False, timeout=SQLITE_TIMEOUT)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            with saver.lock:
                conn.execute(_SQLITE_DDL)
                conn.commit()
            yield saver
        finally:
            conn.close()
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as pg_saver:
        pg_saver.setup()
        with pg_saver.lock, pg_saver.conn.cursor() as cur:  # type: ignore[union-attr]
            cur.execute(_PG_DDL)
        yield pg_saver


@asynccontextmanager
async def aopen_saver(url: str | None = None) -> AsyncIterator[Any]:
    """A ready async saver for ``url`` (``AsyncSqliteSaver`` / ``AsyncPostgresSaver``), closed on exit."""
    url = checkpoint_url(url)
    if _kind(url) == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        conn = await aiosqlite.connect(_sqlite_path(url), timeout=SQLITE_TIMEOUT)
        try:
            saver = AsyncSqliteSaver(conn)
            await saver.setup()
            async with saver.lock:
                await conn.execute(_SQLITE_DDL)
                await conn.commit()
            yield saver
        finally:
            await conn.close()
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(url) as pg_saver:
        await pg_saver.setup()
        async with pg_saver.lock, pg_saver.conn.cursor() as cur:  # type: ignore[union-attr]
            await cur.execute(_PG_DDL)
        yield pg_saver


# -- claims ------------------------------------------------------------------------------------
_LOCAL_LOCK = threading.Lock()
_LOCAL: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[str, str, str]]] = (
    weakref.WeakKeyDictionary()
)


def _local_claim(saver: Any, row: tuple[str, str, str, str, str]) -> Claim:
    thread_id, key, by, action, at = row
    with _LOCAL_LOCK:
        try:
            claims = _LOCAL.setdefault(saver, {})
        except TypeError:  # a saver that cannot be weakly referenced: key by identity
            claims = _LOCAL.setdefault(_Identity(saver), {})
        if (thread_id, key) in claims:
            return Claim(False, *claims[(thread_id, key)])
        claims[(thread_id, key)] = (by, action, at)
        return Claim(True, by, action, at)


class _Identity:
    _keep: list[Any] = []  # noqa: RUF012 - keeps the weak keys of unreferenceable savers alive

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        _Identity._keep.append(self)

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj


def _saver_kind(saver: Any) -> str:
    name = type(saver).__name__
    if name in ("SqliteSaver", "AsyncSqliteSaver"):
        return "sqlite"
    if name in ("PostgresSaver", "AsyncPostgresSaver", "ShallowPostgresSaver", "AsyncShallowPostgresSaver"):
        return "postgres"
    return "local"


def claim(saver: Any, thread_id: str, key: str, *, by: str, action: str, at: str) -> Claim:
    """Insert the claim row for ``(thread_id, key)``; return whether this caller won, and the winner."""
    row = (thread_id, key, by, action, at)
    if type(saver).__name__.startswith("Async") and getattr(saver, "loop", None) is not None:
        # An async saver used from a sync node (a worker thread): run the async claim on its loop.
        future = asyncio.run_coroutine_threadsafe(
            aclaim(saver, thread_id, key, by=by, action=action, at=at), saver.loop
        )
        result: Claim = future.result()
        return result
    kind = _saver_kind(saver)
    if kind == "sqlite":
        conn: sqlite3.Connection = saver.conn
        with saver.lock:
            conn.execute(_SQLITE_DDL)
            inserted = conn.execute(_SQLITE_INSERT, row).rowcount == 1
            conn.commit()
            got = conn.execute(_SQLITE_SELECT, (thread_id, key)).fetchone()
        return Claim(inserted, str(got[0]), str(got[1]), str(got[2]))
    if kind == "postgres":
        from langgraph.checkpoint.postgres import _internal

        with saver.lock, _internal.get_connection(saver.conn) as pg, pg.cursor() as cur:
            cur.execute(_PG_INSERT, row)
            inserted = cur.rowcount == 1
            cur.execute(_PG_SELECT, (thread_id, key))
            got = cur.fetchone()
        return Claim(inserted, *_pg_row(got))
    return _local_claim(saver, row)


async def aclaim(saver: Any, thread_id: str, key: str, *, by: str, action: str, at: str) -> Claim:
    """Async :func:`claim` for ``AsyncSqliteSaver`` / ``AsyncPostgresSaver`` (sync savers run in a thread)."""
    row = (thread_id, key, by, action, at)
    name = type(saver).__name__
    if name == "AsyncSqliteSaver":
        async with saver.lock:
            await saver.conn.execute(_SQLITE_DDL)
            cursor = await saver.conn.execute(_SQLITE_INSERT, row)
            inserted = cursor.rowcount == 1
            await saver.conn.commit()
            cursor = await saver.conn.execute(_SQLITE_SELECT, (thread_id, key))
            got = await cursor.fetchone()
        assert got is not None
        return Claim(inserted, str(got[0]), str(got[1]), str(got[2]))
    if name in ("AsyncPostgresSaver", "AsyncShallowPostgresSaver"):
        from langgraph.checkpoint.postgres import _ainternal

        async with saver.lock, _ainternal.get_connection(saver.conn) as pg, pg.cursor() as cur:
            await cur.execute(_PG_INSERT, row)
            inserted = cur.rowcount == 1
            await cur.execute(_PG_SELECT, (thread_id, key))
            got = await cur.fetchone()
        return Claim(inserted, *_pg_row(got))
    if _saver_kind(saver) == "local":
        return _local_claim(saver, row)
    return await asyncio.to_thread(claim, saver, thread_id, key, by=by, action=action, at=at)


def _pg_row(got: Any) -> tuple[str, str, str]:
    if isinstance(got, Mapping):
        return str(got["decided_by"]), str(got["action"]), str(got["decided_at"])
    return str(got[0]), str(got[1]), str(got[2])
