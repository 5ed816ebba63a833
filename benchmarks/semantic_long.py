"""The semantic layer on long and many steps (issue 21, item 2): ``make bench`` runs it.

Alone: ``.venv/bin/python benchmarks/semantic_long.py [--steps 250,1000] [--long 10000]
[--no-long] [--embedder local|static] [--json PATH]``.

``--embedder`` (default ``local``, MiniLM): the embedder measured, with the threshold tuned
for it (``liveguard.core.semantic.registry.threshold_for``; ``liveguard score --embedder``).
With ``static``, the floor is a text's CPU time with its tokens' vectors computed (warm)
and, separately, with none computed yet (cold: each new token is one short forward pass);
each per-step run starts with an empty token table.

Runs are generated here (fixed seed): two nodes taking turns, each message step about
140 plain words, so that every step fills the model's 128 tokens. Two kinds:

* **plain words** (the worst case): no number, name or growth, so every step could repeat
  its window (it is a candidate of the novelty test) and every step is embedded;
* **with facts**: the same steps, each naming its own ticket number, so the novelty test
  settles every step by words and nothing is embedded.

Reports, with the semantic layer on (``Policy(semantic=True)``, the shipped defaults but
the embedder):

1. ms per step at 128 tokens: ``check_trajectory`` of one run (the offline path: one
   batched prefetch, then the rules), cold cache, model already loaded; wall and CPU; and
   the model's floor, the CPU time of one forward pass per 128-token text (batches of 8);
2. a 10,000-step run scored end to end: ``liveguard score --semantic --no-judges --format
   jsonl --jobs 1`` (process start and model load included), wall seconds;
3. peak memory of ``liveguard score --semantic --no-judges`` (default ``--jobs``: the cores)
   on 3 runs of five 1 MB messages: the sum of the PSS of the process tree (scale.py's
   reader), and its wall time.

A report, never a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from liveguard import Policy, Step, check_trajectory
from scale import timed_run

SEED = 21
_VOCABULARY = (
    "report review check plan draft update status summary result answer order reply message team task "
    "issue search fetch compare decide write build send read open close start finish retry wait change "
    "improve confirm customer account invoice payment refund shipping delivery product price support "
    "request ticket service server client database query table index cache memory storage network "
    "latency error warning failure success morning evening week month quarter year today yesterday "
    "tomorrow early late quickly slowly carefully clearly agent model prompt output input context "
    "window token score judge policy rule loop step node graph edge state"
)
WORDS = _VOCABULARY.split()
NODES = ("writer", "reviewer")


def message(rng: random.Random, words: int = 140) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def run(steps: int, *, facts: bool = False, seed: int = SEED, words: int = 140) -> list[dict[str, str]]:
    """One run's steps: two nodes taking turns; ``facts``: each message names its own ticket."""
    rng = random.Random(seed)
    out = []
    for i in range(steps):
        text = message(rng, words)
        if facts:
            text = f"Ticket T-{1000 + i}: {text}"
        out.append({"node": NODES[i % 2], "summary": text})
    return out


def big_runs(runs: int = 3, messages: int = 5, size: int = 1_000_000) -> list[dict[str, Any]]:
    """``runs`` runs of ``messages`` messages of ``size`` characters of plain words each."""
    out = []
    for r in range(runs):
        rng = random.Random(SEED + r)
        steps = []
        for i in range(messages):
            text = message(rng, size // 6)
            steps.append({"node": NODES[i % 2], "summary": (text * (size // len(text) + 1))[:size]})
        out.append({"run_id": f"big-{r}", "graph": "long", "steps": steps})
    return out


def _fresh(embedder: str) -> Any:
    """A fresh embedder over the process's loaded model: the same object for ``local``
    (stateless), a new :class:`StaticEmbedder` (an empty token table) for ``static``."""
    from liveguard.core.semantic import cache_for

    loaded: Any = cache_for(embedder).embedder
    if embedder == "static":
        from liveguard.core.semantic.static import StaticEmbedder

        return StaticEmbedder(model=loaded.model)
    return loaded


def floor_ms(embedder: str = "local") -> dict[str, float]:
    """CPU ms per 128-token text (batches of 8, best of 5): ``warm``, the embedder's steady
    cost (for MiniLM, one forward pass); ``cold``, for ``static`` only, the first batch with
    an empty token table (best of 5 fresh tables)."""
    texts = [message(random.Random(i)) for i in range(8)]
    found: dict[str, float] = {}
    if embedder == "static":
        cold = float("inf")
        for _ in range(5):
            fresh = _fresh(embedder)
            start = time.process_time()
            fresh.embed(texts)
            cold = min(cold, time.process_time() - start)
        found["cold"] = cold / len(texts) * 1000
    model = _fresh(embedder)
    model.embed(texts)
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        model.embed(texts)
        best = min(best, time.process_time() - start)
    found["warm"] = best / len(texts) * 1000
    return found


def per_step(steps: int, facts: bool, embedder: str = "local") -> dict[str, float]:
    """``check_trajectory`` of one run with a cold cache (the model loaded): ms per step."""
    from liveguard.core.semantic import cache_for, register_embedder
    from liveguard.core.semantic.registry import threshold_for

    model = _fresh(embedder)
    name = f"bench-long-{embedder}-{steps}-{int(facts)}"
    register_embedder(name, lambda: model)  # a fresh, empty cache over the loaded model
    trajectory = [Step(**s) for s in run(steps, facts=facts)]
    policy = Policy(semantic=True, semantic_embedder=name)
    tuned = threshold_for(embedder)
    if tuned is not None:
        policy = policy | {"semantic_threshold": tuned}
    wall, cpu = time.perf_counter(), time.process_time()
    found = check_trajectory(trajectory, policy)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    embedded = cache_for(name).embedded
    return {"steps": steps, "wall_ms": wall / steps * 1000, "cpu_ms": cpu / steps * 1000,
            "embedded": embedded, "findings": sum(v.code == "semantic_repeat" for v in found)}


def cli(path: Path, jobs: int | None, sample: bool, embedder: str = "local") -> tuple[float, float, float]:
    """``liveguard score --semantic --no-judges --embedder E`` on ``path``: (wall s, peak tree
    PSS MB or 0, CPU s of the command and its children)."""
    cmd = [sys.executable, "-m", "liveguard.cli", "score", str(path), "--semantic", "--no-judges",
           "--embedder", embedder, "--format", "jsonl"]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    before = os.times()
    wall, peak = timed_run(cmd, path.parent, sample, ok=(0, 1))  # 1: runs failed (loops found), as expected
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, peak / 2**20, cpu


def _write(path: Path, runs: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for r in runs:
            f.write(json.dumps(r) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="250,1000", help="run lengths for the ms/step figure")
    parser.add_argument("--long", type=int, default=10_000, help="steps of the end-to-end run")
    parser.add_argument("--no-long", action="store_true", help="skip the end-to-end long runs")
    parser.add_argument("--embedder", choices=("local", "static"), default="local",
                        help="the embedder measured, with its own threshold (default local: MiniLM)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    try:
        floor = floor_ms(args.embedder)
    except Exception as exc:  # a report: say why and go on
        print(f"semantic long-steps benchmark skipped: {type(exc).__name__}: {exc}")
        return 0
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load": os.getloadavg()[0], "embedder": args.embedder,
                              "floor_cpu_ms": floor["warm"]}
    if "cold" in floor:
        report["cold_cpu_ms"] = floor["cold"]
    print(f"\nsemantic layer on long and many steps, embedder {args.embedder} (cpus {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f})")
    if args.embedder == "static":
        print(f"  static embedder: {floor['warm']:.2f} ms CPU a 128-token text with its tokens' vectors "
              f"known, {floor['cold']:.1f} ms with none known (batches of 8)")
    else:
        print(f"  model floor: {floor['warm']:.1f} ms CPU a 128-token text (one forward pass, batches of 8)")
    report["per_step"] = []
    for steps in (int(s) for s in args.steps.split(",") if s):
        for facts in (False, True):
            row = per_step(steps, facts, args.embedder)
            row["kind"] = "with facts" if facts else "plain words"
            report["per_step"].append(row)
            print(f"  {row['kind']:<11} {steps:>6} steps: {row['wall_ms']:6.1f} ms wall / "
                  f"{row['cpu_ms']:6.1f} ms CPU a step; {row['embedded']} texts embedded, "
                  f"{row['findings']} semantic_repeat findings")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.no_long:
            report["long"] = {}
            for facts in (True, False):
                kind = "with facts" if facts else "plain words"
                path = _write(folder / "long.jsonl",
                              [{"run_id": "long", "graph": "long", "steps": run(args.long, facts=facts)}])
                wall, _, cpu = cli(path, jobs=1, sample=False, embedder=args.embedder)
                report["long"][kind] = wall
                report.setdefault("long_cpu", {})[kind] = cpu
                print(f"  {kind:<11} {args.long}-step run, liveguard score --semantic --embedder "
                      f"{args.embedder} --jobs 1: {wall:.1f} s wall, {cpu:.1f} s CPU")
        path = _write(folder / "big.jsonl", big_runs())
        wall, peak, _ = cli(path, jobs=None, sample=True, embedder=args.embedder)
        report["big"] = {"wall_s": wall, "peak_pss_mb": peak}
        print(f"  3 runs of five 1 MB messages, liveguard score --semantic: {wall:.1f} s, "
              f"peak {peak:.0f} MB (process tree PSS)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
