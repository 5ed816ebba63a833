"""A cascade of embedders, measured: can the static embedder settle a pair for MiniLM?

    PYTHONPATH=backend:benchmarks .venv/bin/python benchmarks/semantic_cascade.py --split dev
        [--json PATH] [--pairs PATH]
    PYTHONPATH=backend:benchmarks .venv/bin/python benchmarks/semantic_cascade.py --split test
        --low L --high H [--json PATH] [--pairs PATH]

The idea (issue 21, item 2): for a pair the rule compares, the static embedder's cosine
settles it when it is at or above ``HIGH`` (a match) or at or below ``LOW`` (no match), and
MiniLM decides only the pairs in between, so that a step whose pairs are all settled is
never run through MiniLM. ``LOW`` and ``HIGH`` must change no decision against MiniLM alone.

For every pair the rule could compare (a message step and each distinct earlier message of
its node in the window, ``semantic_gate._pairs``: same observations, masking and novelty test
as the rule; *candidate* pairs are those the novelty test leaves to the cosine) on the runs
of ``semantic_data.py`` (``--split``: its even or odd instances) and the labelled runs of
``detection/`` (that half), it computes the static embedder's cosine and MiniLM's; MiniLM
decides a pair at its threshold (0.675). The plain-words runs of ``semantic_long.py`` (250
steps) are reported too, never used to choose.

* ``--split dev`` reports the least static cosine of any MiniLM match and the greatest
  static cosine of any MiniLM non-match (over every window pair, a superset of the
  candidates), and chooses ``LOW`` and ``HIGH`` from them with :data:`MARGIN`;
* ``--split test`` checks given bands (``--low``, ``--high``: the dev choice, once).

Both report what the bands settle (candidate pairs, candidate steps that would skip MiniLM,
distinct texts MiniLM would still embed), every candidate pair whose decision they change,
and a sweep of single bands (:data:`SWEEP_HIGH`, :data:`SWEEP_LOW`): decisions changed
against steps saved. A report, never a test; nothing in the library depends on it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from liveguard import Policy, Step
from liveguard.core.semantic import cache_for
from semantic_data import LOOKALIKES, LOOPS, dev, test
from semantic_gate import _detection, _pairs, emit
from semantic_long import run as generated

MARGIN = 0.05
"""The static-cosine margin kept between each band and the nearest pair it must not settle."""
SWEEP_HIGH = (0.99, 0.96, 0.93, 0.90, 0.88)
SWEEP_LOW = (0.25, 0.35, 0.45, 0.55)
"""Bands tried one at a time (the other off) for the trade-off: decisions changed, steps saved."""


def corpora(split: str) -> dict[str, list[tuple[list[Step], Policy]]]:
    """The runs of each corpus for ``split``: ``semantic_data`` (even or odd instances) and the
    detection half; plus, for the record only (never to choose), the plain-words benchmark."""
    policy = Policy(semantic=True)
    pick = dev if split == "dev" else test
    data = [([Step(node=n, summary=t) for n, t in run], policy)
            for families in (LOOPS, LOOKALIKES) for runs in families.values() for run in pick(runs)]
    detection = _detection()
    labels = [row for row in detection.load_labels() if row["split"] == split]
    runs = detection.load_runs({row["run_id"] for row in labels})
    det = [(list(runs[row["run_id"]].steps), detection.policy_of(runs[row["run_id"]], semantic=True))
           for row in labels]
    plain = [([Step(**s) for s in generated(250)], policy)]
    return {f"semantic_data ({split})": data, f"detection ({split})": det,
            "semantic_long plain words (250 steps; not used to choose)": plain}


def pairs(split: str) -> dict[str, list[dict[str, Any]]]:
    """Per corpus, every pair in the window: run, step, candidate, MiniLM and static cosines."""
    from xxhash import xxh3_64_hexdigest

    local, static = cache_for("local"), cache_for("static")
    out: dict[str, list[dict[str, Any]]] = {}
    for name, runs in corpora(split).items():
        found = [(r, *p) for r, (steps, policy) in enumerate(runs) for p in _pairs(steps, policy)]
        texts = sorted({t for _, _, a, b, _ in found for t in (a, b)})
        keys = {t: xxh3_64_hexdigest(t.encode("utf-8", "surrogatepass")) for t in texts}
        local.fill([(keys[t], t) for t in texts])
        static.fill([(keys[t], t) for t in texts])
        out[name] = [
            {"run": r, "step": i, "candidate": cand, "a": keys[a][:12], "b": keys[b][:12],
             "minilm": float(local.vector(keys[a], a) @ local.vector(keys[b], b)),
             "static": float(static.vector(keys[a], a) @ static.vector(keys[b], b))}
            for r, i, a, b, cand in found]
    return out


def bounds(rows: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """The least static cosine of a MiniLM match, the greatest of a MiniLM non-match."""
    match = [r["static"] for r in rows if r["minilm"] >= threshold]
    other = [r["static"] for r in rows if r["minilm"] < threshold]
    return {"pairs": len(rows), "matches": len(match),
            "least_static_of_a_match": round(min(match, default=1.0), 4),
            "greatest_static_of_a_non_match": round(max(other, default=-1.0), 4)}


def settle(rows: Sequence[dict[str, Any]], threshold: float, low: float, high: float) -> dict[str, Any]:
    """What the bands settle on candidate pairs, and every candidate pair whose decision changes.

    A step needs MiniLM when, taking its candidates latest first (the rule needs the latest
    match), one in the band comes before any static-high one (``CascadeEmbedder.decide``)."""
    cand = [r for r in rows if r["candidate"]]
    changed = [r for r in cand
               if (r["static"] >= high and r["minilm"] < threshold)
               or (r["static"] <= low and r["minilm"] >= threshold)]
    steps: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in cand:
        steps.setdefault((r["run"], r["step"]), []).append(r)
    needs = 0
    for members in steps.values():
        for r in members[::-1]:  # _pairs yields the window earliest first
            if r["static"] >= high:
                break
            if r["static"] > low:
                needs += 1
                break
    minilm = {k for r in cand for k in (r["a"], r["b"])}  # texts MiniLM alone embeds
    band = {k for r in cand if low < r["static"] < high for k in (r["a"], r["b"])}
    return {"candidate_pairs": len(cand),
            "settled_high": sum(r["static"] >= high for r in cand),
            "settled_low": sum(r["static"] <= low for r in cand),
            "band": sum(low < r["static"] < high for r in cand),
            "candidate_steps": len(steps), "steps_needing_minilm": needs,
            "texts_minilm_alone": len(minilm), "texts_in_band_pairs": len(band),
            "changed": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
                        for r in changed]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--low", type=float, help="the LOW band to check (default: the shipped one)")
    parser.add_argument("--high", type=float, help="the HIGH band to check (default: the shipped one)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--pairs", help="also write every pair's row (digest prefixes, cosines) to this file")
    args = parser.parse_args(argv)
    if args.split == "test" and (args.low is None or args.high is None):
        parser.error("--split test checks given bands: --low and --high (from --split dev)")
    threshold = Policy(semantic=True).semantic_threshold
    found = pairs(args.split)
    if args.pairs:
        Path(args.pairs).write_text(json.dumps(found), encoding="utf-8")
    report: dict[str, Any] = {"split": args.split, "threshold": threshold, "margin": MARGIN, "corpora": {}}
    chosen = [c for c in found if "not used" not in c]
    for name, rows in found.items():
        report["corpora"][name] = {
            "candidate": bounds([r for r in rows if r["candidate"]], threshold),
            "all": bounds(rows, threshold)}
    every = [r for c in chosen for r in found[c]]
    dev_bounds = bounds(every, threshold)
    report["dev_bounds_all_pairs" if args.split == "dev" else "bounds_all_pairs"] = dev_bounds
    if args.split == "dev":
        low = round(dev_bounds["least_static_of_a_match"] - MARGIN, 3)
        high = round(dev_bounds["greatest_static_of_a_non_match"] + MARGIN, 3)
        report["chosen"] = {"low": low, "high": high}
        low = args.low if args.low is not None else low
        high = args.high if args.high is not None else high
    else:
        low, high = args.low, args.high
    report["bands"] = {"low": low, "high": high}
    report["settled"] = {name: settle(rows, threshold, low, high) for name, rows in found.items()}
    # The trade-off, one band at a time: what it would save, and what it would change.
    report["sweep"] = {
        f"{side} {value}": {
            name: {"changed": len(s["changed"]), "candidate_pairs": s["candidate_pairs"],
                   "steps_saved": s["candidate_steps"] - s["steps_needing_minilm"],
                   "candidate_steps": s["candidate_steps"]}
            for name, rows in found.items()
            for s in [settle(rows, threshold, value if side == "LOW" else -1.0,
                             value if side == "HIGH" else 2.0)]}
        for side, values in (("HIGH", SWEEP_HIGH), ("LOW", SWEEP_LOW)) for value in values}
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
