"""Every violation of every committed run, before and after a change: a manifest to compare.

For each run of every committed corpus (``benchmarks/detection/data/*.jsonl``, every file
under ``golden_datasets/`` (JSONL and LangSmith exports), and the generated scale corpus of
``benchmarks/scale_corpus.py``), it records a digest of

* the row ``liveguard score --no-judges --format jsonl`` writes for it (``RunRow.json_bytes``);
* its verdict, whole (every violation with its code, step, node, count and detail: digest
  prefixes, windows, step lists), as JSON;
* the violations of a Monitor fed the run step by step (``observe`` then ``finish``: the
  live path), with the policy the evaluation uses (``scan_text`` on);

with the allow-sets of ``expected_paths/`` for the graphs they name (so the transition
rules run too). Run it on one build, ``--write`` a manifest; run it on the other,
``--compare`` against it: it prints the runs that differ (by source, never content) and
exits 1 if any does.

Usage::

    PYTHONPATH=<tree>/backend python benchmarks/violations_identity.py --write /tmp/before.json
    PYTHONPATH=<tree>/backend python benchmarks/violations_identity.py --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import xxhash

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def corpora(tmp: Path, scale_runs: int) -> Iterator[Path]:
    yield from sorted((HERE / "detection" / "data").glob("*.jsonl"))
    yield from sorted(p for p in (ROOT / "golden_datasets").rglob("*") if p.suffix in (".jsonl", ".json"))
    sys.path.insert(0, str(HERE))
    from scale_corpus import SEED, write_corpus

    generated = tmp / "scale_corpus.jsonl"
    write_corpus(generated, scale_runs, seed=SEED)
    yield generated


def manifest(scale_runs: int) -> dict[str, dict[str, str]]:
    from liveguard.core._monitor import Monitor
    from liveguard.core.allowset import load_allowsets
    from liveguard.core.model import Trajectory
    from liveguard.evaluate._aggregation import _scanning
    from liveguard.evaluate.engine.scorer import Scorer
    from liveguard.evaluate.scoring import _options
    from liveguard.readers.inputs import iter_records
    from liveguard.settings import Settings

    allow_sets = load_allowsets(ROOT / "expected_paths")
    options = _options(allow_sets, None, False, Settings.from_env({}), None, verdicts=True)
    scorer = Scorer(options)
    out: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        for path in corpora(Path(tmp_name), scale_runs):
            name = path.name if path.parent.name != "langsmith" else f"langsmith/{path.name}"
            runs: dict[str, str] = {}
            for number, (where, payload) in enumerate(iter_records([path])):
                source = name + where[len(str(path)):]  # the same wherever the tree is
                row = scorer.score_chunk([(source, payload)])[0]
                h = xxhash.xxh3_128()
                h.update(row.json_bytes())
                if row.error is None:
                    verdict = row.verdict
                    assert verdict is not None
                    h.update(verdict.model_dump_json().encode())
                    run = scorer._read(source, payload)
                    assert isinstance(run, Trajectory)
                    allow = allow_sets.get(run.graph) if run.graph else None
                    monitor = Monitor(_scanning(scorer.policy_for(run)), allow)
                    found = []
                    for step in run.steps:
                        found += monitor.observe(step)
                    found += monitor.finish()
                    h.update(orjson.dumps([v.model_dump() for v in found]))
                runs[f"{number}:{source}"] = h.hexdigest()
            out[name] = runs
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path)
    mode.add_argument("--compare", type=Path)
    parser.add_argument("--scale-runs", type=int, default=2000)
    args = parser.parse_args(argv)
    got = manifest(args.scale_runs)
    total = sum(len(runs) for runs in got.values())
    if args.write is not None:
        args.write.write_text(json.dumps(got, indent=0, sort_keys=True))
        print(f"{total} runs in {len(got)} corpora written to {args.write}")
        return 0
    want = json.loads(args.compare.read_text())
    differ = [f"{corpus}: {key}" for corpus in sorted(set(want) | set(got))
              for key in sorted(set(want.get(corpus, {})) | set(got.get(corpus, {})))
              if want.get(corpus, {}).get(key) != got.get(corpus, {}).get(key)]
    for line in differ[:50]:
        print("differs:", line)
    print(f"{total} runs in {len(got)} corpora; {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
