"""Where can the semantic layer skip the embedding? The data behind its lexical gate.

    PYTHONPATH=backend .venv/bin/python benchmarks/semantic_gate.py [--split dev|test|all] [--json PATH]

For every pair the rule could compare (a message step and a distinct earlier message of
its node in the window, ``semantic_window``), on the runs of ``semantic_data.py`` and the
labelled runs of ``detection/`` (``--split``: the half of them), this reports the cosine
of the two texts (the local embedder) and their lexical overlap *on what the model reads*
(:func:`lexical_view`: the content token ids of the first 128 tokens; :func:`overlap`:
the share of the smaller set found in the other), and, among the pairs at or above the threshold
(and those within a margin below it), the smallest overlap seen: the gate's bar must stay
under it. ``candidate`` pairs are those the novelty test leaves to the cosine (the only
ones the gate ever decides). A report, never a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from liveguard import Monitor, Policy, Step
from liveguard.core.fingerprint import volatile_mask
from liveguard.core.rules.base import MESSAGE
from liveguard.core.semantic import cache_for
from liveguard.core.semantic.novelty import _STOP, Info, candidates
from liveguard.core.semantic.text import text_of
from semantic_data import LOOKALIKES, LOOPS

HERE = Path(__file__).resolve().parent


def _detection() -> Any:
    """benchmarks/detection/run.py, loaded by its path (benchmarks/run.py has the same name)."""
    spec = importlib.util.spec_from_file_location("detection_run", HERE / "detection" / "run.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"semantic_gate.py: cannot load {HERE / 'detection' / 'run.py'}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["detection_run"] = module
    spec.loader.exec_module(module)
    return module


_STOP_IDS: dict[int, frozenset[int]] = {}  # by id(embedder): its ids of stop words and punctuation


def lexical_view(embedder: Any, texts: Sequence[str]) -> list[frozenset[int]]:
    """What the model reads of each text (its own input ids: the first 128 tokens), as a set
    of content token ids: stop words, ASCII punctuation and special tokens left out."""
    stop = _STOP_IDS.get(id(embedder))
    if stop is None:
        words = [*_STOP, *(chr(c) for c in range(33, 127) if not chr(c).isalnum())]
        stop = _STOP_IDS[id(embedder)] = frozenset(i for ids in embedder.token_ids(words) for i in ids)
    return [frozenset(ids).difference(stop) for ids in embedder.token_ids(list(texts))]


def overlap(a: frozenset[int], b: frozenset[int]) -> float:
    """The share of the smaller view's content tokens the other has (1.0 when one has none)."""
    if not a or not b:
        return 1.0
    return len(a & b) / min(len(a), len(b))


def _messages(steps: Sequence[Step], policy: Policy) -> Iterator[tuple[str, str, str]]:
    """(node, digest, text) of each non-user message step, as the rule sees it."""
    monitor = Monitor(policy)
    for index, step in enumerate(steps):
        obs = monitor._observation(step, index)  # a benchmark: the rule's own observation
        text = text_of(obs.content) if obs.kind == MESSAGE and obs.content is not None else None
        if text is None or obs.user:
            continue
        yield obs.node, obs.key, text


def _pairs(steps: Sequence[Step], policy: Policy) -> Iterator[tuple[int, str, str, bool]]:
    """(step index, text, earlier text, candidate) of every pair the rule could compare."""
    windows: dict[str, deque[tuple[str, str, Info]]] = {}
    mask = volatile_mask(policy.volatile)
    for index, (node, key, text) in enumerate(_messages(steps, policy)):
        window = windows.setdefault(node, deque(maxlen=policy.semantic_window))
        if any(k == key for k, _, _ in window):  # settled by the hash layer
            window.append(next(m for m in window if m[0] == key))
            continue
        info = Info(mask.text(text) if mask is not None else text)
        members = list(window)
        picked = set(candidates(info, [i for _, _, i in members])) if members else set()
        seen: set[str] = set()
        for i, (k, other, _) in enumerate(members):
            if k not in seen:
                seen.add(k)
                yield index, text, other, i in picked
        window.append((key, text, info))


def corpora(split: str) -> dict[str, list[tuple[list[Step], Policy]]]:
    policy = Policy(semantic=True)
    data = [([Step(node=n, summary=t) for n, t in run], policy)
            for families in (LOOPS, LOOKALIKES) for runs in families.values() for run in runs]
    detection = _detection()
    from semantic_long import run as generated

    labels = [row for row in detection.load_labels() if split == "all" or row["split"] == split]
    runs = detection.load_runs({row["run_id"] for row in labels})
    det = [(list(runs[row["run_id"]].steps), detection.policy_of(runs[row["run_id"]], semantic=True))
           for row in labels]
    plain = [([Step(**s) for s in generated(250)], policy)]
    return {"semantic_data": data, f"detection ({split})": det,
            "semantic_long plain words (250 steps)": plain}


SIZES = (0, 10, 20, 40)
"""The least content tokens of the smaller view of a pair, by which the figures are split."""
SAFETY = 0.75
"""The bar this report tries at each size: this share of the least overlap seen within the margin."""


def measure(split: str, threshold: float, margin: float) -> dict[str, Any]:
    from xxhash import xxh3_64_hexdigest

    cache = cache_for("local")
    embedder: Any = cache.embedder
    out: dict[str, Any] = {"threshold": threshold, "margin": margin, "safety": SAFETY}
    for name, runs in corpora(split).items():
        pairs = [(r, *p) for r, (steps, policy) in enumerate(runs) for p in _pairs(steps, policy)]
        texts = sorted({t for _, _, a, b, _ in pairs for t in (a, b)})
        keys = {t: xxh3_64_hexdigest(t.encode("utf-8", "surrogatepass")) for t in texts}
        cache.fill([(keys[t], t) for t in texts])
        views = dict(zip(texts, lexical_view(embedder, texts), strict=True))
        # (cosine, overlap, candidate, size of the smaller view, step)
        rows = [(float(cache.vector(keys[a], a) @ cache.vector(keys[b], b)), overlap(views[a], views[b]),
                 cand, min(len(views[a]), len(views[b])), (r, i)) for r, i, a, b, cand in pairs]
        table = []
        for size in SIZES:
            sized = [r for r in rows if r[3] >= size]
            high = [r[1] for r in sized if r[0] >= threshold]
            near = [r[1] for r in sized if r[0] >= threshold - margin]
            bar = SAFETY * min(near, default=1.0)
            cand = [r for r in rows if r[2]]
            steps: dict[Any, bool] = {}  # step -> settled by the bar (every candidate pair under it)
            for r in cand:
                steps[r[4]] = steps.get(r[4], True) and r[3] >= size and r[1] < bar
            table.append({
                "min_size": size, "pairs": len(sized),
                "at_or_above": len(high), "least_overlap_at_or_above": min(high, default=None),
                "within_margin": len(near), "least_overlap_within_margin": min(near, default=None),
                "bar": round(bar, 4),
                "candidate_pairs": sum(r[3] >= size for r in cand),
                "candidate_pairs_under_bar": sum(r[3] >= size and r[1] < bar for r in cand),
                "candidate_steps": len(steps), "steps_settled_by_bar": sum(steps.values()),
            })
        best: dict[Any, float] = {}  # candidate step -> its best candidate cosine
        for r in rows:
            if r[2]:
                best[r[4]] = max(best.get(r[4], -1.0), r[0])
        high_rows = sorted((round(r[1], 3), round(r[0], 3), r[3]) for r in rows if r[0] >= threshold)
        out[name] = {
            "texts": len(texts), "pairs": len(rows), "candidate_pairs": sum(r[2] for r in rows),
            "overlap_quantiles_candidates": _quantiles([r[1] for r in rows if r[2]]),
            "cosine_quantiles_candidates": _quantiles([r[0] for r in rows if r[2]]),
            "lowest_overlap_at_or_above (overlap, cosine, size)": high_rows[:6],
            "by_size": table,
            # what any screen could at most skip: candidate steps whose every candidate is under
            # the threshold (an oracle that knew the cosines)
            "oracle_steps_all_under_threshold": sum(b < threshold for b in best.values()),
            "candidate_steps": len(best),
        }
    return out


def _quantiles(values: list[float]) -> list[float]:
    if not values:
        return []
    values = sorted(values)
    return [round(values[min(len(values) - 1, int(q * len(values)))], 3) for q in (0.1, 0.25, 0.5, 0.75, 0.9)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--margin", type=float, default=0.1, help="cosine margin below the threshold")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    emit(measure(args.split, Policy(semantic=True).semantic_threshold, args.margin), args.json)
    return 0


def emit(report: dict[str, Any], path: str | None) -> None:
    """Print the figures, and write them to ``path`` too when given."""
    text = json.dumps(report, indent=1)
    print(text)
    if path:
        Path(path).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
