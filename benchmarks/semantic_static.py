"""The static embedder (``semantic_embedder="static"``) against MiniLM: its threshold, its decisions.

    PYTHONPATH=backend .venv/bin/python benchmarks/semantic_static.py [--detection dev|test|both|none]
        [--json PATH]

``liveguard.core.semantic.static.StaticEmbedder``: each token's vector is MiniLM's output for the
token alone, a text's the Zipf-weighted mean of its tokens' vectors, centred, normalised.
Reports, all with the rule's shipped defaults except the threshold:

1. **the threshold, chosen on development data only**: a sweep over thresholds on the
   development split of ``semantic_data.py`` (the even instances) and on the development
   half of the detection corpus (``benchmarks/detection``, ``split == "dev"``). Feasible:
   no finding at all on a ``semantic_data`` look-alike that carries facts or growth, no hard
   finding on any look-alike, and no dev progress run of the detection corpus that the
   semantic configuration flags hard while the structural one does not. Among feasible
   thresholds: the most hard-caught loops (both corpora), then the middle of that range
   (``semantic.py``'s rule, ``tune``);
2. **decisions against MiniLM** on the 66 runs of ``semantic_data.py`` (observed step by
   step by a Monitor, as a live guard sees them): each run's strongest finding (none, soft,
   hard) with each embedder at its own threshold, and the test split's recall and false
   alarms;
3. **pairwise cosine agreement**: every same-node pair of messages within the window
   (``semantic_window``) of those runs, and every pair of their distinct texts: Pearson r
   of the two embedders' cosines, the mean absolute difference after the best linear map,
   and the share of window pairs on the same side of each embedder's threshold;
4. **detection runs against MiniLM** (``--detection``): ``run.py``'s ``semantic``
   configuration (``check_trajectory``, no judges) with each embedder: per split and
   source, runs flagged hard by both, by one only, and first-flag steps that differ.

A report, never a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from liveguard import Monitor, Policy
from liveguard.core.semantic import cache_for
from liveguard.core.semantic.registry import STATIC_THRESHOLD
from semantic import PLAIN, _score
from semantic_data import LOOKALIKES, LOOPS, Run, dev, test

HERE = Path(__file__).resolve().parent
THRESHOLDS = [round(0.60 + 0.025 * i, 3) for i in range(15)]  # 0.600 .. 0.950
STATIC = "static"


def _detection() -> Any:
    """``benchmarks/detection/run.py`` as a module (its detectors, policies and labels)."""
    spec = importlib.util.spec_from_file_location("liveguard_detection_run", HERE / "detection" / "run.py")
    if spec is None or spec.loader is None:
        raise SystemExit("semantic_static.py: cannot load benchmarks/detection/run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _strongest(run: Run, policy: Policy) -> str:
    """``hard``, ``soft`` or ``none``: the strongest ``semantic_repeat`` of a run, step by step."""
    from liveguard import Step

    monitor = Monitor(policy)
    found = "none"
    for node, text in run:
        for v in monitor.observe(Step(node=node, summary=text)):
            if v.code == "semantic_repeat":
                found = "hard" if v.hard else max(found, "soft", key=("none", "soft").index)
    return found


def policy_for(embedder: str, threshold: float | None = None) -> Policy:
    policy = Policy(semantic=True, semantic_embedder=embedder)
    return policy if threshold is None else policy | {"semantic_threshold": threshold}


def sweep_paraphrase() -> dict[float, dict[str, Any]]:
    """``semantic_data`` dev split, static embedder, each threshold: ``semantic.py``'s score."""
    return {t: _score(policy_for(STATIC, t), dev) for t in THRESHOLDS}


def sweep_detection(det: Any, split: str, thresholds: Sequence[float]) -> dict[str, Any]:
    """Detection runs of ``split``: per threshold, loops caught and progress runs the layer
    (not the structural rules) flags hard; and the structural and MiniLM figures beside."""
    labels = [row for row in det.load_labels() if row["split"] == split]
    runs = det.load_runs({row["run_id"] for row in labels})

    def flags(detect: Callable[[Any], int | None]) -> dict[str, int | None]:
        return {row["run_id"]: detect(runs[row["run_id"]]) for row in labels}

    structural = flags(det.structural)

    def figures(found: dict[str, int | None]) -> dict[str, Any]:
        loops = [r for r in labels if r["label"] in det.LOOPING]
        progress = [r for r in labels if r["label"] not in det.LOOPING]
        return {"caught": sum(found[r["run_id"]] is not None for r in loops), "loops": len(loops),
                "progress_flagged": sum(found[r["run_id"]] is not None for r in progress),
                "progress": len(progress),
                "added_on_progress": sum(found[r["run_id"]] is not None and structural[r["run_id"]] is None
                                         for r in progress),
                "first_flag": found}

    out: dict[str, Any] = {"labels": labels, "structural": figures(structural)}
    det._choose_embedder(None, None)
    started = time.process_time()
    out["local"] = figures(flags(det.semantic))
    out["local"]["cpu_s"] = time.process_time() - started
    out["static"] = {}
    for t in thresholds:
        det._choose_embedder(STATIC, t)
        started = time.process_time()
        out["static"][t] = figures(flags(det.semantic))
        out["static"][t]["cpu_s"] = time.process_time() - started
    det._choose_embedder(None, None)
    return out


def choose(
    paraphrase: dict[float, dict[str, Any]], detection: dict[str, Any] | None
) -> tuple[float, list[float]]:
    """The dev choice (module docstring, 1): (threshold, the feasible thresholds)."""
    def feasible(t: float) -> bool:
        s = paraphrase[t]
        ok = s["fact_alarms"] == 0 and s["hard_alarms"] == 0
        if detection is not None:
            ok = ok and detection["static"][t]["added_on_progress"] == 0
        return bool(ok)

    def hits(t: float) -> int:
        return int(paraphrase[t]["hits"] + (detection["static"][t]["caught"] if detection else 0))

    ok = [t for t in THRESHOLDS if feasible(t)]
    if not ok:
        return float("nan"), []
    best = max(hits(t) for t in ok)
    top = [t for t in ok if hits(t) == best]
    return top[len(top) // 2], ok


def decisions(threshold: float) -> dict[str, Any]:
    """Each ``semantic_data`` run's strongest finding with MiniLM and with the static embedder."""
    local, static = policy_for("local"), policy_for(STATIC, threshold)
    table: Counter[tuple[str, str]] = Counter()
    per_family: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for kind, families in (("loop", LOOPS), ("look-alike", LOOKALIKES)):
        for family, runs in families.items():
            for run in runs:
                pair = (_strongest(run, local), _strongest(run, static))
                table[pair] += 1
                per_family[f"{kind}:{family}"][pair] += 1
    return {"table": table, "per_family": per_family,
            "test_local": _score(local, test), "test_static": _score(static, test)}


def cosines(threshold: float) -> dict[str, float]:
    """Pairwise cosine agreement on the texts of ``semantic_data`` (module docstring, 3)."""
    window = Policy().semantic_window
    runs = [r for families in (LOOPS, LOOKALIKES) for runs in families.values() for r in runs]
    texts = sorted({t for r in runs for _, t in r})
    index = {t: i for i, t in enumerate(texts)}
    a = cache_for("local").embedder.embed(texts)
    b = cache_for(STATIC).embedder.embed(texts)
    pairs = set()
    for run in runs:
        seen: dict[str, list[str]] = defaultdict(list)
        for node, text in run:
            pairs.update((index[o], index[text]) for o in seen[node][-window:] if o != text)
            seen[node].append(text)
    p = np.array(sorted(pairs))
    ca, cb = (a[p[:, 0]] * a[p[:, 1]]).sum(axis=1), (b[p[:, 0]] * b[p[:, 1]]).sum(axis=1)
    upper = np.triu_indices(len(texts), 1)
    all_a, all_b = (a @ a.T)[upper], (b @ b.T)[upper]
    slope, intercept = np.polyfit(cb, ca, 1)
    mine = ca >= Policy().semantic_threshold
    theirs = cb >= threshold
    return {"texts": len(texts), "window_pairs": len(p),
            "pearson_window": float(np.corrcoef(ca, cb)[0, 1]),
            "pearson_all": float(np.corrcoef(all_a, all_b)[0, 1]),
            "mean_abs_diff_mapped": float(np.abs(slope * cb + intercept - ca).mean()),
            "same_side": float((mine == theirs).mean()),
            "local_above": int(mine.sum()), "static_above": int(theirs.sum()),
            "both_above": int((mine & theirs).sum()),
            "mean_cos_all_local": float(all_a.mean()), "mean_cos_all_static": float(all_b.mean())}


def compare_detection(det: Any, split: str, threshold: float) -> dict[str, Any]:
    """Per source: runs flagged by both, MiniLM only, static only; first flags that differ."""
    found = sweep_detection(det, split, [threshold])
    local, static = found["local"]["first_flag"], found["static"][threshold]["first_flag"]
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for row in found["labels"]:
        a, b = local[row["run_id"]], static[row["run_id"]]
        for source in (row["source"], "all"):
            cell = rows[source]
            cell["runs"] += 1
            cell["both" if a is not None and b is not None else "local only" if a is not None
                 else "static only" if b is not None else "neither"] += 1
            cell["same first flag"] += a == b
    return {"found": found, "rows": rows}


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.0f}% ({a}/{n})" if n else "-"


def _print_sweep(paraphrase: dict[float, dict[str, Any]], detection: dict[str, Any] | None) -> dict[str, Any]:
    head = ("dev sweep, static embedder (threshold: semantic_data hard-caught loops / fact-or-growth "
            "look-alikes with a finding / look-alikes with a hard finding")
    if detection is not None:
        head += "; detection dev loops caught / progress runs the layer adds a hard finding to"
    print(head + "):")
    for t in THRESHOLDS:
        s = paraphrase[t]
        line = f"  {t:.3f}: {s['hits']}/{s['loops']} {s['fact_alarms']} {s['hard_alarms']}"
        if detection is not None:
            d = detection["static"][t]
            line += f"; {d['caught']}/{d['loops']} {d['added_on_progress']}"
        print(line)
    m = _score(policy_for("local"), dev)
    line = f"  MiniLM at 0.675: {m['hits']}/{m['loops']} {m['fact_alarms']} {m['hard_alarms']}"
    if detection is not None:
        local, structural = detection["local"], detection["structural"]
        line += (f"; {local['caught']}/{local['loops']} {local['added_on_progress']} (structural alone: "
                 f"{structural['caught']} caught, {structural['progress_flagged']} progress flagged)")
    print(line)
    chosen, feasible = choose(paraphrase, detection)
    print(f"dev choice: {chosen} (feasible: {feasible}); shipped: {STATIC_THRESHOLD}")
    keep = ("hits", "loops", "fact_alarms", "hard_alarms")
    out: dict[str, Any] = {"paraphrase": {t: {k: s[k] for k in keep} for t, s in paraphrase.items()},
                           "chosen": chosen, "feasible": feasible, "minilm_dev": {k: m[k] for k in keep}}
    if detection is not None:
        out["detection_dev"] = {str(t): {k: v for k, v in d.items() if k != "first_flag"}
                                for t, d in detection["static"].items()}
    return out


def _print_decisions(threshold: float) -> dict[str, Any]:
    d = decisions(threshold)
    print(f"\nsemantic_data.py, 66 runs step by step: strongest finding, MiniLM (rows) x static at "
          f"{threshold} (columns)")
    kinds = ("none", "soft", "hard")
    print("         " + "".join(f"{k:>6}" for k in kinds))
    for a in kinds:
        print(f"  {a:<6} " + "".join(f"{d['table'][(a, b)]:>6}" for b in kinds))
    same = sum(v for (a, b), v in d["table"].items() if a == b)
    print(f"  same decision on {same}/66 runs")
    for family, cell in d["per_family"].items():
        diff = {f"{a}->{b}": v for (a, b), v in cell.items() if a != b}
        if diff:
            print(f"    {family}: {diff}")
    for name in ("test_local", "test_static"):
        s = d[name]
        print(f"  test split, {name[5:]}: hard recall {_pct(s['hits'], s['loops'])}, look-alikes with a "
              f"finding {s['false_alarms']} (fact or growth {s['fact_alarms']}, plain words "
              f"{s['false_alarms'] - s['fact_alarms']}), hard {s['hard_alarms']}")
    return {"table": {f"{a}->{b}": v for (a, b), v in d["table"].items()},
            "test_local": {k: v for k, v in d["test_local"].items() if k not in PLAIN},
            "test_static": {k: v for k, v in d["test_static"].items() if k not in PLAIN}}


def _print_cosines(threshold: float) -> dict[str, float]:
    c = cosines(threshold)
    print(f"\npairwise cosines, {c['texts']} texts: window pairs {c['window_pairs']}: Pearson r "
          f"{c['pearson_window']:.3f} (all pairs {c['pearson_all']:.3f}); mean |MiniLM - mapped static| "
          f"{c['mean_abs_diff_mapped']:.3f}; same side of the thresholds {100 * c['same_side']:.1f}% "
          f"(MiniLM above {c['local_above']}, static above {c['static_above']}, both {c['both_above']}); "
          f"mean cosine of all pairs: MiniLM {c['mean_cos_all_local']:.2f}, "
          f"static {c['mean_cos_all_static']:.2f}")
    return c


def _print_detection(det: Any, split: str, threshold: float) -> dict[str, Any]:
    cmp = compare_detection(det, split, threshold)
    f = cmp["found"]
    print(f"\ndetection {split}, semantic (no judges): MiniLM at 0.675 vs static at {threshold}")
    print("  source       runs  both  MiniLM-only  static-only  neither  same-first-flag")
    for source, cell in sorted(cmp["rows"].items()):
        print(f"  {source:<12} {cell['runs']:>4} {cell['both']:>5} {cell['local only']:>12} "
              f"{cell['static only']:>12} {cell['neither']:>8} {cell['same first flag']:>16}")
    figures = (("structural", f["structural"]), ("local", f["local"]), ("static", f["static"][threshold]))
    for name, fig in figures:
        print(f"  {name:<10}: recall {_pct(fig['caught'], fig['loops'])}, progress flagged "
              f"{_pct(fig['progress_flagged'], fig['progress'])}"
              + (f", CPU {fig['cpu_s']:.1f} s" if "cpu_s" in fig else ""))
    return {"rows": {k: dict(v) for k, v in cmp["rows"].items()},
            **{name: {k: v for k, v in fig.items() if k != "first_flag"} for name, fig in figures}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detection", choices=("dev", "test", "both", "none"), default="both",
                        help="the detection corpus: dev (sweep), test (the chosen threshold, once), "
                             "both, or none")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    det = _detection() if args.detection != "none" else None
    sweep_dev = det is not None and args.detection != "test"
    detection = sweep_detection(det, "dev", THRESHOLDS) if sweep_dev else None
    report: dict[str, Any] = {"shipped_threshold": STATIC_THRESHOLD,
                              "sweep": _print_sweep(sweep_paraphrase(), detection),
                              "decisions": _print_decisions(STATIC_THRESHOLD),
                              "cosines": _print_cosines(STATIC_THRESHOLD)}
    if det is not None:
        splits = {"dev": ["dev"], "test": ["test"], "both": ["dev", "test"]}[args.detection]
        report["detection"] = {split: _print_detection(det, split, STATIC_THRESHOLD) for split in splits}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
