"""LangSmith bulk exports: Parquet files of runs → :class:`~liveguard.model.Trajectory` objects.

A LangSmith bulk export writes a project's runs to object storage as Parquet, one row
per run (root runs and their child runs alike), with the fields of LangSmith's run data
format (``id``, ``name``, ``run_type``, ``start_time``, ``end_time``, ``status``,
``error``, ``extra``, ``inputs``, ``outputs``, ``events``, ``tags``, ``parent_run_id``,
``trace_id``, ``dotted_order``, ``session_id``, ...), partitioned into folders such as
``export_id=…/tenant_id=…/session_id=…/runs/year=…/month=…/day=…/``. Payload fields
(``inputs``, ``outputs``, ``extra``, ``events``) arrive as JSON text; they are decoded
here (a column that is already nested is taken as it is). Columns this reader does
not use are not read.

The rows of one trace (same ``trace_id``; a row without one is its own trace) form one
flat run list that :func:`liveguard.langsmith.run_to_trajectory` turns into steps, as for
a JSON export. Traces come in the order of their first row in the file. A trace that
cannot be read becomes a :class:`~liveguard.errors.TrajectoryReadError` located
``file:row`` (0-based row of its first run). A trace must lie within one file (a
bulk export writes a trace's runs to the partition of its day); the rows of one file
are grouped in memory, the file's payloads are decoded trace by trace.

``pyarrow`` comes with the ``liveguard[ray]`` extra; without it every Parquet file is
one error row that says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from liveguard.errors import TrajectoryReadError
from liveguard.model import Trajectory

__all__ = ["EXPORT_COLUMNS", "JSON_COLUMNS", "read_parquet"]

EXPORT_COLUMNS = (
    "id", "name", "run_type", "start_time", "end_time", "status", "error", "extra", "inputs",
    "outputs", "events", "tags", "parent_run_id", "trace_id", "dotted_order", "session_id",
)
"""The run fields read (others, e.g. token counts and costs, are skipped)."""
JSON_COLUMNS = frozenset({"extra", "inputs", "outputs", "events", "tags"})
"""Fields that a bulk export stores as JSON text."""


def _decode(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in JSON_COLUMNS and isinstance(value, str | bytes):
            try:
                out[key] = orjson.loads(value) if value else None
            except orjson.JSONDecodeError:
                raise ValueError(f"column {key}: not JSON text") from None
        else:
            out[key] = value
    return out


def read_parquet(path: str | Path, *, name: str | None = None) -> Iterator[Trajectory | TrajectoryReadError]:
    """Every trace of one Parquet file of a LangSmith bulk export, in file order.

    ``name`` (default: ``path``) is used in error locations.
    """
    where = name or str(path)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        yield TrajectoryReadError(where, "reading Parquet needs pyarrow: pip install 'liveguard[ray]'")
        return
    try:
        handle = pq.ParquetFile(str(path))
        names = set(handle.schema_arrow.names)
        if "id" not in names:
            yield TrajectoryReadError(where, "not a LangSmith run export: no 'id' column")
            return
        table = handle.read(columns=[c for c in EXPORT_COLUMNS if c in names])
    except Exception as exc:  # unreadable file: one error row, the batch goes on
        yield TrajectoryReadError(where, f"cannot read Parquet: {type(exc).__name__}")
        return
    from liveguard.langsmith import run_to_trajectory

    traces: dict[str, list[int]] = {}
    ids = table.column("id").to_pylist()
    has_trace = "trace_id" in table.column_names
    trace_ids = table.column("trace_id").to_pylist() if has_trace else [None] * len(ids)
    for index, (ident, trace) in enumerate(zip(ids, trace_ids, strict=True)):
        key = str(trace) if trace is not None else (f"id:{ident}" if ident is not None else f"row:{index}")
        traces.setdefault(key, []).append(index)
    for rows in traces.values():
        located = f"{where}:{rows[0]}"
        try:
            runs = [_decode(r) for r in table.take(rows).to_pylist()]
            yield run_to_trajectory(runs if len(runs) > 1 else runs[0])
        except TrajectoryReadError as exc:
            yield TrajectoryReadError(located, f"run {exc.source}: {exc.reason}")
        except Exception as exc:  # any odd row: this trace's error row
            yield TrajectoryReadError(located, f"{type(exc).__name__}: {exc}")
