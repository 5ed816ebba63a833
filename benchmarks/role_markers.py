"""CPU time of the step-text rule's searches with the role-marker alternatives searched whole
(before) and tried at their start words and line starts (after), in one process, alternating.

Usage: PYTHONPATH=backend python benchmarks/role_markers.py benchmarks/detection/data/miniswe.jsonl 12

The fields timed are those the rule searches (``_codes_masked`` calls) on
the runs' steps; "before" sets the ``fake_role_marker`` alternatives' start words to None, which
``_search_ascii`` answers with a whole-text ``search`` (the code before the change). Both must
give the same findings (asserted)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from liveguard.core.model import Trajectory
from liveguard.core.rules import injection


def main(path: str, repeats: int) -> None:
    with open(path, "rb") as f:
        steps = [step for line in f for step in Trajectory.model_validate(orjson.loads(line)).steps]
    calls: list[tuple[Callable[..., list[str]], tuple[Any, ...]]] = []
    masked = injection._codes_masked

    def record(fn: Callable[..., list[str]]) -> Callable[..., list[str]]:
        def recorded(*args: Any) -> list[str]:
            calls.append((fn, args))
            return fn(*args)
        return recorded

    injection._codes_masked = record(masked)  # type: ignore[assignment]
    rule = injection.EvaluatorInjection()
    whole = time.process_time()
    for i, step in enumerate(steps):
        rule.check(i, step)
    whole = time.process_time() - whole
    injection._codes_masked = masked  # type: ignore[assignment]
    after = injection._ALTERNATIVE_STARTS
    before = tuple(None if code == "fake_role_marker" else starts
                   for (code, _gate, _rx), starts in zip(injection._ALTERNATIVES, after, strict=True))
    best = {"before": float("inf"), "after": float("inf")}
    reference: list[list[str]] | None = None
    for _ in range(repeats):
        for name, starts in (("before", before), ("after", after)):
            injection._ALTERNATIVE_STARTS = starts  # type: ignore[misc]
            t = time.process_time()
            out = [fn(*args) for fn, args in calls]
            best[name] = min(best[name], time.process_time() - t)
            reference = reference if reference is not None else out
            assert out == reference
    injection._ALTERNATIVE_STARTS = after  # type: ignore[misc]
    chars = sum(len(args[0]) for _fn, args in calls)
    print(f"{len(steps)} steps (rule {whole * 1000:.0f} ms), {len(calls)} fields searched, {chars} chars: "
          + ", ".join(f"{name} {t * 1000:.2f} ms" for name, t in best.items()))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12)
