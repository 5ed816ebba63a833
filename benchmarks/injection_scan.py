"""Cost of the step-text rule evaluator_injection_suspected per step, on the golden steps."""

from __future__ import annotations

import time
from pathlib import Path

from liveguard.core.model import Trajectory
from liveguard.core.rules.injection import EvaluatorInjection
from liveguard.readers.jsonl import read_jsonl

ROUNDS = 50


def main() -> None:
    steps = [
        step
        for path in sorted(Path("golden_datasets").glob("*.jsonl"))
        for run in read_jsonl(path)
        if isinstance(run, Trajectory)
        for step in run.steps
    ]
    rule = EvaluatorInjection()
    started = time.perf_counter()
    for _ in range(ROUNDS):
        for index, step in enumerate(steps):
            rule.check(index, step)
    elapsed = time.perf_counter() - started
    print(f"{len(steps)} golden steps x{ROUNDS}: {elapsed / (ROUNDS * len(steps)) * 1e6:.1f} us/step")


if __name__ == "__main__":
    main()
