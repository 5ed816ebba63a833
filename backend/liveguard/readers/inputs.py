"""Input discovery: the files a command names, and every run in them as a record, lazily.

A directory contributes its ``*.jsonl`` and ``*.json`` files and its ``*.parquet`` files at
any depth. A JSONL line stays raw bytes (the scoring process parses it, see
:mod:`liveguard.engine.scorer`); LangSmith JSON exports (:mod:`liveguard.readers.langsmith`)
and Parquet bulk exports (:mod:`liveguard.readers.parquet`) are read here. A file that cannot
be read is one error record; the batch goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from liveguard.errors import TrajectoryReadError
from liveguard.model import Trajectory
from liveguard.readers.jsonl import parse_line

if TYPE_CHECKING:
    from liveguard.engine.scorer import Record

__all__ = ["INPUT_SUFFIXES", "input_files", "iter_inputs", "iter_records"]

INPUT_SUFFIXES = (".jsonl", ".json", ".parquet")


def input_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files named by ``paths``: a directory contributes its ``*.jsonl`` and ``*.json``
    files (not recursively) and its ``*.parquet`` files at any depth (a LangSmith bulk
    export is partitioned into ``key=value`` folders)."""
    for entry in paths:
        p = Path(entry)
        if not p.is_dir():
            yield p
            continue
        flat = [q for q in p.iterdir() if q.is_file() and q.suffix in (".jsonl", ".json")]
        deep = [q for q in p.rglob("*.parquet") if q.is_file()]
        yield from sorted(flat + deep)


def iter_records(paths: Iterable[str | Path]) -> Iterator[Record]:
    """``(source, payload)`` for every run, lazily: a JSONL line stays raw bytes (the scoring
    process parses it); LangSmith JSON exports and Parquet files are read here."""
    for f in input_files(paths):
        if f.suffix == ".json":
            from liveguard.readers.langsmith import load_export

            yield from _guarded(f, load_export(f))
        elif f.suffix == ".parquet":
            from liveguard.readers.parquet import read_parquet

            yield from _guarded(f, read_parquet(f))
        else:
            yield from _jsonl_lines(f)


_BLOCK = 1 << 20
"""Bytes read at a time from a JSONL file: lines are cut out of each block, about twice as
cheap as iterating the file object (the parent process does this for every run)."""


def _jsonl_lines(path: Path, block_size: int = _BLOCK) -> Iterator[Record]:
    """``(file:line, line)`` for every non-blank line, each line exactly as iterating the file
    in binary mode yields it (only ``\n`` ends a line, and it stays on the line)."""
    try:
        handle = path.open("rb", buffering=0)
    except OSError as exc:
        yield str(path), TrajectoryReadError(str(path), f"cannot open: {exc.strerror or exc}")
        return
    name = str(path)
    with handle:
        number = 0
        pending: list[bytes] = []  # the start of a line that continues in the next block
        try:
            while block := handle.read(block_size):
                if b"\n" not in block:  # a long line: no quadratic re-joining
                    pending.append(block)
                    continue
                data = b"".join((*pending, block)) if pending else block
                find, pos = data.find, 0
                while (nl := find(b"\n", pos)) >= 0:
                    number += 1
                    raw = data[pos : nl + 1]
                    pos = nl + 1
                    if raw.strip():
                        yield f"{name}:{number}", raw
                pending = [data[pos:]] if pos < len(data) else []
            rest = b"".join(pending)
            if rest:
                number += 1
                if rest.strip():
                    yield f"{name}:{number}", rest
        except OSError as exc:
            where = f"{name}:{number + 1}"
            yield where, TrajectoryReadError(where, f"reading stopped: {exc.strerror or exc}")


def _guarded(path: Path, items: Iterable[Trajectory | TrajectoryReadError]) -> Iterator[Record]:
    """A reader's items as records; a reader that raises ends its file with one error row."""
    try:
        for item in items:
            yield (item.source if isinstance(item, TrajectoryReadError) else str(path)), item
    except Exception as exc:  # batch isolation: the rest of the batch goes on
        yield str(path), TrajectoryReadError(str(path), f"reading stopped: {type(exc).__name__}")


def iter_inputs(paths: Iterable[str | Path]) -> Iterator[tuple[str, Trajectory | TrajectoryReadError]]:
    """(source, run-or-error) for every run in JSONL files, LangSmith JSON exports, Parquet
    bulk exports and directories (see :func:`input_files`)."""
    for source, payload in iter_records(paths):
        yield source, (parse_line(payload, source) if isinstance(payload, bytes) else payload)
