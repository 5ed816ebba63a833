"""The benchmarks' shared timing loop: contenders side by side in one process."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

__all__ = ["interleaved_medians"]


def interleaved_medians(contenders: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median seconds of one pass of each contender: one untimed warm-up each, then
    ``repeats`` rounds whose order alternates, the GC collected and paused for each pass."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():
        fn()
    for i in range(repeats):
        for name in list(contenders)[:: 1 if i % 2 == 0 else -1]:
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - start)
            gc.enable()
    return {k: statistics.median(v) for k, v in times.items()}
