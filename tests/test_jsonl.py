"""The JSONL trajectory format: bad lines become typed, located errors; nothing is dropped."""

from __future__ import annotations

from pathlib import Path

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
    assert "steps.0.colour" in errors[2].reason
    assert isinstance(errors[0], ValueError)


def test_missing_file_is_an_error_item(tmp_path: Path) -> None:
    [item] = list(read_jsonl(tmp_path / "nope.jsonl"))
    assert isinstance(item, TrajectoryReadError)
    assert "cannot open" in item.reason
