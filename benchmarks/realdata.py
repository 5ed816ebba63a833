"""Real-data throughput (issue 21, item 1): ``score --no-judges`` against a bare parse.

On the committed mini-swe-agent corpus (``benchmarks/detection/data/miniswe.jsonl``: real
recorded runs of gpt-5-mini and Gemini 3 Pro, about 90 KB a run, mostly long tool outputs)
and on the generated scale corpus (``benchmarks/scale_corpus.py``, small runs), it reports:

* ``parse``: a bare ``orjson.loads`` of every line of the file (the floor);
* ``score``: the engine path the CLI runs for ``liveguard score --no-judges --format jsonl``
  (``score_paths(judges=False, verdicts=False)``: ``iter_records``, by reference with more
  than one job, → ``iter_scored`` → each row's JSON bytes),
  in-process, with ``--jobs 1`` and ``--jobs 2``, for **this** checkout (the liveguard this
  interpreter imports) and, with ``--base DIR``, the liveguard package under ``DIR`` (another
  checkout's ``backend``: a baseline measured side by side).

Each tree is measured in its own child process, children alternating, best of ``--repeats``
passes each; the parse is timed in each child too, so every ratio divides two figures of the
same process. Interpreter start-up and imports are outside the timings (the CLI adds about
0.3 s of them).

Usage: ``python benchmarks/realdata.py [--repeats 3] [--scale-runs 2000] [--base DIR] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
MINISWE = HERE / "detection" / "data" / "miniswe.jsonl"


def _parse(path: Path) -> tuple[float, float]:
    """Wall time and process CPU time of a bare parse."""
    start, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as f:
        for line in f:
            orjson.loads(line)
    return time.perf_counter() - start, time.process_time() - cpu


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _score(path: Path, jobs: int) -> tuple[float, int, float, float]:
    """Wall time, rows, and the CPU time of this process and of its worker processes."""
    from liveguard.evaluate.scoring import score_paths
    from liveguard.settings import Settings

    settings = Settings.from_env({})
    own, workers = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    n = 0
    for row in score_paths([path], judges=False, jobs=jobs, verdicts=False, settings=settings):
        row.json_bytes()
        n += 1
    wall = time.perf_counter() - start
    return wall, n, _cpu(resource.RUSAGE_SELF) - own, _cpu(resource.RUSAGE_CHILDREN) - workers


def child(path: Path, repeats: int) -> dict[str, Any]:
    """In this process's build: best-of-``repeats`` parse and score (jobs 1 and 2)."""
    liveguard = importlib.import_module("liveguard")

    _score(path, 1)  # warm-up: imports, caches, the page cache
    keys = ("parse", "parse_cpu", "jobs1", "jobs1_cpu", "jobs2", "parent2", "workers2")
    best: dict[str, float] = {key: float("inf") for key in keys}
    runs = 0
    for _ in range(repeats):
        wall, cpu = _parse(path)
        best["parse"] = min(best["parse"], wall)
        best["parse_cpu"] = min(best["parse_cpu"], cpu)
        t, runs, own, _ = _score(path, 1)
        best["jobs1"] = min(best["jobs1"], t)
        best["jobs1_cpu"] = min(best["jobs1_cpu"], own)
        t, _, parent, workers = _score(path, 2)
        if t < best["jobs2"]:  # the CPU times of the fastest --jobs 2 pass
            best["jobs2"], best["parent2"], best["workers2"] = t, parent, workers
    return {**best, "runs": runs, "bytes": path.stat().st_size, "package": liveguard.__file__}


def _run_child(path: Path, repeats: int, root: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(HERE)])
    else:
        env["PYTHONPATH"] = os.pathsep.join([*filter(None, [env.get("PYTHONPATH")]), str(HERE)])
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--repeats", str(repeats)],
        env=env,
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    result: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="alternating child processes per build")
    parser.add_argument("--scale-runs", type=int, default=2000)
    parser.add_argument("--base", type=Path, help="a baseline tree's backend directory, measured alongside")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.repeats)))
        return 0
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sys.path.insert(0, str(HERE))
        from scale_corpus import SEED, write_corpus

        generated = tmp / "scale.jsonl"
        write_corpus(generated, args.scale_runs, seed=SEED)
        trees: list[tuple[str, Path | None]] = [("this", None)]
        if args.base is not None:
            trees.append(("base", args.base.resolve()))
        for label, path in (("miniswe", MINISWE), ("generated", generated)):
            best: dict[str, dict[str, Any]] = {}
            for _ in range(args.rounds):
                for build, root in trees:
                    got = _run_child(path, args.repeats, root)
                    kept = best.setdefault(build, got)
                    for key in ("parse", "parse_cpu", "jobs1", "jobs1_cpu"):
                        kept[key] = min(kept[key], got[key])
                    if got["jobs2"] < kept["jobs2"]:
                        for key in ("jobs2", "parent2", "workers2"):
                            kept[key] = got[key]
            figures[label] = best
            first = best["this"]
            print(
                f"[{label}] {path.name}: {first['runs']:,} runs, {first['bytes'] / 2**20:.1f} MiB "
                f"({first['bytes'] / first['runs'] / 1024:.1f} KiB a run)"
            )
            for build, got in best.items():
                parse = got["parse"]
                print(
                    f"  {build:5s} ({got['package']}): "
                    f"parse {parse * 1e3:6.1f} ms | score --jobs 1 {got['jobs1'] * 1e3:7.1f} ms = "
                    f"{got['jobs1'] / parse:5.1f}x parse | --jobs 2 {got['jobs2'] * 1e3:7.1f} ms = "
                    f"{got['jobs2'] / parse:5.1f}x parse (CPU: parent {got['parent2'] * 1e3:.0f} ms, "
                    f"workers {got['workers2'] * 1e3:.0f} ms)"
                )
                cpu2 = got["parent2"] + got["workers2"]
                print(f"        process CPU: parse {got['parse_cpu'] * 1e3:6.1f} ms | --jobs 1 "
                      f"{got['jobs1_cpu'] * 1e3:7.1f} ms = {got['jobs1_cpu'] / got['parse_cpu']:5.1f}x | "
                      f"--jobs 2 (parent + workers) {cpu2 * 1e3:7.1f} ms = {cpu2 / got['parse_cpu']:5.1f}x")
            if "base" in best:
                base, this = best["base"], best["this"]
                print(f"  this vs base: {base['jobs1'] / this['jobs1']:.2f}x faster (--jobs 1), "
                      f"{base['jobs2'] / this['jobs2']:.2f}x (--jobs 2); process CPU --jobs 1: "
                      f"{base['jobs1_cpu'] / this['jobs1_cpu']:.2f}x")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
