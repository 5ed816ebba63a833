"""The Ray engine: score runs on a Ray cluster through Ray Data, with the local engine's functions.

``liveguard score --engine ray [--ray-address ADDRESS] PATH...`` (or :func:`iter_rows_ray`):

1. The input files (JSONL, LangSmith JSON exports, Parquet bulk exports; local paths or
   object-store URIs such as ``s3://bucket/prefix/…/part-0.parquet``) become a Ray
   Dataset of file names, one block per file.
2. ``map_batches`` reads each file inside the cluster with the same reader as the local
   engine (:func:`liveguard.readers.inputs.iter_records`), yielding records in batches.
3. ``map_batches`` scores batches with :class:`~liveguard.evaluate.engine.scorer.Scorer`, built
   once per Ray worker process: the same floor, the same eval graph, the same error rows.
4. The driver iterates the rows in input order (``preserve_order``) and writes them in
   the usual formats; the gate and the report read them as any other rows.

So the rows equal the local engine's for the same input (a test compares them).

Judges under Ray: one global bound on judge calls in flight, held by a named Ray actor
(``AGENT_EVAL_CONCURRENCY`` slots, whatever the number of workers), and the judges'
settings, kill switch included, are read once on the driver and shipped to the workers.
A judge failure is a ``judge_error`` level as locally; any exception an error row.

Every scored row crosses with the id of the Ray node that scored it; ``nodes`` (a dict
the caller passes) counts rows per node, which shows the work spread over a cluster.

A cluster address that cannot be reached (``--ray-address 127.0.0.1:1``) is a
:class:`ClusterUnreachableError` within seconds (a TCP probe of the address before
``ray.init``, which would otherwise retry for minutes); the CLI exits 2 with its message.

Install with ``pip install 'liveguard[ray]'`` (Ray Data and pyarrow). ``ray`` is
imported when the engine is used, never at ``import liveguard``.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash

from liveguard.errors import ClusterUnreachableError, TrajectoryReadError
from liveguard.evaluate.engine.scorer import Record, ScoreOptions, Scorer

if TYPE_CHECKING:
    from liveguard.core.model import Level
    from liveguard.evaluate.judges import Check, JudgeClient, JudgeConfig, JudgeResult
    from liveguard.evaluate.rows import RunRow

__all__ = ["LIMITER_NAME", "PROBE_SECONDS", "ClusterUnreachableError", "iter_rows_ray"]

LIMITER_NAME = "liveguard-judge-limiter"
BATCH = 64
"""Records per scoring batch."""
READ_BATCH = 256
"""Records per batch out of the reading step."""
BLOCK_BYTES = 2 * 1024 * 1024
"""Target block size while scoring (Ray's default, 128 MiB, would put a whole file in one block)."""

PROBE_SECONDS = 10.0
"""How long the TCP probe of an explicit cluster address waits."""

_SCORERS: dict[str, Scorer] = {}
"""One scorer per Ray worker process and options (built on the first batch)."""


def _probe(address: str) -> None:
    """Raise :class:`ClusterUnreachableError` unless ``host:port`` (or ``ray://host:port``)
    accepts a TCP connection within :data:`PROBE_SECONDS`. ``auto`` and ``local`` are Ray's
    own lookups and are left to ``ray.init``."""
    target = address.split("://", 1)[1] if "://" in address else address
    if target in ("auto", "local") or not target:
        return
    host, sep, port_text = target.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ClusterUnreachableError(f"Ray address {address!r}: expected HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port_text)), timeout=PROBE_SECONDS):
            pass
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__)
        raise ClusterUnreachableError(
            f"Ray cluster at {address} cannot be reached ({reason}); is `ray start --head` running there?"
        ) from None


def _node_id() -> str:
    import ray

    return str(ray.get_runtime_context().get_node_id())


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # ray.data is used through the ray module
    except ImportError:
        raise ImportError("the Ray engine needs the ray extra: pip install 'liveguard[ray]'") from None
    return ray


# -- reading ------------------------------------------------------------------------------------
def _is_uri(path: str) -> bool:
    return "://" in path


def _records_of(path: str) -> Iterator[Record]:
    """The records of one file, named as the user named it (local path or URI)."""
    from liveguard.readers.inputs import iter_records

    if not _is_uri(path):
        yield from iter_records([path])
        return
    import pyarrow.fs as pafs

    fs, inner = pafs.FileSystem.from_uri(path)
    with tempfile.TemporaryDirectory(prefix="liveguard-") as tmp:
        local = Path(tmp) / Path(inner).name
        with fs.open_input_stream(inner) as src, local.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        prefix = str(local)
        for source, item in iter_records([local]):
            named = path + source[len(prefix):] if source.startswith(prefix) else source
            yield named, (TrajectoryReadError(named, item.reason) if isinstance(item, TrajectoryReadError)
                          else item)


def _expand(paths: Sequence[str | Path]) -> list[str]:
    """Local directories expand as for the local engine; URIs are taken as they are."""
    from liveguard.readers.inputs import input_files

    files: list[str] = []
    for entry in paths:
        text = str(entry)
        files += [text] if _is_uri(text) else [str(p) for p in input_files([text])]
    return files


def _read_files(batch: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    import numpy as np

    out: list[bytes] = []
    for path in batch["path"]:
        for record in _records_of(str(path)):
            out.append(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
            if len(out) >= READ_BATCH:
                yield {"record": np.array(out, dtype=object)}
                out = []
    if out:
        yield {"record": np.array(out, dtype=object)}


# -- scoring ------------------------------------------------------------------------------------
class _LimitedJudgeClient:
    """Builds a JudgeClient whose judge calls first take a slot of the cluster-wide limiter."""

    @staticmethod
    def build(config: JudgeConfig, limiter: Any) -> JudgeClient:
        from liveguard.evaluate.judges import JudgeClient

        class Limited(JudgeClient):
            async def judge(self, level: Level, payload: Mapping[str, Any], *,
                            check: Check | None = None) -> JudgeResult:
                if self.skip_reason is not None or limiter is None:
                    return await super().judge(level, payload, check=check)
                await limiter.acquire.remote()
                try:
                    return await super().judge(level, payload, check=check)
                finally:
                    limiter.release.remote()

        return Limited(config)


class _RayScorer(Scorer):
    def __init__(self, options: ScoreOptions, limiter: Any) -> None:
        self._limiter = limiter
        super().__init__(options)

    def _gateway(self, config: JudgeConfig) -> JudgeClient:
        return _LimitedJudgeClient.build(config, self._limiter)


def _score_batch(batch: Mapping[str, Any], options: ScoreOptions, limiter: Any) -> dict[str, Any]:
    import numpy as np

    key = xxhash.xxh3_64_hexdigest(pickle.dumps(options))
    scorer = _SCORERS.get(key)
    if scorer is None:
        scorer = _SCORERS[key] = _RayScorer(options, limiter)
    rows = scorer.score_chunk([_unpickle(b) for b in batch["record"]])
    return {"row": np.array([pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL) for r in rows], dtype=object),
            "node": np.array([_node_id()] * len(rows), dtype=object)}


def _unpickle(blob: bytes) -> Record:
    try:
        record: Record = pickle.loads(blob)
    except Exception as exc:  # batch isolation: this record's error row, the others go on
        return "<ray record>", TrajectoryReadError("<ray record>", f"cannot unpickle: {type(exc).__name__}")
    return record


def _limiter(ray: Any, slots: int) -> Any:
    @ray.remote(num_cpus=0)
    class Limiter:
        """A cluster-wide semaphore for judge calls; ``peak`` is the most ever held at once."""

        def __init__(self, n: int) -> None:
            self._slots = asyncio.Semaphore(n)
            self.active = 0
            self.peak = 0

        async def acquire(self) -> None:
            await self._slots.acquire()
            self.active += 1
            self.peak = max(self.peak, self.active)

        async def release(self) -> None:
            self.active -= 1
            self._slots.release()

        async def stats(self) -> dict[str, int]:
            return {"active": self.active, "peak": self.peak}

    remote: Any = Limiter  # a Ray actor class (ray.remote wraps it)
    return remote.options(name=LIMITER_NAME, get_if_exists=True).remote(slots)


def iter_rows_ray(
    paths: Sequence[str | Path], options: ScoreOptions, *, address: str | None = None,
    nodes: MutableMapping[str, int] | None = None,
) -> Iterator[RunRow]:
    """One row per run of ``paths``, in input order, scored on a Ray cluster.

    ``address``: the cluster to join (``None``: ``RAY_ADDRESS`` if set, else a new local
    cluster, shut down again at the end); one that cannot be reached raises
    :class:`ClusterUnreachableError`. A cluster the caller already initialised is used as
    it is. ``nodes``, when given, counts the rows each Ray node scored (by node id).
    """
    ray = _import_ray()

    started = not ray.is_initialized()
    if started:
        if address:
            _probe(address)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        except (ConnectionError, TimeoutError) as exc:
            raise ClusterUnreachableError(
                f"Ray cluster at {address or 'RAY_ADDRESS'} cannot be joined ({type(exc).__name__})"
            ) from None
    config = options.judge_config()
    judging = options.judges and config.skip_reason() is None
    limiter = _limiter(ray, config.concurrency) if judging else None
    files = _expand(paths)
    context = ray.data.DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars,
             context.target_max_block_size)
    context.execution_options.preserve_order = True  # rows in input order
    context.enable_progress_bars = False
    context.target_max_block_size = BLOCK_BYTES  # many blocks per file: every CPU gets some
    data_log = logging.getLogger("ray.data")
    level = data_log.level
    data_log.setLevel(logging.ERROR)  # no per-dataset INFO lines or notices on the command's stderr
    try:
        if not files:
            return
        ds = ray.data.from_items([{"path": f} for f in files], override_num_blocks=len(files))
        # A lighter CPU request than scoring's keeps the two steps apart (not fused into one
        # task per file), so one large file is scored by every CPU of the cluster.
        ds = ds.map_batches(_read_files, batch_size=1, num_cpus=0.5)
        ds = ds.map_batches(_score_batch, batch_size=BATCH,
                            fn_kwargs={"options": options, "limiter": limiter})
        for item in ds.iter_rows():
            if nodes is not None:
                nodes[item["node"]] = nodes.get(item["node"], 0) + 1
            yield pickle.loads(item["row"])
    finally:
        (context.execution_options.preserve_order, context.enable_progress_bars,
         context.target_max_block_size) = saved
        data_log.setLevel(level)
        if started:
            ray.shutdown()
