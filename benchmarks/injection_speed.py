"""The step-text rule's CPU time over whole corpora, before and after, and its findings.

Usage::

    # CPU time: alternating child processes, one per tree (each tree's backend/ on PYTHONPATH)
    python benchmarks/injection_speed.py bench --before /tmp/before --after . \
        [--repeats 5] [--rounds 3] CORPUS...
    # findings: the rule of this tree (twice), of ``git show main:...`` (loaded under another
    # name, when it imports in this tree) and the ungated definition, over every run of every corpus
    PYTHONPATH=backend python benchmarks/injection_speed.py check [--generated 2000] [CORPUS...]

A corpus is a JSONL, LangSmith JSON or Parquet file (``liveguard.readers.inputs``), or
``generated:N`` (``benchmarks/scale_corpus.py``'s N runs, default seed), or ``planted:CORPUS``:
that corpus with the rule's variants (``tests/test_injection_variants.py``: fullwidth, zero-width
splits, look-alike letters, letter spacing, four languages, forged data ends) and look-alikes
written into the strings of one step in three (seeded: the same corpus each time), at any place,
beyond ``MAX_SCAN_CHARS`` too, with non-ASCII characters around them. Without corpora ``check``
reads ``benchmarks/detection/data/*.jsonl``, ``golden_datasets/**`` and ``generated:2000``, each
also planted.

The time is what a Monitor spends in the rule: ``prefetch`` of each run's observations, then
``observe`` of each (``time.process_time``; the observations, digests included, are made before).
Each child reports its first pass and the best of ``--repeats`` passes; the parent alternates the
trees ``--rounds`` times and keeps each tree's best.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_CORPORA = [*sorted((HERE / "detection" / "data").glob("*.jsonl")),
                   *sorted((ROOT / "golden_datasets").rglob("*.json*"))]


def _corpus_path(spec: str, tmp: Path) -> Path:
    if spec.startswith("planted:"):
        return _plant(_corpus_path(spec.split(":", 1)[1], tmp), tmp)
    if not spec.startswith("generated:"):
        return Path(spec)
    sys.path.insert(0, str(HERE))
    from scale_corpus import SEED, write_corpus

    n = int(spec.split(":", 1)[1] or 2000)
    return write_corpus(tmp / f"generated_{n}.jsonl", n, seed=SEED)


_AROUND = ("", " ", "\n", "\u00e9t\u00e9 ", "\u2019", "\u200b", "\u4f60\u597d ", "\u2026", "\u00a0",
           "e\u0301 ", "\u2028", "\U0001f600", "\u0130")


def _plant(path: Path, tmp: Path) -> Path:
    """``path``'s runs with the rule's variants and look-alikes written into one step in three."""
    import random

    import orjson

    sys.path.insert(0, str(ROOT / "tests"))
    from liveguard.core.model import Trajectory
    from liveguard.readers.inputs import iter_inputs
    from test_injection_variants import LOOK_ALIKES, VARIANTS

    texts = [raw for _, _, raw in VARIANTS] + list(LOOK_ALIKES)
    rng = random.Random(20261202)

    def plant(value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            at = rng.choice([0, len(value), rng.randrange(len(value) + 1), 19_990, 20_010])
            at = min(at, len(value))
            inserted = rng.choice(_AROUND) + rng.choice(texts) + rng.choice(_AROUND)
            return value[:at] + inserted + value[at:]
        if isinstance(value, dict) and value:
            key = rng.choice(list(value))
            return {**value, key: plant(value[key], depth + 1)}
        if isinstance(value, list) and value:
            n = rng.randrange(len(value))
            return [*value[:n], plant(value[n], depth + 1), *value[n + 1 :]]
        return value

    out = tmp / f"planted_{path.stem}.jsonl"
    with out.open("wb") as f:
        for _source, run in iter_inputs([path]):
            if not isinstance(run, Trajectory):
                continue
            steps = []
            for original in run.steps:
                step = original
                names = [n for n in ("summary", "output", "args", "result", "error") if getattr(step, n)]
                if names and rng.random() < 1 / 3:
                    name = rng.choice(names)
                    step = step.model_copy(update={name: plant(getattr(step, name))})
                steps.append(step.model_dump(mode="json", exclude_none=True))
            f.write(orjson.dumps({**run.model_dump(mode="json", exclude_none=True), "steps": steps}) + b"\n")
    return out


def load(path: Path) -> list[list[Any]]:
    """Each run's observations, as a Monitor makes them (digests included)."""
    from liveguard.core._monitor import Monitor
    from liveguard.core.model import Trajectory
    from liveguard.readers.inputs import iter_inputs

    runs = []
    for _source, run in iter_inputs([path]):
        if not isinstance(run, Trajectory):
            continue
        monitor = Monitor()
        runs.append([monitor._observation(step, i) for i, step in enumerate(run.steps)])
    return runs


def rule_pass(module: ModuleType, runs: list[list[Any]]) -> list[list[tuple[Any, ...]]]:
    """The rule's findings on each run, as the Monitor runs it (prefetch, then observe)."""
    out = []
    for observations in runs:
        rule = module.EvaluatorInjection()
        rule.prefetch(observations)
        found = []
        for obs in observations:
            for hit in rule.observe(obs) or ():
                detail = hit.detail
                found.append((hit.step, hit.count, tuple(detail["patterns"]), tuple(detail["fields"])))
        out.append(found)
    return out


def definition(module: ModuleType, runs: list[list[Any]]) -> list[list[tuple[Any, ...]]]:
    """The findings by the rule's definition: every field, ungated (``_codes`` of its
    ``normalise``'d text), no pre-filter, no native code."""
    out = []
    for observations in runs:
        found = []
        for obs in observations:
            step = obs.step
            if step is None:
                continue
            hits: list[str] = []
            fields = []
            for name, value in zip(module._FIELDS, module._fields(step), strict=True):
                if value is None:
                    continue
                codes = module._codes(module.normalise(module._text_of(value)))
                if codes:
                    fields.append(name)
                    hits += [c for c in codes if c not in hits]
            if hits:
                found.append((obs.index, len(hits), tuple(sorted(hits)), tuple(fields)))
        out.append(found)
    return out


def _main_module(tmp: Path) -> ModuleType:
    source = subprocess.run(["git", "show", "main:backend/liveguard/core/rules/injection.py"], cwd=ROOT,
                            check=True, capture_output=True).stdout
    path = tmp / "injection_main.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("injection_main", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["injection_main"] = module
    spec.loader.exec_module(module)
    return module


def check(specs: list[str]) -> int:
    from liveguard.core.rules import injection

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            old: ModuleType | None = _main_module(tmp)
        except ImportError:  # main's rule imported the C accelerator, gone from this tree
            old = None
        failed = 0
        for spec in specs:
            path = _corpus_path(spec, tmp)
            runs = load(path)
            first = rule_pass(injection, runs)
            second = rule_pass(injection, runs)  # the rule keeps no state across runs
            before = rule_pass(old, runs) if old is not None else None
            expected = definition(injection, runs)
            steps = sum(len(r) for r in runs)
            hits = sum(len(r) for r in expected)
            same = first == second == expected and before in (None, expected)
            failed += not same
            print(f"{spec}: {len(runs)} runs, {steps} steps, {hits} findings: "
                  + ("identical (this tree, twice; main when loaded; the definition)" if same else
                     f"DIFFERENT: first {first == expected}, second {second == expected}, "
                     f"main {before == expected}"))
    return 1 if failed else 0


def child(spec: str, repeats: int) -> dict[str, Any]:
    from liveguard.core.rules import injection

    with tempfile.TemporaryDirectory() as tmp_name:
        runs = load(_corpus_path(spec, Path(tmp_name)))
    times = []
    for _ in range(repeats):
        t = time.process_time()
        rule_pass(injection, runs)
        times.append(time.process_time() - t)
    return {"first": times[0] * 1000, "best": min(times) * 1000}


def bench(specs: list[str], trees: dict[str, Path], repeats: int, rounds: int) -> None:
    for spec in specs:
        best: dict[str, dict[str, float]] = {}
        for _ in range(rounds):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree / "backend")}
                out = subprocess.run([sys.executable, __file__, "child", spec, "--repeats", str(repeats)],
                                     env=env, check=True, capture_output=True, text=True, cwd=tree).stdout
                got = json.loads(out.splitlines()[-1])
                kept = best.setdefault(name, got)
                for key in got:
                    kept[key] = min(kept[key], got[key])
        b, a = best["before"], best["after"]
        print(f"{spec}: before {b['best']:.1f} ms (first pass {b['first']:.1f}), after {a['best']:.1f} ms "
              f"(first pass {a['first']:.1f}): {a['best'] / b['best']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_bench = sub.add_parser("bench")
    p_bench.add_argument("corpora", nargs="+")
    p_bench.add_argument("--before", type=Path, required=True)
    p_bench.add_argument("--after", type=Path, default=ROOT)
    p_bench.add_argument("--repeats", type=int, default=5)
    p_bench.add_argument("--rounds", type=int, default=3)
    p_check = sub.add_parser("check")
    p_check.add_argument("corpora", nargs="*")
    p_check.add_argument("--generated", type=int, default=2000)
    p_child = sub.add_parser("child")
    p_child.add_argument("corpus")
    p_child.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "child":
        print(json.dumps(child(args.corpus, args.repeats)))
        return 0
    if args.command == "check":
        plain = [*(str(p) for p in DEFAULT_CORPORA), f"generated:{args.generated}"]
        specs = args.corpora or [*plain, *(f"planted:{spec}" for spec in plain)]
        return check(specs)
    bench([str(Path(c).resolve()) if not c.startswith("generated:") else c for c in args.corpora],
          {"before": args.before.resolve(), "after": args.after.resolve()}, args.repeats, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
