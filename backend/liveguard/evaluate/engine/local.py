"""The local engine: stream records through ``jobs`` worker processes, rows in input order.

Records are read lazily, sent to the workers in chunks (to amortise the IPC), and at
most ``4 × jobs`` chunks are in flight, so memory stays bounded whatever the input's
size. Each worker has one :class:`~liveguard.evaluate.engine.scorer.Scorer`: built once in the
parent and inherited by ``fork`` when the parent is single-threaded (the CLI), else built
once per worker (``forkserver``). With
``jobs=1`` the same scorer runs in the calling process, so ``--jobs 1`` and
``--jobs N`` give the same rows. A chunk whose worker died becomes error rows, one
per record; the batch goes on.
"""

from __future__ import annotations

import gc
import multiprocessing
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

from liveguard.evaluate.engine.scorer import Record, ScoreOptions, Scorer, chunked

if TYPE_CHECKING:
    from liveguard.evaluate.rows import RunRow

__all__ = ["CHUNK", "CHUNK_JUDGED", "iter_rows_local"]

CHUNK = 128
"""Records per chunk sent to a worker when no judge is called (the CPU-bound floor: big
chunks amortise the inter-process traffic)."""
CHUNK_JUDGED = 32
"""Records per chunk when judges are called (they wait on the network: smaller chunks keep
every worker busy on a small batch)."""

_SCORER: Scorer | None = None


WORKER_GC_THRESHOLD = 10_000
"""A worker's first-generation GC threshold (Python's default is 700): scoring allocates
thousands of short-lived objects a run, and young collections that often cost about 3% of
the scoring time (``benchmarks/RESULTS.md``). Workers only; the caller's process keeps its own."""


def _tune_gc() -> None:
    """In a worker: freeze what it inherited (never scanned again, its pages stay shared with
    the parent) and collect young objects less often."""
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(WORKER_GC_THRESHOLD, second, third)


def _init_worker(options: ScoreOptions | None = None) -> None:
    global _SCORER  # noqa: PLW0603 - one scorer per worker process, built once
    if options is not None:
        _SCORER = Scorer(options)
    _tune_gc()


def _score_in_worker(chunk: list[Record]) -> list[RunRow]:
    assert _SCORER is not None, "worker not initialised"
    return _SCORER.score_chunk(chunk)


def _lost(chunk: list[Record], exc: BaseException) -> list[RunRow]:
    from liveguard.evaluate.rows import RunRow

    why = f"{type(exc).__name__}: the worker scoring this run failed"
    return [RunRow(source=source, error=why) for source, _ in chunk]


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` from a single-threaded parent (workers inherit the built scorer: no imports,
    no graph build), else ``forkserver`` (never fork a threaded parent), else ``spawn``."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and sys.platform == "linux":
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _inherit(scorer: Scorer) -> None:
    global _SCORER  # noqa: PLW0603 - a forked worker starts with the parent's scorer
    _SCORER = scorer


def iter_rows_local(
    records: Iterable[Record], options: ScoreOptions, *, jobs: int, chunk: int | None = None
) -> Iterator[RunRow]:
    """One row per record, in input order, scored by ``jobs`` processes."""
    if chunk is None:
        judging = options.judges and options.judge_config().skip_reason() is None
        chunk = CHUNK_JUDGED if judging else CHUNK
    if jobs <= 1:
        scorer = Scorer(options)
        for part in chunked(records, chunk):
            yield from scorer.score_chunk(part)
        return
    context = _context()
    if context.get_start_method() == "fork":
        _inherit(Scorer(options))  # built once, before the fork; every worker inherits it
        init: dict[str, Any] = {"initializer": _init_worker}
    else:
        init = {"initializer": _init_worker, "initargs": (options,)}
    window: deque[tuple[list[Record], Future[list[RunRow]]]] = deque()
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context, **init) as pool:
            try:
                for part in chunked(records, chunk):
                    try:
                        future = pool.submit(_score_in_worker, part)
                    except Exception as exc:  # the pool broke earlier: these runs are lost too
                        yield from _lost(part, exc)
                        continue
                    window.append((part, future))
                    if len(window) >= 4 * jobs:
                        yield from _collect(*window.popleft())
                while window:
                    yield from _collect(*window.popleft())
            finally:
                for _, future in window:
                    future.cancel()
    finally:
        _inherit_clear()


def _inherit_clear() -> None:
    global _SCORER  # noqa: PLW0603 - the parent drops its copy when the pool is done
    _SCORER = None


def _collect(part: list[Record], future: Future[list[RunRow]]) -> list[RunRow]:
    try:
        rows = future.result()
    except Exception as exc:  # a worker died (BrokenProcessPool) or could not pickle a row
        return _lost(part, exc)
    if len(rows) != len(part):  # never expected; rows out == runs in all the same
        return _lost(part, RuntimeError("row count mismatch"))
    return rows
