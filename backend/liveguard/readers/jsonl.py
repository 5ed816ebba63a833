"""The project's JSONL trajectory format: one run per line.

Reading never stops at a bad line: each line yields either a ``Trajectory`` or a
``TrajectoryReadError`` naming ``file:line``, so a batch goes on and nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson
from pydantic import ValidationError

from liveguard.core.model import Trajectory
from liveguard.core.schema_errors import describe
from liveguard.errors import TrajectoryReadError

__all__ = ["parse_line", "read_jsonl", "write_jsonl"]


def parse_line(text: str | bytes | memoryview, source: str) -> Trajectory | TrajectoryReadError:
    """One JSONL line → a Trajectory, or a typed error located at ``source``."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return TrajectoryReadError(source, f"invalid JSON: {exc}")
    if not isinstance(data, dict):
        return TrajectoryReadError(source, f"expected a JSON object, got {type(data).__name__}")
    try:  # Trajectory.model_validate without its own call overhead: the same validation
        run: Trajectory = Trajectory.__pydantic_validator__.validate_python(data)
        return run
    except ValidationError as exc:  # keys and positions, every error, never a value
        return TrajectoryReadError(source, describe(exc, Trajectory))


def read_jsonl(path: str | Path) -> Iterator[Trajectory | TrajectoryReadError]:
    """Yield every run in a JSONL file; blank lines are skipped, bad ones become errors."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield TrajectoryReadError(str(path), f"cannot open: {exc.strerror or exc}")
        return
    with handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield parse_line(raw, f"{path}:{number}")


def write_jsonl(path: str | Path, runs: Iterable[Trajectory]) -> None:
    """Write runs in the canonical JSONL form (stable key order, one run per line)."""
    with Path(path).open("wb") as out:
        for run in runs:
            data = run.model_dump(mode="json", exclude_none=True)
            out.write(orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n")
