"""Run steps one per invoke: a fresh Monitor restored from the last JSON snapshot each step,
as a live guard resumes a thread. Checks no snapshot holds any of the ``absent`` words, in any case."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from liveguard import Monitor, Policy, Step, Violation

__all__ = ["one_step_per_invoke"]


def one_step_per_invoke(steps: Sequence[Step], policy: Policy, absent: Iterable[str] = ()) -> list[Violation]:
    words = tuple(word.lower() for word in absent)
    found: list[Violation] = []
    snapshot = None
    for step in steps:
        monitor = Monitor(policy) if snapshot is None else Monitor.restore(snapshot, policy)
        monitor.new_run()
        found += monitor.observe(step)
        text = json.dumps(monitor.snapshot())
        folded = text.lower()
        for word in words:
            assert word not in folded, f"the snapshot holds step text ({word!r})"
        snapshot = json.loads(text)
    return found
