"""The step-text rule's pre-filter, pure Python against the C scanner, on the scale corpus.

Runs of ``benchmarks/scale_corpus.py`` (N runs × 24 steps, the seed of ``scale.py``'s floor
measure), side by side in one process, interleaved, median of repeats:

* per run: ``_json_may_match`` (pure) and ``_canon.Scanner.may_match`` on the run's serialised
  steps (what ``EvaluatorInjection.prefetch`` scans for a whole recorded run);
* per step: the pre-filter of a live guard (``_step_may_match``: serialise, then scan), pure
  and native;
* per run: ``check_trajectory`` with ``Policy(scan_text=True)``, with the pure and the native
  pre-filter, and with ``Policy()`` (no scan); the same per step for a live Monitor fed one
  step at a time.

Usage: ``python benchmarks/scan_prefilter.py [--runs 2000] [--repeats 5]``. Short on purpose.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import orjson

from liveguard import Monitor, Policy, Trajectory
from liveguard.monitor import check_trajectory
from liveguard.rules import injection
from scale_corpus import SEED, iter_runs
from timing import interleaved_medians


def _pure_step(step: Any) -> bool:
    """``_step_may_match`` with the pure-Python scan (every corpus step serialises)."""
    return injection._json_may_match(orjson.dumps(injection._fields(step)))


def _with(scanner: Any, fn: Callable[[], Any]) -> Callable[[], None]:
    """``fn`` with the rule's native scanner switched to ``scanner`` (None: the pure path)."""

    def run() -> None:
        saved = injection._SCANNER
        injection._SCANNER = scanner
        try:
            fn()
        finally:
            injection._SCANNER = saved

    return run


def _check(runs: list[Trajectory], policy: Policy) -> Callable[[], None]:
    def run() -> None:
        for r in runs:
            check_trajectory(r.steps, policy)

    return run


def _live(runs: list[Trajectory], policy: Policy) -> Callable[[], None]:
    def run() -> None:
        for r in runs:
            monitor = Monitor(policy)
            for step in r.steps:
                monitor.observe(step)

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    scanner = injection._SCANNER
    if scanner is None:
        print("scan pre-filter: nothing to compare, the C scanner is not available "
              "(not built, or LIVEGUARD_NO_CANON=1)")
        return 0
    runs = [Trajectory.model_validate(r) for r in iter_runs(args.runs, seed=SEED + 1)]
    raws = [orjson.dumps([injection._fields(s) for s in run.steps]) for run in runs]
    steps = [s for run in runs for s in run.steps]
    pure, native = injection._json_may_match, scanner.may_match
    same = sum(pure(raw) == native(raw) for raw in raws)
    print(f"{len(runs):,} runs x 24 steps, {sum(map(len, raws)) / len(raws) / 1024:.1f} KiB of step JSON "
          f"a run; verdicts equal on {same:,} of {len(raws):,} runs")

    t = interleaved_medians({"pure": lambda: [pure(r) for r in raws],
                             "native": lambda: [native(r) for r in raws]}, args.repeats)
    per_run = {k: v / len(raws) * 1e6 for k, v in t.items()}
    print(f"pre-filter per run:   pure {per_run['pure']:6.1f} µs   native {per_run['native']:6.2f} µs   "
          f"{per_run['pure'] / per_run['native']:.0f}x")

    t = interleaved_medians({"pure": lambda: [_pure_step(s) for s in steps],
                             "native": lambda: [injection._step_may_match(s) for s in steps]},
                            args.repeats)
    per_step = {k: v / len(steps) * 1e6 for k, v in t.items()}
    print(f"live, per step:       pure {per_step['pure']:6.2f} µs   native {per_step['native']:6.2f} µs   "
          f"{per_step['pure'] / per_step['native']:.1f}x  (serialising the step included)")

    scan, plain = Policy(scan_text=True), Policy()
    for label, make, unit, count in (("check_trajectory per run", _check, "run", len(runs)),
                                     ("live Monitor per step", _live, "step", len(steps))):
        t = interleaved_medians({"scan, pure": _with(None, make(runs, scan)),
                                 "scan, native": _with(scanner, make(runs, scan)),
                                 "no scan": _with(scanner, make(runs, plain))}, args.repeats)
        per = {k: v / count * 1e6 for k, v in t.items()}
        print(f"{label}: " + ", ".join(f"{k} {v:.1f} µs" for k, v in per.items()))
        print(f"  the rule's cost per {unit}: pure {per['scan, pure'] - per['no scan']:.1f} µs, "
              f"native {per['scan, native'] - per['no scan']:.1f} µs")
    return 0 if same == len(raws) else 1


if __name__ == "__main__":
    sys.exit(main())
