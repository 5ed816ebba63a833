"""The local engine's chunks: at most CHUNK records, and at most about CHUNK_BYTES of raw lines."""

from __future__ import annotations

from liveguard.errors import TrajectoryReadError
from liveguard.evaluate.engine.local import CHUNK
from liveguard.evaluate.engine.scorer import CHUNK_BYTES, Record, chunked


def test_large_runs_come_in_small_chunks() -> None:
    """190 recorded runs of 90 KB are not one chunk of 128 and one of 62 (one worker idle half
    the time): each chunk stops once it holds CHUNK_BYTES of lines."""
    records: list[Record] = [(f"f:{i}", b"x" * 90_000 + b"\n") for i in range(190)]
    chunks = list(chunked(records, CHUNK))
    assert [r for c in chunks for r in c] == records
    assert len(chunks) == 190 // 12 + 1
    assert all(sum(len(p) for _, p in c if isinstance(p, bytes)) < CHUNK_BYTES + 90_001 for c in chunks)


def test_small_runs_still_come_128_at_a_time() -> None:
    records: list[Record] = [(f"f:{i}", b"{}\n") for i in range(300)]
    assert [len(c) for c in chunked(records, CHUNK)] == [128, 128, 44]


def test_parsed_runs_and_errors_count_as_records_only() -> None:
    records: list[Record] = [(f"f:{i}", TrajectoryReadError(f"f:{i}", "bad")) for i in range(5)]
    assert [len(c) for c in chunked(records, 2, max_bytes=1)] == [2, 2, 1]


def test_lines_by_reference_count_their_length() -> None:
    """A referenced line (the workers read it) weighs its length, as the line itself would."""
    from liveguard.readers.inputs import LineRef

    records: list[Record] = [(f"f:{i}", LineRef("f", i * 90_001, 90_001)) for i in range(190)]
    assert len(list(chunked(records, CHUNK))) == 190 // 12 + 1
