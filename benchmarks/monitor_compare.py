"""The Monitor of this checkout against another one, side by side in one process.

Two measures, interleaved repeats, minimum CPU time (the machine is shared):

* ``check_trajectory`` per run without the step-text scan, on ``iter_runs(2000, seed=SEED + 1)``
  parsed with ``Trajectory.model_validate``, with the policy the scorer picks for them
  (``Scorer(ScoreOptions(judges=False)).policy_for(run) | {"scan_text": False}``), and
  ``Monitor.observe`` step by step (the live path) on the same runs;
* memory per guarded thread: ``scale.py``'s ``monitor_memory()`` (1,000 Monitors x 200
  tool-agent steps, tracemalloc).

Usage::

    git worktree add /tmp/liveguard-old <commit>   # or: git archive <commit> backend | tar -x -C DIR
    python benchmarks/monitor_compare.py --old /tmp/liveguard-old/backend

Contenders: the other checkout, this checkout's sources as pure Python (a temporary copy
without the mypyc extensions), and this checkout as built (``make install`` compiles the
Monitor's modules with mypyc; skipped when nothing is compiled). Each package is imported in
turn under the name ``liveguard`` (``sys.modules`` is cleared in between), so each runs with
its own pydantic models on runs parsed by them. The C accelerator is the same source in all
(an old checkout without a built ``_canon`` gets this one's). When this checkout is compiled,
the other must not be: two mypyc builds of the same module list share one extension name, and a
process can load only one (compare two compiled builds with two runs, each against the other's
sources as pure Python). ``--no-volatile`` measures the
same policy with ``volatile=()``: the digests without the masking of times and ids, which
runs in Python regular expressions outside the compiled modules.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale_corpus import SEED, iter_runs  # noqa: E402


def _load(backend: Path, n: int, volatile: bool = True) -> dict[str, Any]:
    """Import ``liveguard`` from ``backend`` and prepare its contenders."""
    for name in [m for m in sys.modules if m == "liveguard" or m.startswith("liveguard.")]:
        del sys.modules[name]
    sys.modules.pop("scale", None)
    sys.path.insert(0, str(backend))
    try:
        liveguard = importlib.import_module("liveguard")
        monitor_mod = importlib.import_module("liveguard.monitor")
        scorer_mod = importlib.import_module("liveguard.engine.scorer")
        scale = importlib.import_module("scale")
    finally:
        sys.path.remove(str(backend))
    runs = [liveguard.Trajectory.model_validate(r) for r in iter_runs(n, seed=SEED + 1)]
    scorer = scorer_mod.Scorer(scorer_mod.ScoreOptions(judges=False))
    policy = scorer.policy_for(runs[0]) | {"scan_text": False}
    if not volatile:
        policy = policy | {"volatile": ()}
    check, monitor_cls = monitor_mod.check_trajectory, monitor_mod.Monitor

    def offline() -> None:
        for run in runs:
            check(run.steps, policy)

    def live() -> None:
        for run in runs:
            monitor = monitor_cls(policy)
            for step in run.steps:
                monitor.observe(step)
            monitor.finish()

    return {"file": liveguard.__file__, "offline": offline, "live": live,
            "memory": scale.monitor_memory}


def _cpu(fn: Any) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        fn()
        return time.process_time() - start
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, type=Path, help="the other checkout's backend/ directory")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-volatile", action="store_true",
                        help="the policy with volatile=() (no masking of times and ids in the digests)")
    args = parser.parse_args(argv)
    volatile = not args.no_volatile
    new_backend = HERE.parent / "backend"
    if not list((args.old / "liveguard").glob("_canon*.so")):
        for built in (new_backend / "liveguard").glob("_canon*.so"):
            shutil.copy(built, args.old / "liveguard")
    compiled = [so for so in (new_backend / "liveguard").rglob("*.so") if not so.name.startswith("_canon.")]
    with tempfile.TemporaryDirectory(prefix="liveguard-pure-") as pure:
        contenders = {"old": _load(args.old.resolve(), args.runs, volatile)}
        contenders["new, pure"] = _load(_pure_copy(new_backend, Path(pure) / "new"), args.runs, volatile)
        if compiled:
            contenders["new, mypyc"] = _load(new_backend, args.runs, volatile)
        return _compare(contenders, args.runs, args.repeats)


def _pure_copy(backend: Path, target: Path) -> Path:
    """A copy of ``backend``'s package without its mypyc extensions (the C accelerator kept)."""
    shutil.copytree(backend / "liveguard", target / "liveguard", ignore=shutil.ignore_patterns("__pycache__"))
    for so in (target / "liveguard").rglob("*.so"):
        if not so.name.startswith("_canon."):
            so.unlink()
    return target


def _compare(contenders: dict[str, dict[str, Any]], runs: int, repeats: int) -> int:
    for name, c in contenders.items():
        print(f"{name}: {c['file']}")
    best: dict[tuple[str, str], float] = {}
    for i in range(repeats):
        for name in list(contenders)[:: 1 if i % 2 == 0 else -1]:
            for measure in ("offline", "live"):
                t = _cpu(contenders[name][measure])
                key = (name, measure)
                best[key] = min(best.get(key, t), t)
    labels = {"offline": "check_trajectory, no scan", "live": "Monitor.observe step by step"}
    for measure, label in labels.items():
        old = best[("old", measure)]
        figures = ", ".join(f"{name} {best[(name, measure)] / runs * 1e6:.1f} µs/run "
                            f"({best[(name, measure)] / old:.2f}x)" for name in contenders)
        print(f"{label}: {figures}")
    for name, c in contenders.items():
        mem = c["memory"]()
        print(f"memory per guarded thread, {name}: {mem['bytes_per_monitor'] / 1024:.2f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
