"""The JSONL trajectory format: bad lines become typed, located errors; nothing is dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from liveguard import Trajectory, TrajectoryReadError, read_jsonl
from liveguard.readers.jsonl import write_jsonl
from liveguard.testing import ping_pong, trajectory


def test_round_trip(tmp_path: Path) -> None:
    runs = [trajectory("r1", ping_pong(), graph="g", expected=(False, ["content_cycle"]))]
    path = tmp_path / "runs.jsonl"
    write_jsonl(path, runs)
    [back] = list(read_jsonl(path))
    assert isinstance(back, Trajectory)
    assert back == runs[0]


def test_bad_lines_are_located_errors_and_the_batch_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        '{"run_id": "ok1", "steps": [{"node": "a"}]}\n'
        "{not json\n"
        "\n"
        '[1, 2]\n'
        '{"run_id": "bad", "steps": [{"node": "a", "colour": "red"}]}\n'
        '{"run_id": "ok2", "steps": []}\n'
    )
    items = list(read_jsonl(path))
    assert [type(i).__name__ for i in items] == [
        "Trajectory", "TrajectoryReadError", "TrajectoryReadError", "TrajectoryReadError", "Trajectory"
    ]
    errors = [i for i in items if isinstance(i, TrajectoryReadError)]
    assert [e.source for e in errors] == [f"{path}:2", f"{path}:4", f"{path}:5"]
    assert "invalid JSON" in errors[0].reason
    assert errors[2].reason.startswith("steps.0.#")  # a key that is no typo of a schema key: a digest
    assert "colour" not in errors[2].reason
    assert "the keys here are: args, error, node, output, result, summary, tool" in errors[2].reason
    assert isinstance(errors[0], ValueError)


def test_missing_file_is_an_error_item(tmp_path: Path) -> None:
    [item] = list(read_jsonl(tmp_path / "nope.jsonl"))
    assert isinstance(item, TrajectoryReadError)
    assert "cannot open" in item.reason


@pytest.mark.parametrize("block_size", [1, 2, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize(
    "content",
    [
        b'{"a": 1}\n{"b": 2}\n',
        b'{"a": 1}\n\n  \n\t\r\n{"b": 2}',  # blank and whitespace-only lines, no final newline
        b"\n\n\n",
        b"",
        b"x" * 300 + b"\r\ny\rz\x0b\x0cw\n" + b"q" * 5000,  # only \n ends a line
        b"\xff\xfe\n\x00\n \n" + "Zürich 東京\n".encode(),
    ],
)
def test_lines_are_cut_as_the_file_object_cuts_them(tmp_path: Path, content: bytes, block_size: int) -> None:
    """The block reader yields exactly the non-blank lines (and line numbers) of iterating the
    file in binary mode, whatever the block size (lines across blocks, longer than a block)."""
    from liveguard.readers.inputs import _jsonl_lines

    path = tmp_path / "runs.jsonl"
    path.write_bytes(content)
    with path.open("rb") as f:
        expected = [(f"{path}:{n}", raw) for n, raw in enumerate(f, start=1) if raw.strip()]
    assert list(_jsonl_lines(path, block_size)) == expected


@pytest.mark.parametrize("block_size", [1, 3, 64, 1 << 20])
@pytest.mark.parametrize(
    "content",
    [
        b'{"a": 1}\n\n  \n\t\r\n{"b": 2}',
        b"x" * 300 + b"\r\ny\rz\x0b\x0cw\n" + b"q" * 5000,
        b"\xff\xfe\n\x00\n \n" + "Zürich 東京\n".encode(),
        b" {\"lead\": 1}\n\n" + b"\n" * 70_000 + b'{"far": 2}\n',
        b"",
        b"\n\n\n",
        b"  \t \n     {\"late\": 1}\n  \t",  # whitespace across blocks, then text; a blank last line
        b"   x",  # a last line with no newline, text after leading spaces
        b"y" * (3 << 20) + b"\n{}\n",  # a line longer than the reader's buffer
    ],
)
def test_lines_by_reference_read_back_as_the_same_bytes(
    tmp_path: Path, content: bytes, block_size: int
) -> None:
    """The local engine's workers read their lines themselves (the parent sends only where each
    line is): the references, read back, are exactly the lines and sources of the copying reader."""
    from liveguard.readers.inputs import LineReader, LineRef, _jsonl_lines, _jsonl_refs

    if block_size == 1 and len(content) > 100_000:
        block_size = 4096  # the same cases, at a pace a test can afford
    path = tmp_path / "runs.jsonl"
    path.write_bytes(content)
    refs = list(_jsonl_refs(path, block_size))
    reader = LineReader()
    back = []
    for source, ref in refs:
        assert isinstance(ref, LineRef)
        back.append((source, bytes(reader.view(ref))))
    with path.open("rb") as f:
        expected = [(f"{path}:{n}", raw) for n, raw in enumerate(f, start=1) if raw.strip()]
    assert back == expected == list(_jsonl_lines(path, block_size))


def test_lines_by_reference_that_cannot_be_read_are_typed_errors(tmp_path: Path) -> None:
    from liveguard.readers.inputs import LineRef, _jsonl_refs, read_ref

    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": 3}\n')
    refs = [ref for _, ref in _jsonl_refs(path) if isinstance(ref, LineRef)]
    assert len(refs) == 3
    path.write_bytes(b'{"a": 1}\n{"b"')  # shrank after its lines were found
    assert read_ref("s:1", refs[0]) == b'{"a": 1}\n'
    short = read_ref("s:2", refs[1])
    assert isinstance(short, TrajectoryReadError)
    assert short.source == "s:2"
    assert "changed" in short.reason
    path.unlink()
    gone = read_ref("s:3", refs[2])
    assert isinstance(gone, TrajectoryReadError)
    assert "cannot read" in gone.reason
