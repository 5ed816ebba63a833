"""Input discovery: the files a command names, and every run in them as a record, lazily.

A directory contributes its ``*.jsonl``, ``*.json`` and ``*.parquet`` files at any depth
(hidden folders left out). A JSONL line stays raw bytes (the scoring process parses it, see
:mod:`liveguard.evaluate.engine.scorer`); LangSmith JSON exports (:mod:`liveguard.readers.langsmith`)
and Parquet bulk exports (:mod:`liveguard.readers.parquet`) are read here. A file that cannot
be read is one error record; the batch goes on.

With ``by_reference=True`` a JSONL line is a :class:`LineRef` instead (its file, offset and
length): the scoring process reads it itself (:class:`LineReader`), so the parent of the
local engine's workers never copies or pickles the runs' bytes, only finds where lines end.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from liveguard.core.model import Trajectory
from liveguard.errors import TrajectoryReadError
from liveguard.readers.jsonl import parse_line

__all__ = [
    "INPUT_SUFFIXES",
    "LineReader",
    "LineRef",
    "Payload",
    "Record",
    "input_files",
    "iter_inputs",
    "iter_records",
    "read_ref",
    "unreadable",
]

INPUT_SUFFIXES = (".jsonl", ".json", ".parquet")


def input_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files named by ``paths``: a directory contributes its ``*.jsonl``, ``*.json`` and
    ``*.parquet`` files at any depth (a ``langsmith/`` subfolder of exports, a LangSmith bulk
    export partitioned into ``key=value`` folders), in path order; hidden files and folders
    (``.git``, ``.venv``) are left out. A file named twice (a folder and its subfolder) is
    read once."""
    seen: set[Path] = set()
    for entry in paths:
        p = Path(entry)
        if not p.is_dir():
            found = [p]
        else:
            found = sorted(q for q in p.rglob("*") if q.suffix in INPUT_SUFFIXES and q.is_file()
                           and not any(part.startswith(".") for part in q.relative_to(p).parts))
        for q in found:
            key = q.resolve() if q.exists() else q
            if key not in seen:  # a file reached twice (a folder and its subfolder) is read once
                seen.add(key)
                yield q


@dataclass(frozen=True, slots=True)
class LineRef:
    """A JSONL line by reference: ``length`` bytes at ``offset`` of the file ``path``."""

    path: str
    offset: int
    length: int


Payload = bytes | LineRef | Trajectory | TrajectoryReadError
"""A raw JSONL line (parsed by the scorer) or a reference to one (read by the scorer), or a
run already read, or a read error."""
Record = tuple[str, Payload]
"""``(source, payload)``: ``source`` is ``file:line`` (or ``file:index``)."""


def iter_records(paths: Iterable[str | Path], *, by_reference: bool = False) -> Iterator[Record]:
    """``(source, payload)`` for every run, lazily: a JSONL line stays raw bytes (the scoring
    process parses it), or a :class:`LineRef` to them with ``by_reference``; LangSmith JSON
    exports and Parquet files are read here."""
    for f in input_files(paths):
        if f.suffix == ".json":
            from liveguard.readers.langsmith import load_export

            yield from _guarded(f, load_export(f))
        elif f.suffix == ".parquet":
            from liveguard.readers.parquet import read_parquet

            yield from _guarded(f, read_parquet(f))
        else:
            # by reference only where a worker can read a line again: a regular file, not a pipe
            yield from _jsonl_refs(f) if by_reference and f.is_file() else _jsonl_lines(f)


_BLOCK = 1 << 20
"""Bytes read at a time from a JSONL file: lines are cut out of each block, about twice as
cheap as iterating the file object (the parent process does this for every run)."""


def _open(path: Path) -> io.FileIO | Record:
    """The file, unbuffered, or the error record that says it cannot be opened."""
    try:
        return io.FileIO(path, "r")
    except OSError as exc:
        return str(path), TrajectoryReadError(str(path), f"cannot open: {exc.strerror or exc}")


def _jsonl_lines(path: Path, block_size: int = _BLOCK) -> Iterator[Record]:
    """``(file:line, line)`` for every non-blank line, each line exactly as iterating the file
    in binary mode yields it (only ``\n`` ends a line, and it stays on the line)."""
    handle = _open(path)
    if isinstance(handle, tuple):
        yield handle
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


_REF_BLOCK = 1 << 18
"""Bytes read at a time to find where lines end (:func:`_jsonl_refs`), into one buffer."""


def _jsonl_refs(path: Path, block_size: int = _REF_BLOCK) -> Iterator[Record]:
    """:func:`_jsonl_lines` by reference: the same sources, each line a :class:`LineRef`. The
    file is read into one reused buffer only to find where lines end (no copy of a line, no
    new memory per block)."""
    handle = _open(path)
    if isinstance(handle, tuple):
        yield handle
        return
    name = str(path)
    buf = bytearray(block_size)
    number = 0
    start = offset = 0  # the file offsets of the current line and of buf[0]
    blank = True  # the current line holds only what bytes.strip removes, so far
    with handle, memoryview(buf) as view:
        try:
            while got := handle.readinto(view):
                pos = 0
                while (nl := buf.find(b"\n", pos, got)) >= 0:
                    if blank:
                        blank = buf[pos] in _SPACE and not buf[pos : nl + 1].strip()
                    number += 1
                    end = offset + nl + 1
                    if not blank:
                        yield f"{name}:{number}", LineRef(name, start, end - start)
                    start, blank, pos = end, True, nl + 1
                if blank and pos < got:
                    blank = buf[pos] in _SPACE and not buf[pos:got].strip()
                offset += got
            if offset > start:  # the last line, with no newline
                number += 1
                if not blank:
                    yield f"{name}:{number}", LineRef(name, start, offset - start)
        except OSError as exc:
            where = f"{name}:{number + 1}"
            yield where, TrajectoryReadError(where, f"reading stopped: {exc.strerror or exc}")


_SPACE = frozenset(b" \t\n\r\x0b\x0c")
"""The bytes ``bytes.strip`` removes: a line that starts with none of them is not blank."""


class LineReader:
    r"""Reads the lines :class:`LineRef`\ s point to into one reused buffer (a scoring process
    has one): :meth:`view` returns the line as a view of that buffer, valid until the next
    call, for a parse that copies what it keeps (no new memory per line)."""

    __slots__ = ("_buf", "lock")

    def __init__(self) -> None:
        self._buf = bytearray(1 << 20)
        self.lock = threading.Lock()
        """Held from :meth:`view` until the view is no longer read (a scorer shared by threads)."""

    def view(self, ref: LineRef) -> memoryview:
        """The line's bytes; ``OSError`` when they cannot be read (the file went away, or shrank
        since its lines were found)."""
        if len(self._buf) < ref.length:
            self._buf = bytearray(max(ref.length, 2 * len(self._buf)))  # a new one: old views stay valid
        view = memoryview(self._buf)[: ref.length]
        _read_into(ref, view)
        return view


def _read_into(ref: LineRef, view: memoryview) -> None:
    """Fill ``view`` (``ref.length`` bytes) with the line; ``OSError`` when it cannot be read."""
    fd = os.open(ref.path, os.O_RDONLY)
    try:
        got = _preadv(fd, view, ref.offset)
    finally:
        os.close(fd)
    if got != ref.length:
        raise OSError(f"the file changed while it was read ({got} of {ref.length} bytes at {ref.offset})")


def _preadv(fd: int, view: memoryview, offset: int) -> int:
    """Read into ``view`` from ``offset`` (``os.preadv`` where the platform has it)."""
    if hasattr(os, "preadv"):
        got = 0
        while got < len(view):  # a regular file returns it all at once; a short read goes on
            n = os.preadv(fd, [view[got:]], offset + got)
            if n == 0:
                break
            got += n
        return got
    data = os.pread(fd, len(view), offset)
    view[: len(data)] = data
    return len(data)


def unreadable(source: str, exc: OSError) -> TrajectoryReadError:
    """The read error of a referenced line that could not be read, located at ``source``."""
    return TrajectoryReadError(source, f"cannot read: {exc.strerror or exc}")


def read_ref(source: str, ref: LineRef) -> bytes | TrajectoryReadError:
    """The line ``ref`` points to, as bytes of its own, or a read error located at ``source``."""
    line = bytearray(ref.length)
    try:
        _read_into(ref, memoryview(line))
    except OSError as exc:
        return unreadable(source, exc)
    return bytes(line)


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
        assert not isinstance(payload, LineRef)  # lines are copied unless asked otherwise
        yield source, (parse_line(payload, source) if isinstance(payload, bytes) else payload)
