"""The Monitor per step on real runs (issue 21, item 1): two builds of liveguard side by side.

Times, in child processes that alternate between the two source trees given (each child
imports liveguard from its tree), on a JSONL corpus (default: the committed mini-swe-agent runs,
``benchmarks/detection/data/miniswe.jsonl``), CPU time (``time.process_time``), best of
``--repeats`` in each child and of ``--rounds`` children per tree:

* ``parse``: a bare ``orjson.loads`` of every line (the floor ``score`` is compared to);
* ``score``: what ``benchmarks/realdata.py`` times for ``score --no-judges --format jsonl``
  with one worker: ``iter_scored(iter_records([path]), judges=False, jobs=1,
  verdicts=False)`` and each row's ``json_bytes()``;
* the stages of that path: ``parse_line`` (orjson and the ``Trajectory`` model) of every
  line, the ``floor`` (``Scorer.floor_verdict``: the Monitor and the verdict) of every run
  already parsed, and the ``rows`` (``RunRow`` and its JSON bytes) of every verdict;
* ``monitor``: the Monitor's own per-step cost, without the two parts other work owns (the
  canonical form with its volatile masks, and the step-text rule): each run's Monitor (its policy,
  ``scan_text`` off) with ``orjson.dumps`` standing in for the canonical form, less the
  cost of ``orjson.dumps`` and xxh3 of the same payloads.

With ``--instructions``, each stage's instructions per pass are also counted under valgrind
(cachegrind without cache simulation; a few minutes): on 2 shared cores the CPU times move
by 10–20 % with the other processes' load, the instruction counts do not.

Usage: ``python benchmarks/stepcost.py --before TREE --after TREE [--rounds 3] [--repeats 5]
[--instructions]`` (``TREE``: a checkout whose ``backend/`` holds the liveguard package).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MINISWE = HERE / "detection" / "data" / "miniswe.jsonl"
METRICS = ("parse", "score", "parse_line", "floor", "rows", "monitor")


def _best(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1000


def _stages(path: Path) -> dict[str, Callable[[], object]]:
    """The timed functions, set up on ``path`` (the corpus parsed and scored once)."""
    import orjson
    from xxhash import xxh3_128_digest

    from liveguard.core._monitor import Monitor
    from liveguard.evaluate.engine.scorer import ScoreOptions, Scorer
    from liveguard.evaluate.scoring import iter_records, iter_scored
    from liveguard.readers.jsonl import parse_line
    from liveguard.settings import Settings

    settings = Settings.from_env({})
    lines = path.read_bytes().splitlines()
    scorer = Scorer(ScoreOptions(judges=False, env={}, verdicts=False))
    runs = [parse_line(line, "x") for line in lines]
    verdicts = [scorer.floor_verdict(run) for run in runs]  # type: ignore[arg-type]
    policies = [scorer.policy_for(run) for run in runs]  # type: ignore[arg-type]
    payloads = [(s.tool, s.args, s.result, s.error) if s.tool else (s.summary or s.output)
                for run in runs for s in run.steps]  # type: ignore[union-attr]

    def parse() -> None:
        for line in lines:
            orjson.loads(line)

    def score() -> None:
        for row in iter_scored(iter_records([path]), judges=False, jobs=1, verdicts=False, settings=settings):
            row.json_bytes()

    def parse_lines() -> None:
        for line in lines:
            parse_line(line, "x")

    def floor() -> None:
        for run in runs:
            scorer.floor_verdict(run)  # type: ignore[arg-type]

    def rows() -> None:
        for run, verdict in zip(runs, verdicts, strict=True):
            scorer._row("x", run, verdict).json_bytes()  # type: ignore[arg-type]

    def monitor() -> None:
        for run, policy in zip(runs, policies, strict=True):
            m = Monitor(policy)
            try:
                m._digest = _stand_in  # type: ignore[method-assign]
            except AttributeError:  # a tree from before the C accelerator's removal
                m._canonical = orjson.dumps  # type: ignore[attr-defined]
            m.observe_all(run.steps)  # type: ignore[union-attr]
            m.finish()

    def _stand_in(payload: object) -> bytes:
        return xxh3_128_digest(orjson.dumps(payload))

    def stand_in() -> None:
        for payload in payloads:
            xxh3_128_digest(orjson.dumps(payload))

    def sizes() -> tuple[int, int]:
        return len(runs), len(payloads)

    return {"parse": parse, "score": score, "parse_line": parse_lines, "floor": floor, "rows": rows,
            "monitor": monitor, "stand_in": stand_in, "sizes": sizes}


def child(path: Path, repeats: int) -> dict[str, Any]:
    stages = _stages(path)
    stages["score"]()  # warm-up: imports, caches, the page cache
    got = {key: _best(stages[key], repeats) for key in ("parse", "score", "parse_line", "floor", "rows")}
    got["monitor"] = _best(stages["monitor"], 4 * repeats) - _best(stages["stand_in"], 4 * repeats)
    runs, steps = stages["sizes"]()  # type: ignore[misc]
    return {**got, "runs": runs, "steps": steps}


def _instructions(tree: Path, path: Path, stage: str, passes: int) -> int:
    """Instructions executed by a child that sets up, warms ``stage`` up and runs it ``passes``
    times, under valgrind (cachegrind, no cache simulation): a count the machine's load does
    not move."""
    env = dict(os.environ, PYTHONPATH=str(tree / "backend"), PYTHONHASHSEED="0")  # the same dict layouts
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    out = subprocess.run([*valgrind, sys.executable, __file__, "--child", str(path), "--stage", stage,
                          "--passes", str(passes)],
                         env=env, capture_output=True, check=True, cwd=tempfile.gettempdir())
    for line in out.stderr.decode().splitlines():
        if "I refs:" in line or "I   refs:" in line:
            return int(line.rsplit(":", 1)[1].strip().replace(",", ""))
    raise RuntimeError("no instruction count from valgrind")


def instructions(trees: dict[str, Path], path: Path) -> dict[str, dict[str, float]]:
    """Millions of instructions a pass of each stage executes, per tree (two children per
    stage: 0 and 2 passes after the warm-up; ``monitor`` less its stand-in)."""
    out: dict[str, dict[str, float]] = {}
    for label, tree in trees.items():
        got: dict[str, float] = {}
        for stage in ("parse", "score", "parse_line", "floor", "rows", "monitor", "stand_in"):
            got[stage] = (_instructions(tree, path, stage, 2) - _instructions(tree, path, stage, 0)) / 2e6
        got["monitor"] -= got.pop("stand_in")
        out[label] = got
    return out


def _run_child(tree: Path, path: Path, repeats: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree / "backend"))
    out = subprocess.run([sys.executable, __file__, "--child", str(path), "--repeats", str(repeats)],
                         env=env, capture_output=True, check=True, cwd=tempfile.gettempdir())
    result: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--after", type=Path)
    parser.add_argument("--corpus", type=Path, default=MINISWE)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--instructions", action="store_true",
                        help="also count each stage's instructions under valgrind (minutes)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None and args.stage is not None:
        fn = _stages(args.child)[args.stage]
        fn()  # warm-up
        for _ in range(args.passes):
            fn()
        return 0
    if args.child is not None:
        print(json.dumps(child(args.child, args.repeats)))
        return 0
    if args.before is None or args.after is None:
        parser.error("--before and --after are required")
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.rounds):
        for label, tree in (("before", args.before), ("after", args.after)):
            got = _run_child(tree, args.corpus, args.repeats)
            kept = best.setdefault(label, got)
            for key in METRICS:
                kept[key] = min(kept[key], got[key])
    first = best["before"]
    print(f"{args.corpus.name}: {first['runs']:,} runs, {first['steps']:,} steps")
    print(f"{'ms (best)':<12}{'before':>10}{'after':>10}{'after/before':>14}")
    for key in METRICS:
        b, a = best["before"][key], best["after"][key]
        print(f"{key:<12}{b:>10.1f}{a:>10.1f}{a / b:>14.2f}")
    for label in ("before", "after"):
        got = best[label]
        print(f"{label}: score / parse = {got['score'] / got['parse']:.2f}")
    report: dict[str, Any] = {"time_ms": best}
    if args.instructions:
        counted = instructions({"before": args.before, "after": args.after}, args.corpus)
        print(f"{'M instr/pass':<12}{'before':>10}{'after':>10}{'after/before':>14}")
        for key in counted["before"]:
            b, a = counted["before"][key], counted["after"][key]
            print(f"{key:<12}{b:>10.1f}{a:>10.1f}{a / b:>14.2f}")
        for label in ("before", "after"):
            got = counted[label]
            print(f"{label}: score / parse = {got['score'] / got['parse']:.2f} (instructions)")
        report["instructions_m"] = counted
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
