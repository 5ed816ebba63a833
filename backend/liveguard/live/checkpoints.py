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
``setup()`` plus two of ours, ``liveguard_approval_claims`` and ``liveguard_approvals_pending``)
and close it on exit; ``open_saver(url, create=False)`` opens for reading and creates nothing.
Any fault of the database (unreachable server, wrong password, unknown database, a SQLite path
that is a directory, under ``/proc``, not a database) is a one-line :class:`CheckpointOpenError`.
The approval step creates our tables itself (:func:`ensure_tables`), so a saver opened the usual
LangGraph way works too.

Claims. Two workers resuming the same interrupted thread both re-run the approval node
from the same checkpoint: LangGraph has no compare-and-swap on a thread. So before the
approval step lets a person's decision through, it inserts one row keyed by
``(thread_id, claim_key)`` (the claim key is the interrupted task's id, the same for every
resumer of that interrupt and new for every later interrupt) into the same database as the
checkpoints: ``INSERT ... ON CONFLICT DO NOTHING``. The database's primary key decides: exactly
one resumer inserts the row and goes on to send; every other one reads the winner's row and
stops with :class:`~liveguard.live.approval.ApprovalConflict`. The same table holds the send's
row (``send:<claim key>``: ``sending``, then ``sent``; see :func:`liveguard.live.approval.approval_send`).
For an ``InMemorySaver`` (or any other saver) the claim is process-local (a lock and a set),
which is exact within one process.

The pending index (``liveguard_approvals_pending``): one row per approval interrupt, upserted
by the approval step right before LangGraph stores the interrupt, deleted by the claim that
decides it; :func:`iter_index` lists the rows no claim has decided. The checkpoints stay
authoritative (the index is a superset: see ``docs/approval.md``).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from liveguard.core import _twin
from liveguard.core._twin import Op
from liveguard.errors import CheckpointOpenError, CheckpointURLError
from liveguard.settings import Settings, pause_dir

__all__ = [
    "CHECKPOINT_URL_ENV",
    "CLAIMS_TABLE",
    "DEFAULT_CHECKPOINT_URL",
    "PENDING_TABLE",
    "CheckpointOpenError",
    "CheckpointURLError",
    "Claim",
    "aclaim",
    "aensure_tables",
    "aindex_pending",
    "amark_sent",
    "aopen_saver",
    "arelease",
    "checkpoint_url",
    "claim",
    "ensure_tables",
    "has_checkpoints",
    "index_pending",
    "iter_index",
    "mark_sent",
    "open_saver",
    "pause_point",
    "release",
]

CHECKPOINT_URL_ENV = "AGENT_EVAL_CHECKPOINT_URL"
DEFAULT_CHECKPOINT_URL = "sqlite:///.liveguard/checkpoints.sqlite"
CLAIMS_TABLE = "liveguard_approval_claims"
PENDING_TABLE = "liveguard_approvals_pending"
SQLITE_TIMEOUT = 30.0
"""Seconds a SQLite connection waits for another process's write lock."""

_SQLITE_DDL = (
    f"CREATE TABLE IF NOT EXISTS {CLAIMS_TABLE} (thread_id TEXT NOT NULL, claim_key TEXT NOT NULL, "
    "decided_by TEXT NOT NULL, action TEXT NOT NULL, decided_at TEXT NOT NULL, "
    "PRIMARY KEY (thread_id, claim_key))"
)
_PENDING_DDL = (
    f"CREATE TABLE IF NOT EXISTS {PENDING_TABLE} (thread_id TEXT NOT NULL, claim_key TEXT NOT NULL, "
    "interrupt_id TEXT NOT NULL, at TEXT NOT NULL, reasons TEXT NOT NULL, codes TEXT NOT NULL, "
    "error TEXT, PRIMARY KEY (thread_id, claim_key))"
)
_PENDING_AT_INDEX = f"CREATE INDEX IF NOT EXISTS {PENDING_TABLE}_at ON {PENDING_TABLE} (at)"
_SQLITE_INSERT = (
    f"INSERT OR IGNORE INTO {CLAIMS_TABLE} (thread_id, claim_key, decided_by, action, decided_at) "
    "VALUES (?, ?, ?, ?, ?)"
)
_SQLITE_SELECT = (
    f"SELECT decided_by, action, decided_at FROM {CLAIMS_TABLE} WHERE thread_id = ? AND claim_key = ?"
)
_SQLITE_UNPEND = f"DELETE FROM {PENDING_TABLE} WHERE thread_id = ? AND claim_key = ?"
_SQLITE_UPDATE = f"UPDATE {CLAIMS_TABLE} SET action = ?, decided_at = ? WHERE thread_id = ? AND claim_key = ?"
_SQLITE_DELETE = f"DELETE FROM {CLAIMS_TABLE} WHERE thread_id = ? AND claim_key = ?"
_SQLITE_PEND = (
    f"INSERT INTO {PENDING_TABLE} (thread_id, claim_key, interrupt_id, at, reasons, codes, error) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, claim_key) DO UPDATE SET "
    "interrupt_id = excluded.interrupt_id, at = excluded.at, reasons = excluded.reasons, "
    "codes = excluded.codes, error = excluded.error"
)
_LIST = (
    f"SELECT p.thread_id, p.interrupt_id, p.at, p.reasons, p.codes, p.error FROM {PENDING_TABLE} p "
    f"WHERE NOT EXISTS (SELECT 1 FROM {CLAIMS_TABLE} c WHERE c.thread_id = p.thread_id "
    "AND c.claim_key = p.claim_key) ORDER BY p.at DESC, p.thread_id"
)
_PG_DDL = _SQLITE_DDL
_PG_INSERT = (
    f"INSERT INTO {CLAIMS_TABLE} (thread_id, claim_key, decided_by, action, decided_at) "
    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
_PG_SELECT = _SQLITE_SELECT.replace("?", "%s")
_PG_UNPEND = _SQLITE_UNPEND.replace("?", "%s")
_PG_UPDATE = _SQLITE_UPDATE.replace("?", "%s")
_PG_DELETE = _SQLITE_DELETE.replace("?", "%s")
_PG_PEND = _SQLITE_PEND.replace("?", "%s")


@dataclass(frozen=True)
class Claim:
    """Who decided an interrupt first. ``won`` is True for the caller that inserted the row."""

    won: bool
    decided_by: str
    action: str
    decided_at: str


def pause_point(name: str) -> None:
    """A test hook: with ``LIVEGUARD_PAUSE_DIR=DIR``, touch ``DIR/<name>.ready``, wait for ``DIR/<name>.go``.

    Deterministic interleavings of several processes (tests/test_approval_races.py): the test
    decides when each process goes on. Unset (always, outside tests), it does nothing.
    """
    folder = pause_dir()
    if folder is None:
        return
    base = Path(folder)
    (base / f"{name}.ready").touch()
    go = base / f"{name}.go"
    deadline = time.monotonic() + 120
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.002)


def checkpoint_url(explicit: str | None = None, settings: Settings | None = None) -> str:
    """``explicit``, else ``AGENT_EVAL_CHECKPOINT_URL``, else the embedded SQLite default.

    ``settings=None`` reads the environment once, here, through :class:`Settings` (this is
    the edge of :func:`open_saver` and :func:`aopen_saver`).
    """
    if explicit is not None and explicit.strip():
        return explicit.strip()
    configured = (settings if settings is not None else Settings.from_env()).checkpoint_url
    return configured.strip() if configured is not None else DEFAULT_CHECKPOINT_URL


def _kind(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "sqlite"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres"
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise CheckpointURLError(
        f"checkpoint URL scheme {scheme!r} is not supported; use sqlite:///PATH or postgresql://..."
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _sqlite_path(url: str, *, create: bool) -> str:
    path = url[len("sqlite:///"):]
    if not path:
        raise CheckpointURLError("sqlite:/// URL names no file; use sqlite:///PATH")
    if path == ":memory:":
        return path
    target = Path(path)
    if target.is_dir():
        raise CheckpointOpenError(f"{path}: is a directory, not a SQLite file")
    if str(target.resolve()).startswith(("/proc/", "/sys/", "/dev/")):
        raise CheckpointOpenError(f"{path}: not a regular file (under /proc, /sys or /dev)")
    if target.exists() and not target.is_file():
        raise CheckpointOpenError(f"{path}: not a regular file")
    if not create:
        return path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointOpenError(f"{path}: cannot create its directory ({_one_line(exc)})") from None
    return path


def _sqlite_connect(url: str, *, create: bool) -> sqlite3.Connection:
    path = _sqlite_path(url, create=create)
    try:
        if create or path == ":memory:":
            conn = sqlite3.connect(path, check_same_thread=False, timeout=SQLITE_TIMEOUT)
        else:
            uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=SQLITE_TIMEOUT)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # garbage fails here, not later
    except sqlite3.Error as exc:
        raise CheckpointOpenError(f"{path}: cannot open as a SQLite database ({_one_line(exc)})") from None
    return conn


def _pg_error(url: str, exc: BaseException) -> CheckpointOpenError:
    where = url.split("@", 1)[-1] if "@" in url else url.split("://", 1)[-1]
    return CheckpointOpenError(f"postgresql {where}: {_one_line(exc)}")


@contextmanager
def open_saver(url: str | None = None, *, create: bool = True, must_exist: bool = False) -> Iterator[Any]:
    """A ready sync saver for ``url`` (see :func:`checkpoint_url`), closed on exit.

    ``create=False`` (read-only commands) creates nothing: no directory, no file, no table;
    a SQLite file that does not exist raises :class:`CheckpointOpenError` (so does
    ``must_exist=True``, which still creates liveguard's tables in an existing file). Any database
    that cannot be reached, opened or read raises :class:`CheckpointOpenError` (one line).
    """
    url = checkpoint_url(url)
    if _kind(url) == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = url[len("sqlite:///"):]
        if (not create or must_exist) and path and path != ":memory:" and not Path(path).exists():
            raise CheckpointOpenError(f"{path}: no such file (nothing has been checkpointed there)")
        conn = _sqlite_connect(url, create=create)
        try:
            saver = SqliteSaver(conn)
            if create:
                _twin.run(_prepare(saver, url))
            else:
                saver.is_setup = True  # read-only: never run the DDL
            yield saver
        finally:
            conn.close()
        return
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    try:
        manager = PostgresSaver.from_conn_string(url)
        pg_saver = manager.__enter__()
    except (psycopg.Error, ValueError) as exc:
        raise _pg_error(url, exc) from None
    try:
        if create:
            _twin.run(_prepare(pg_saver, url))
        yield pg_saver
    except BaseException as exc:
        if not manager.__exit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        manager.__exit__(None, None, None)


@asynccontextmanager
async def aopen_saver(url: str | None = None, *, create: bool = True,
                      must_exist: bool = False) -> AsyncIterator[Any]:
    """A ready async saver for ``url`` (``AsyncSqliteSaver`` / ``AsyncPostgresSaver``), closed on exit.

    The async twin of :func:`open_saver`, with the same arguments: the same tables, made by
    the same body (:func:`_prepare`), and the same one-line :class:`CheckpointOpenError`.
    """
    url = checkpoint_url(url)
    if _kind(url) == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = _sqlite_path(url, create=create)
        if (not create or must_exist) and path != ":memory:" and not Path(path).exists():
            raise CheckpointOpenError(f"{path}: no such file (nothing has been checkpointed there)")
        try:
            if create or path == ":memory:":
                conn = await aiosqlite.connect(path, timeout=SQLITE_TIMEOUT)
            else:
                uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
                conn = await aiosqlite.connect(uri, uri=True, timeout=SQLITE_TIMEOUT)
            await (await conn.execute("SELECT count(*) FROM sqlite_master")).fetchone()
        except sqlite3.Error as exc:
            raise CheckpointOpenError(
                f"{path}: cannot open as a SQLite database ({_one_line(exc)})") from None
        try:
            saver = AsyncSqliteSaver(conn)
            if create:
                await _twin.arun(_prepare(saver, url))
            else:
                saver.is_setup = True  # read-only: never run the DDL
            yield saver
        finally:
            await conn.close()
        return
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    try:
        manager = AsyncPostgresSaver.from_conn_string(url)
        pg_saver = await manager.__aenter__()
    except (psycopg.Error, ValueError) as exc:
        raise _pg_error(url, exc) from None
    try:
        if create:
            await _twin.arun(_prepare(pg_saver, url))
        yield pg_saver
    except BaseException as exc:
        if not await manager.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await manager.__aexit__(None, None, None)


def _setup(saver: Any) -> None:
    saver.setup()


async def _asetup(saver: Any) -> None:
    """LangGraph's ``setup()`` of an async saver (a coroutine), or of a sync one in a thread."""
    if asyncio.iscoroutinefunction(saver.setup):
        await saver.setup()
    else:
        await asyncio.to_thread(saver.setup)


def _prepare(saver: Any, url: str) -> _twin.Body[None]:
    """LangGraph's ``setup()`` and liveguard's tables, for :func:`open_saver` and
    :func:`aopen_saver` alike; any database fault is one :class:`CheckpointOpenError` line."""
    import_errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    if _kind(url) == "postgres":
        import psycopg

        import_errors = (psycopg.Error,)
    try:
        yield Op(_setup, _asetup, (saver,))
        yield Op(ensure_tables, aensure_tables, (saver,))
    except import_errors as exc:
        if _kind(url) == "postgres":
            raise _pg_error(url, exc) from None
        path = url[len("sqlite:///"):]
        raise CheckpointOpenError(f"{path}: cannot prepare the database ({_one_line(exc)})") from None


# -- claims ------------------------------------------------------------------------------------
_LOCAL_LOCK = threading.Lock()
_LOCAL: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[str, str, str]]] = (
    weakref.WeakKeyDictionary()
)


def _local_claim(saver: Any, row: tuple[str, str, str, str, str]) -> Claim:
    thread_id, key, by, action, at = row
    with _LOCAL_LOCK:
        claims = _local_claims(saver)
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


_READY: weakref.WeakSet[Any] = weakref.WeakSet()
"""Savers whose database already holds liveguard's tables (created once per saver object)."""

# One operation: (SQL with ? placeholders, parameters, fetch one row?). PostgreSQL gets %s.
_Op = tuple[str, tuple[Any, ...], bool]
_DDL_OPS: tuple[_Op, ...] = (
    (_SQLITE_DDL, (), False), (_PENDING_DDL, (), False), (_PENDING_AT_INDEX, (), False))


def _pg_sql(sql: str) -> str:
    return sql.replace("INSERT OR IGNORE", "INSERT").replace("?", "%s") + (
        " ON CONFLICT DO NOTHING" if sql.startswith("INSERT OR IGNORE") else "")


def _run(saver: Any, ops: Sequence[_Op]) -> list[tuple[int, Any]]:
    """Run ``ops`` in one transaction on the saver's own connection: ``[(rowcount, row or None)]``."""
    if type(saver).__name__.startswith("Async") and getattr(saver, "loop", None) is not None:
        # An async saver used from a sync caller (a worker thread): run on the saver's loop.
        future = asyncio.run_coroutine_threadsafe(_arun(saver, ops), saver.loop)
        return future.result()
    kind = _saver_kind(saver)
    if kind == "sqlite":
        conn: sqlite3.Connection = saver.conn
        out: list[tuple[int, Any]] = []
        with saver.lock:
            try:
                if saver not in _READY:
                    for sql, params, _ in _DDL_OPS:
                        conn.execute(sql, params)
                    _READY.add(saver)
                for sql, params, fetch in ops:
                    cur = conn.execute(sql, params)
                    out.append((cur.rowcount, cur.fetchone() if fetch else None))
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        return out
    if kind == "postgres":
        from langgraph.checkpoint.postgres import _internal

        with saver.lock, _internal.get_connection(saver.conn) as pg:
            if saver not in _READY:
                _twin.run(_pg_ddl(pg))
                _READY.add(saver)
            with pg.transaction(), pg.cursor() as pg_cur:
                out = []
                for sql, params, fetch in ops:
                    pg_cur.execute(_pg_sql(sql), params)
                    out.append((pg_cur.rowcount, pg_cur.fetchone() if fetch else None))
        return out
    raise TypeError(f"{type(saver).__name__}: not a SQL saver")


def _pg_ddl_once(pg: Any) -> None:
    with pg.transaction(), pg.cursor() as cur:
        for sql, _params, _ in _DDL_OPS:
            cur.execute(sql)


async def _apg_ddl_once(pg: Any) -> None:
    async with pg.transaction(), pg.cursor() as cur:
        for sql, _params, _ in _DDL_OPS:
            await cur.execute(sql)


def _pg_ddl(pg: Any) -> _twin.Body[None]:
    """Create liveguard's tables; idempotent, and safe when several processes race to create
    them (``CREATE TABLE IF NOT EXISTS`` can still fail on a concurrent create: try again)."""
    import psycopg

    for attempt in range(3):
        try:
            yield Op(_pg_ddl_once, _apg_ddl_once, (pg,))
            return
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
            if attempt == 2:  # another process created them meanwhile: they exist now
                raise


async def _arun(saver: Any, ops: Sequence[_Op]) -> list[tuple[int, Any]]:
    name = type(saver).__name__
    out: list[tuple[int, Any]] = []
    if name == "AsyncSqliteSaver":
        async with saver.lock:
            try:
                if saver not in _READY:
                    for sql, params, _ in _DDL_OPS:
                        await saver.conn.execute(sql, params)
                    _READY.add(saver)
                for sql, params, fetch in ops:
                    cursor = await saver.conn.execute(sql, params)
                    out.append((cursor.rowcount, await cursor.fetchone() if fetch else None))
                await saver.conn.commit()
            except BaseException:
                await saver.conn.rollback()
                raise
        return out
    if name in ("AsyncPostgresSaver", "AsyncShallowPostgresSaver"):
        from langgraph.checkpoint.postgres import _ainternal

        async with saver.lock, _ainternal.get_connection(saver.conn) as pg:
            if saver not in _READY:
                await _twin.arun(_pg_ddl(pg))
                _READY.add(saver)
            async with pg.transaction(), pg.cursor() as cur:
                for sql, params, fetch in ops:
                    await cur.execute(_pg_sql(sql), params)
                    out.append((cur.rowcount, await cur.fetchone() if fetch else None))
        return out
    return await asyncio.to_thread(_run, saver, ops)


def ensure_tables(saver: Any) -> None:
    """Create liveguard's tables (claims, pending index) in the saver's database, once; idempotent.

    The approval step calls it itself, so a saver the user set up the usual LangGraph way
    (``PostgresSaver.from_conn_string(url)`` + ``setup()``) works without liveguard's opener.
    """
    if _saver_kind(saver) != "local":
        _run(saver, ())


async def aensure_tables(saver: Any) -> None:
    """Async :func:`ensure_tables` (an ``AsyncSqliteSaver`` / ``AsyncPostgresSaver``)."""
    if _saver_kind(saver) != "local":
        await _arun(saver, ())


def _claim_ops(thread_id: str, key: str, row: tuple[str, ...]) -> list[_Op]:
    return [
        (_SQLITE_INSERT, row, False),
        (_SQLITE_SELECT, (thread_id, key), True),
        (_SQLITE_UNPEND, (thread_id, key), False),
    ]


def _claim_of(results: list[tuple[int, Any]]) -> Claim:
    inserted = results[0][0] == 1
    return Claim(inserted, *_pg_row(results[1][1]))


def claim(saver: Any, thread_id: str, key: str, *, by: str, action: str, at: str) -> Claim:
    """Insert the claim row for ``(thread_id, key)``; return whether this caller won, and the winner.

    The same transaction takes the interrupt off the pending index. Raises the database's
    own error when the row cannot be written (nothing is claimed then).
    """
    row = (thread_id, key, by, action, at)
    if _saver_kind(saver) == "local":
        return _local_claim(saver, row)
    return _claim_of(_run(saver, _claim_ops(thread_id, key, row)))


async def aclaim(saver: Any, thread_id: str, key: str, *, by: str, action: str, at: str) -> Claim:
    """Async :func:`claim` for ``AsyncSqliteSaver`` / ``AsyncPostgresSaver`` (sync savers run in a thread)."""
    row = (thread_id, key, by, action, at)
    if _saver_kind(saver) == "local":
        return _local_claim(saver, row)
    return _claim_of(await _arun(saver, _claim_ops(thread_id, key, row)))


def _local_mark(saver: Any, thread_id: str, key: str, outcome: str, at: str) -> None:
    with _LOCAL_LOCK:
        claims = _local_claims(saver)
        if (thread_id, key) in claims:
            by, _action, _at = claims[(thread_id, key)]
            claims[(thread_id, key)] = (by, outcome, at)


def mark_sent(saver: Any, thread_id: str, key: str, *, outcome: str, at: str) -> None:
    """Record a send's outcome on its claim row (``action`` becomes ``outcome``)."""
    if _saver_kind(saver) == "local":
        _local_mark(saver, thread_id, key, outcome, at)
        return
    _run(saver, [(_SQLITE_UPDATE, (outcome, at, thread_id, key), False)])


async def amark_sent(saver: Any, thread_id: str, key: str, *, outcome: str, at: str) -> None:
    """Async :func:`mark_sent`."""
    if _saver_kind(saver) == "local":
        _local_mark(saver, thread_id, key, outcome, at)
        return
    await _arun(saver, [(_SQLITE_UPDATE, (outcome, at, thread_id, key), False)])


def _local_release(saver: Any, thread_id: str, key: str) -> None:
    with _LOCAL_LOCK:
        _local_claims(saver).pop((thread_id, key), None)


def release(saver: Any, thread_id: str, key: str) -> None:
    """Delete a claim row: the send it covered raised, so it may be tried again."""
    if _saver_kind(saver) == "local":
        _local_release(saver, thread_id, key)
        return
    _run(saver, [(_SQLITE_DELETE, (thread_id, key), False)])


async def arelease(saver: Any, thread_id: str, key: str) -> None:
    """Async :func:`release`."""
    if _saver_kind(saver) == "local":
        _local_release(saver, thread_id, key)
        return
    await _arun(saver, [(_SQLITE_DELETE, (thread_id, key), False)])


def _pend_params(thread_id: str, key: str, *, interrupt_id: str, at: str, reasons: Sequence[str],
                 codes: Sequence[str], error: str | None) -> tuple[Any, ...]:
    return (thread_id, key, interrupt_id, at, json.dumps(list(reasons)), json.dumps(list(codes)), error)


def index_pending(saver: Any, thread_id: str, key: str, *, interrupt_id: str, at: str,
                  reasons: Sequence[str], codes: Sequence[str], error: str | None) -> bool:
    """Upsert the pending-approval index row of one interrupt; False for a saver without SQL tables."""
    if _saver_kind(saver) == "local":
        return False
    params = _pend_params(thread_id, key, interrupt_id=interrupt_id, at=at, reasons=reasons,
                          codes=codes, error=error)
    _run(saver, [(_SQLITE_PEND, params, False)])
    return True


async def aindex_pending(saver: Any, thread_id: str, key: str, *, interrupt_id: str, at: str,
                         reasons: Sequence[str], codes: Sequence[str], error: str | None) -> bool:
    """Async :func:`index_pending`."""
    if _saver_kind(saver) == "local":
        return False
    params = _pend_params(thread_id, key, interrupt_id=interrupt_id, at=at, reasons=reasons,
                          codes=codes, error=error)
    await _arun(saver, [(_SQLITE_PEND, params, False)])
    return True


def iter_index(saver: Any, *, batch: int = 500) -> Iterator[dict[str, Any]]:
    """Rows of the pending index that no claim has decided (newest first), streamed in batches.

    Raises :class:`LookupError` when the database has no index table (written by an older
    liveguard, or a read-only look at a database liveguard never wrote to).
    """
    kind = _saver_kind(saver)
    if kind == "sqlite":
        conn: sqlite3.Connection = saver.conn
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
                              (PENDING_TABLE, CLAIMS_TABLE)).fetchall()
        if len(exists) < 2:
            raise LookupError(PENDING_TABLE)
        cursor = conn.execute(_LIST)
        while rows := cursor.fetchmany(batch):
            for row in rows:
                yield _index_row(row)
        return
    if kind == "postgres":
        from langgraph.checkpoint.postgres import _internal

        with _internal.get_connection(saver.conn) as pg:
            with pg.cursor() as cur:
                cur.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL AS ok",
                            (PENDING_TABLE, CLAIMS_TABLE))
                got: Any = cur.fetchone()
                ok = got["ok"] if isinstance(got, Mapping) else got[0]
            if not ok:
                raise LookupError(PENDING_TABLE)
            with pg.transaction(), pg.cursor(name="liveguard_pending") as named:
                named.itersize = batch
                named.execute(_LIST)
                for row in named:
                    yield _index_row(row)
        return
    raise LookupError(PENDING_TABLE)


def has_checkpoints(saver: Any) -> bool:
    """Whether the saver's database holds LangGraph's checkpoint table at all (read-only check)."""
    kind = _saver_kind(saver)
    if kind == "sqlite":
        conn: sqlite3.Connection = saver.conn
        return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'")
                    .fetchone())
    if kind == "postgres":
        from langgraph.checkpoint.postgres import _internal

        with _internal.get_connection(saver.conn) as pg, pg.cursor() as cur:
            cur.execute("SELECT to_regclass('checkpoints') IS NOT NULL AS ok")
            got: Any = cur.fetchone()
            return bool(got["ok"] if isinstance(got, Mapping) else got[0])
    return True


def _index_row(row: Any) -> dict[str, Any]:
    keys = ("thread_id", "interrupt_id", "at", "reasons", "codes", "error")
    values = [row[k] for k in keys] if isinstance(row, Mapping) else list(row)
    out = dict(zip(keys, values, strict=True))
    out["reasons"] = json.loads(out["reasons"])
    out["codes"] = json.loads(out["codes"])
    if out["error"] is None:
        del out["error"]
    return out


# -- process-local claims (InMemorySaver and other savers without SQL) -------------------------
def _local_claims(saver: Any) -> dict[tuple[str, str], tuple[str, str, str]]:
    try:
        return _LOCAL.setdefault(saver, {})
    except TypeError:  # a saver that cannot be weakly referenced: key by identity
        return _LOCAL.setdefault(_Identity(saver), {})


def _pg_row(got: Any) -> tuple[str, str, str]:
    if isinstance(got, Mapping):
        return str(got["decided_by"]), str(got["action"]), str(got["decided_at"])
    return str(got[0]), str(got[1]), str(got[2])
