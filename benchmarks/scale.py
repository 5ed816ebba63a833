"""Scoring at scale (issue 12): run by ``make bench`` after ``benchmarks/run.py``.

On generated corpora (``benchmarks/scale_corpus.py``: N runs × 24 steps, 5% loops, fixed
seed, written to a temp dir), one after the other in one invocation:

* ``liveguard score --no-judges --format jsonl`` wall time ÷ a bare ``orjson.loads`` of
  every line of the same file, with ``--jobs 1`` and ``--jobs`` = cores; peak memory of the
  whole process tree (the command and its workers: the sum of their PSS, so pages that
  forked workers share are counted once; sampled from /proc every 20 ms);
* per-run cost of the floor (the eval graph's nodes without LangGraph) ÷ ``check_trajectory``
  on the same runs and policy (interleaved, median of repeats);
* the Ray engine on a local 2-CPU Ray cluster against the local engine (same rows checked);
* memory per guarded thread: a Monitor fed 200 steps of a typical tool agent.

Usage: ``python benchmarks/scale.py [--sizes 20000,100000] [--json PATH] [--no-ray]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

from liveguard import Monitor, Policy, Step, Trajectory
from liveguard.core._monitor import check_trajectory
from scale_corpus import SEED, iter_runs, write_corpus
from timing import interleaved_medians

EXE = Path(sys.executable).with_name("liveguard")


def _tree_rss(pid: int) -> int:
    """Proportional resident bytes (PSS: pages shared by forked workers counted once) of
    ``pid`` and all its descendants."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("Pss:"))
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError, StopIteration):  # a process gone, or no Pss line
            continue
    return total


def timed_run(cmd: list[str], cwd: Path, sample: bool, ok: tuple[int, ...] = (0,)) -> tuple[float, int]:
    """Run ``cmd`` (output to /dev/null, judges off): wall seconds, and with ``sample`` the peak
    PSS of its process tree in bytes (0 without). An exit status outside ``ok`` is an error."""
    env = {**os.environ, "LLM_KILL_SWITCH": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    peak = 0
    done = threading.Event()

    def sampler() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.02)

    thread = threading.Thread(target=sampler, daemon=True)
    if sample:
        thread.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    if sample:
        thread.join()
    if proc.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.decode()[-500:]}")
    return wall, peak


def _score_once(path: Path, jobs: int, sample: bool) -> tuple[float, int]:
    """One ``liveguard score`` run (rows to /dev/null): wall seconds, and with ``sample`` the
    peak PSS of the process tree (0 without)."""
    cmd = [str(EXE), "score", str(path), "--no-judges", "--format", "jsonl", "--jobs", str(jobs)]
    # From the corpus's directory: no ./expected_paths/ is picked up on the way.
    return timed_run(cmd, path.parent, sample)


def run_score(path: Path, jobs: int, repeats: int = 2) -> dict[str, float]:
    """Wall time (best of ``repeats`` runs, as for the bare parse) and, from one more run, the
    peak memory. The memory run is separate because reading every process's
    ``/proc/PID/smaps_rollup`` every 20 ms costs CPU on the same cores (it slowed the timed
    run by about 10% on 2 cores)."""
    wall = min(_score_once(path, jobs, sample=False)[0] for _ in range(repeats))
    _, peak = _score_once(path, jobs, sample=True)
    return {"wall_s": wall, "peak_rss_mb": peak / 2**20}


def bare_parse(path: Path) -> float:
    """Seconds for ``orjson.loads`` of every line (best of 3; the file is in the page cache)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        with path.open("rb") as f:
            for line in f:
                orjson.loads(line)
        best = min(best, time.perf_counter() - start)
    return best


def _each(fn: Any, runs: list[Trajectory]) -> None:
    for run in runs:
        fn(run)


def floor_vs_check(n: int = 2000, repeats: int = 5) -> dict[str, float]:
    """Per-run µs of the floor and of check_trajectory on the same parsed runs.

    Each result is dropped as soon as it is made, as streaming scoring drops each verdict
    once its row is written (``ratio``). ``ratio_kept`` keeps all ``n`` results in a list
    until the pass ends (this script's method before 2026-11-30 13:40): the floor's larger
    results then also cost fresh memory, which scoring never pays."""
    from liveguard.evaluate.engine.scorer import ScoreOptions, Scorer

    runs = [Trajectory.model_validate(r) for r in iter_runs(n, seed=SEED + 1)]
    scorer = Scorer(ScoreOptions(judges=False))
    assert scorer.floor is not None, "the floor declined the eval graph"
    policy = scorer.policy_for(runs[0]) | {"scan_text": True}  # like with like: the floor scans text
    contenders = {
        "floor": lambda: _each(scorer.floor_verdict, runs),
        "check_trajectory": lambda: _each(lambda r: check_trajectory(r.steps, policy), runs),
        "floor_kept": lambda: [scorer.floor_verdict(r) for r in runs],
        "check_trajectory_kept": lambda: [check_trajectory(r.steps, policy) for r in runs],
    }
    out = {f"{k}_us": seconds / n * 1e6 for k, seconds in interleaved_medians(contenders, repeats).items()}
    out["ratio"] = out["floor_us"] / out["check_trajectory_us"]
    out["ratio_kept"] = out["floor_kept_us"] / out["check_trajectory_kept_us"]
    return out


def floor_breakdown(n: int = 2000, repeats: int = 3) -> dict[str, float]:
    """µs per run spent in each node of the floor, and in the floor's own state updates."""
    from liveguard.evaluate.engine.floor import _drive
    from liveguard.evaluate.engine.scorer import ScoreOptions, Scorer
    from liveguard.evaluate.eval_graph import _inputs

    runs = [Trajectory.model_validate(r) for r in iter_runs(n, seed=SEED + 1)]
    scorer = Scorer(ScoreOptions(judges=False))
    floor = scorer.floor
    assert floor is not None
    spent: dict[str, float] = {}
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            for run in runs:
                state = {k: type(v)() for k, v in floor._initial.items()}
                start = time.perf_counter()
                floor._apply(state, _inputs(run, None, scorer.policy_for(run), None))
                spent["(inputs)"] = spent.get("(inputs)", 0.0) + time.perf_counter() - start
                for name, fn, is_async in floor._steps:
                    start = time.perf_counter()
                    update = _drive(fn(state)) if is_async else fn(state)
                    mid = time.perf_counter()
                    floor._apply(state, update)
                    spent[name] = spent.get(name, 0.0) + mid - start
                    spent["(state updates)"] = spent.get("(state updates)", 0.0) + time.perf_counter() - mid
    finally:
        gc.enable()
    return {k: v / (n * repeats) * 1e6 for k, v in spent.items()}


def ray_vs_local(path: Path) -> dict[str, Any]:
    """Rows per second of the Ray engine (local 2-CPU cluster) and the local engine, same rows."""
    try:
        import ray
    except ImportError:
        return {"skipped": "ray extra not installed"}
    from liveguard.evaluate.scoring import score_paths

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    startup = time.perf_counter() - start
    try:
        start = time.perf_counter()
        remote = [r.as_json() for r in score_paths([str(path)], engine="ray", judges=False)]
        ray_s = time.perf_counter() - start
    finally:
        ray.shutdown()
    start = time.perf_counter()
    local = [r.as_json() for r in score_paths([str(path)], engine="local", judges=False, jobs=2)]
    local_s = time.perf_counter() - start
    return {
        "runs": len(local),
        "identical": remote == local,
        "ray_startup_s": startup,
        "ray_s": ray_s,
        "local_s": local_s,
        "ray_runs_per_s": len(remote) / ray_s,
        "local_runs_per_s": len(local) / local_s,
    }


def monitor_memory(threads: int = 1000, steps: int = 200) -> dict[str, float]:
    """Bytes retained per Monitor after ``steps`` steps of a tool agent (tracemalloc)."""
    policy = Policy.tool_agent()
    source: list[Step] = []
    for run in iter_runs(20, steps=24, loop_rate=0.0, seed=SEED + 2):
        source += [Step.model_validate(s) for s in run["steps"]]
    feed = [source[i % len(source)] for i in range(steps)]
    gc.collect()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    monitors = []
    for _ in range(threads):
        m = Monitor(policy)
        for s in feed:
            m.observe(s)
        monitors.append(m)
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"threads": threads, "steps": steps, "bytes_per_monitor": (current - base) / threads}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--ray-size", type=int, default=20_000)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    sizes = [int(s) for s in args.sizes.split(",") if s]
    report: dict[str, Any] = {"cores": cores, "seed": SEED, "corpora": {}, "command": " ".join(sys.argv)}
    print(f"liveguard scale benchmark: {cores} core(s), load {os.getloadavg()[0]:.2f}, seed {SEED}")
    with tempfile.TemporaryDirectory(prefix="liveguard-scale-") as tmp:
        for n in sizes:
            path = Path(tmp) / f"corpus-{n}.jsonl"
            start = time.perf_counter()
            write_corpus(path, n)
            size_mb = path.stat().st_size / 2**20
            parse = bare_parse(path)
            made = time.perf_counter() - start
            entry: dict[str, Any] = {"mb": size_mb, "parse_s": parse, "generate_s": made}
            print(f"\n[{n:,} runs x 24 steps] {size_mb:,.0f} MB ({size_mb * 2**20 / n / 1024:.1f} KiB/run), "
                  f"bare orjson parse {parse:.2f} s")
            for jobs in sorted({1, cores}):
                r = run_score(path, jobs)
                r["ratio"] = r["wall_s"] / parse
                r["runs_per_s"] = n / r["wall_s"]
                entry[f"jobs{jobs}"] = r
                print(f"  score --jobs {jobs}: {r['wall_s']:.1f} s = {r['ratio']:.1f}x parse, "
                      f"{r['runs_per_s']:,.0f} runs/s, peak RSS {r['peak_rss_mb']:.0f} MB")
            report["corpora"][str(n)] = entry
            if n == args.ray_size and not args.no_ray:
                report["ray"] = ray_vs_local(path)
                print(f"  ray: {report['ray']}")
            path.unlink()
    report["floor"] = floor_vs_check()
    f = report["floor"]
    print(f"\nfloor {f['floor_us']:.0f} µs/run vs check_trajectory {f['check_trajectory_us']:.0f} µs/run "
          f"= {f['ratio']:.2f}x (results dropped as scoring does; all {2000:,} results kept: "
          f"{f['floor_kept_us']:.0f} vs {f['check_trajectory_kept_us']:.0f} = {f['ratio_kept']:.2f}x)")
    report["floor_breakdown"] = floor_breakdown()
    print("  µs per run by node: " + ", ".join(f"{k} {v:.1f}" for k, v in report["floor_breakdown"].items()))
    report["monitor_memory"] = monitor_memory()
    print(f"memory per guarded thread (Monitor, 200 tool-agent steps): "
          f"{report['monitor_memory']['bytes_per_monitor'] / 1024:.1f} KiB")
    report["load_end"] = os.getloadavg()[0]
    print(f"load average at the end: {report['load_end']:.2f}")
    print("\nsummary (issue 12 goals)")
    for line in goals(report, cores):
        print("  " + line)
    if args.json:
        Path(args.json).write_text(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    return 0


def goals(report: dict[str, Any], cores: int) -> list[str]:
    """One PASS/MISS line per goal that this run measured."""
    out: list[str] = []
    corpora = report["corpora"]
    top = max(corpora, key=int) if corpora else None
    if top is not None and f"jobs{cores}" in corpora[top]:
        ratio = corpora[top][f"jobs{cores}"]["ratio"]
        out.append(f"{'PASS' if ratio <= 5 else 'MISS'}  score / parse, {int(top):,} runs, --jobs {cores}: "
                   f"{ratio:.1f}x (goal <= 5x)")
    if "20000" in corpora:
        rss = max(corpora["20000"][k]["peak_rss_mb"] for k in corpora["20000"] if k.startswith("jobs"))
        verdict = "PASS" if rss < 300 else "MISS"
        out.append(f"{verdict}  peak memory, 20,000 runs: {rss:.0f} MB (goal < 300 MB)")
    if len(corpora) > 1:
        small, big = min(corpora, key=int), max(corpora, key=int)
        for k in corpora[small]:
            if k.startswith("jobs") and k in corpora[big]:
                a, b = corpora[small][k]["peak_rss_mb"], corpora[big][k]["peak_rss_mb"]
                ok = b <= a * 1.25
                out.append(f"{'PASS' if ok else 'MISS'}  memory independent of size, --{k[:4]} {k[4:]}: "
                           f"{a:.0f} MB at {int(small):,} runs, {b:.0f} MB at {int(big):,} (within 25%)")
    f = report["floor"]["ratio"]
    out.append(f"{'PASS' if f <= 1.3 else 'MISS'}  floor / check_trajectory per run: {f:.2f}x (goal <= 1.3x)")
    kib = report["monitor_memory"]["bytes_per_monitor"] / 1024
    out.append(f"{'PASS' if kib <= 4 else 'MISS'}  memory per guarded thread: {kib:.1f} KiB (goal <= 4 KiB)")
    ray = report.get("ray")
    if ray and "identical" in ray:
        out.append(f"{'PASS' if ray['identical'] else 'MISS'}  Ray rows identical to the local engine's "
                   f"({ray['runs']:,} runs)")
    return out


if __name__ == "__main__":
    sys.exit(main())
