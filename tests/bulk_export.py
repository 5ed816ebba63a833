"""Write runs as a LangSmith bulk export writes them: Parquet, one row per run, JSON text payloads,
partitioned folders (``export_id=…/tenant_id=…/session_id=…/runs/year=…/month=…/day=…``)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from liveguard.readers.parquet import EXPORT_COLUMNS, JSON_COLUMNS

PARTITION = ("export_id=7c3b0b8e-0000-4000-8000-000000000001/tenant_id=00000000-0000-4000-8000-00000000000a/"
             "session_id=00000000-0000-4000-8000-00000000000b/runs/year=2025/month=01/day=01")


def flatten(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A nested run tree (``child_runs``) as flat rows, each child naming its ``parent_run_id``."""
    rows = [{k: v for k, v in run.items() if k != "child_runs"}]
    for child in run.get("child_runs") or []:
        rows += flatten(child)
    return rows


def _row(run: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column in EXPORT_COLUMNS:
        value = run.get(column)
        if column in JSON_COLUMNS:
            value = None if value is None else orjson.dumps(value).decode()
        elif column in ("start_time", "end_time") and isinstance(value, str):
            value = datetime.fromisoformat(value)
        elif value is not None and not isinstance(value, str):
            value = str(value)
        row[column] = value
    return row


def write_bulk_export(root: Path, traces: list[dict[str, Any]], *, rows_per_file: int = 10_000) -> list[Path]:
    """Write ``traces`` (nested run trees) under ``root`` in the bulk-export layout; the files written.

    Within a trace, child rows come before their parents (reversed), as an export's row
    order is not a tree order.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = root / PARTITION
    folder.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([
        (c, pa.timestamp("us", tz="UTC") if c in ("start_time", "end_time") else pa.string())
        for c in EXPORT_COLUMNS
    ])
    files: list[Path] = []
    rows: list[dict[str, Any]] = []

    def flush() -> None:
        path = folder / f"part-{len(files):05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        files.append(path)
        rows.clear()

    for trace in traces:  # a file ends at a trace boundary once it holds rows_per_file rows
        flat = flatten(trace)
        rows += [_row(flat[0])] + [_row(r) for r in reversed(flat[1:])]
        if len(rows) >= rows_per_file:
            flush()
    if rows:
        flush()
    return files
