"""The local engine's workers read their JSONL lines by reference (the parent only finds them):
the rows are those of the lines themselves, whatever the line holds, and a line that can no
longer be read is an error row at its own source."""

from __future__ import annotations

from pathlib import Path

from liveguard.evaluate.engine.scorer import Record, ScoreOptions, Scorer
from liveguard.readers.inputs import LineRef, iter_records
from test_scale import SECRET, _hostile_lines


def _rows(records: list[Record]) -> list[bytes]:
    return [row.json_bytes() for row in Scorer(ScoreOptions(judges=False)).score_chunk(records)]


def test_rows_by_reference_equal_rows_of_the_lines(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    lines = _hostile_lines()
    path.write_bytes(b"\n\n".join(lines) + b"\n" + b"y" * (3 << 20) + b"\n")  # blank lines, a 3 MB line
    by_copy = list(iter_records([path]))
    by_ref = list(iter_records([path], by_reference=True))
    assert [s for s, _ in by_ref] == [s for s, _ in by_copy]
    assert all(isinstance(p, LineRef) for _, p in by_ref)
    rows = _rows(by_ref)
    assert rows == _rows(by_copy)
    assert len(rows) == len(lines) + 1
    assert not any(SECRET.encode() in row for row in rows)  # error rows redacted as before


def test_a_line_that_can_no_longer_be_read_is_an_error_row_at_its_source(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    lines = _hostile_lines()[:3]
    path.write_bytes(b"\n".join(lines) + b"\n")
    records = list(iter_records([path], by_reference=True))
    path.write_bytes(lines[0] + b"\n")  # shrank after its lines were found
    rows = Scorer(ScoreOptions(judges=False)).score_chunk(records)
    assert [row.source for row in rows] == [s for s, _ in records]
    assert rows[0].error is None
    for row in rows[1:]:
        assert row.error is not None
        assert "cannot read" in row.error


def test_reader_reasons_keep_their_words_and_locations_are_still_digested() -> None:
    """The readers' own reasons are not taken for a pydantic location (whose keys may be the
    run's private text): only those exact words stay; anything else before a colon is digested."""
    from liveguard.errors import redact_location

    for reason in ("cannot read: the file changed while it was read", "cannot open: No such file",
                   "reading stopped: Input/output error", "invalid JSON: unexpected character"):
        assert redact_location(reason) == reason
    for private in ("cannot read my diary", "steps.0.cannot open"):
        redacted = redact_location(f"{private}: Extra inputs are not permitted")
        assert "diary" not in redacted
        assert "cannot open" not in redacted
        assert redacted.endswith(": Extra inputs are not permitted")


def test_one_scorer_shared_by_threads_reads_each_line_whole(tmp_path: Path) -> None:
    """A scorer's line buffer is shared: threads scoring by reference at once (a read releases
    the GIL while another thread parses) still parse each run from its own line."""
    import threading

    from liveguard.testing import ping_pong, trajectory

    lines = []
    for i in range(40):  # runs of different sizes, so a line read over another is seen
        run = trajectory(f"r{i}", ping_pong(rounds=1 + i % 7), graph="g")
        lines.append(run.model_dump_json().encode() + b" " * (i * 997) + b"\n")
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"".join(lines))
    records = list(iter_records([path], by_reference=True))
    scorer = Scorer(ScoreOptions(judges=False))
    expected = [row.json_bytes() for row in scorer.score_chunk(records)]
    got: list[list[bytes]] = [[] for _ in range(4)]

    def work(k: int) -> None:
        for _ in range(5):
            got[k].append(b"".join(row.json_bytes() for row in scorer.score_chunk(records)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(out == b"".join(expected) for outs in got for out in outs)


def test_a_pipe_is_read_by_copy_even_when_references_are_asked_for(tmp_path: Path) -> None:
    """`liveguard score /dev/stdin < runs.jsonl`: a pipe cannot be read again at an offset, so
    its lines come as bytes, and every run is scored."""
    import os
    import threading

    fifo = tmp_path / "runs.fifo"
    os.mkfifo(fifo)
    lines = _hostile_lines()[:3]

    def feed() -> None:
        with fifo.open("wb") as f:
            f.write(b"\n".join(lines) + b"\n")

    writer = threading.Thread(target=feed)
    writer.start()
    records = list(iter_records([fifo], by_reference=True))
    writer.join()
    assert [payload for _, payload in records] == [line + b"\n" for line in lines]
    rows = Scorer(ScoreOptions(judges=False)).score_chunk(records)
    assert len(rows) == len(lines)
    assert not any(row.error and "cannot read" in row.error for row in rows)
