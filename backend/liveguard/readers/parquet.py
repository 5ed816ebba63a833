"""LangSmith bulk exports: Parquet files of runs → :class:`~liveguard.core.model.Trajectory` objects.

A LangSmith bulk export writes a project's runs to object storage as Parquet, one row
per run (root runs and their child runs alike), with the fields of LangSmith's run data
format (``id``, ``name``, ``run_type``, ``start_time``, ``end_time``, ``status``,
``error``, ``extra``, ``inputs``, ``outputs``, ``events``, ``tags``, ``parent_run_id``,
``trace_id``, ``dotted_order``, ``session_id``, ...), partitioned into folders such as
``export_id=…/tenant_id=…/session_id=…/runs/year=…/month=…/day=…/``. Payload fields
(``inputs``, ``outputs``, ``extra``, ``events``) arrive as JSON text; they are decoded
here (a column that is already nested is taken as it is). Columns this reader does
not use are not read.

The rows of one trace (same ``trace_id``; without that column, the same root run in
``dotted_order``, or the same topmost ancestor by ``parent_run_id``) form one
flat run list that :func:`liveguard.readers.langsmith.run_to_trajectory` turns into steps, as
for a JSON export. Traces come in the order of their first row in the file. A trace that
cannot be read becomes a :class:`~liveguard.errors.TrajectoryReadError` located
``file:row`` (0-based row of its first run); an export with none of those three columns
is one error row (child runs would otherwise be scored as runs of their own). A trace must
lie within one file (a bulk export writes a trace's runs to the partition of its day); the rows of one file
are grouped in memory, the file's payloads are decoded trace by trace.

``pyarrow`` comes with the ``liveguard[ray]`` extra; without it every Parquet file is
one error row that says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from liveguard.core.model import Trajectory
from liveguard.core.schema_errors import withheld
from liveguard.errors import TrajectoryReadError

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


TRACE_COLUMNS = frozenset({"trace_id", "dotted_order", "parent_run_id"})
"""The columns that tell which trace a row belongs to (any one of them will do)."""


def _column(table: Any, name: str, size: int) -> list[Any]:
    return table.column(name).to_pylist() if name in table.column_names else [None] * size


def _trace_keys(table: Any, ids: list[Any]) -> list[str]:
    """Each row's trace: its ``trace_id``; else the root run of its ``dotted_order`` (its first
    segment ends with the root's id); else the topmost ancestor its ``parent_run_id`` chain
    reaches in the file; else (a row with none of them) the row's own id, a root run."""
    size = len(ids)
    trace_ids, orders, parents = (_column(table, c, size)
                                  for c in ("trace_id", "dotted_order", "parent_run_id"))
    parent_of = {str(i): str(p) for i, p in zip(ids, parents, strict=True) if i is not None and p is not None}
    present = {str(i) for i in ids if i is not None}
    keys: list[str] = []
    for index, (ident, trace, order) in enumerate(zip(ids, trace_ids, orders, strict=True)):
        if trace is not None:
            keys.append(str(trace))
        elif order:
            keys.append(str(order).split(".", 1)[0][-36:])
        elif ident is not None:
            node, hops = str(ident), 0
            while hops <= size and parent_of.get(node) in present:  # bounded: a cycle ends too
                node, hops = parent_of[node], hops + 1
            keys.append(node)
        else:
            keys.append(f"row:{index}")
    return keys


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
    from liveguard.readers.langsmith import run_to_trajectory

    if not TRACE_COLUMNS & set(table.column_names):
        yield TrajectoryReadError(where, "cannot group child runs into traces: the export has none "
                                  "of the columns trace_id, dotted_order, parent_run_id (export them)")
        return
    traces: dict[str, list[int]] = {}
    ids = table.column("id").to_pylist()
    for index, key in enumerate(_trace_keys(table, ids)):
        traces.setdefault(key, []).append(index)
    for rows in traces.values():
        located = f"{where}:{rows[0]}"
        try:
            runs = [_decode(r) for r in table.take(rows).to_pylist()]
            yield run_to_trajectory(runs if len(runs) > 1 else runs[0])
        except TrajectoryReadError as exc:
            yield TrajectoryReadError(located, f"run {exc.source}: {exc.reason}")
        except Exception as exc:  # any odd row: this trace's error row
            yield TrajectoryReadError(located, withheld(exc))
