"""The Ray engine across two nodes on this machine (issue 21, item 5): runs per second per CPU.

Starts a head node and a worker node (``benchmarks/ray_nodes.py``: ``ray start --head``,
``ray start --address``, 1 CPU each), then scores one generated corpus
(``benchmarks/scale_corpus.py``, N runs × 24 steps, 5% loops) structurally
(``--no-judges``):

* on the two-node cluster (``iter_rows_ray`` joining the head's address; the driver's own
  ``ray.init`` is timed apart as ``join_s``), with the rows each node scored;
* with the local engine, ``--jobs 2`` (the same two CPUs), in the same process;

and checks the rows are identical. Runs per second per CPU = runs ÷ wall ÷ 2 for both.

Usage: ``python benchmarks/ray_cluster.py [--runs 20000] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from liveguard.evaluate.engine.ray import iter_rows_ray
from liveguard.evaluate.engine.scorer import ScoreOptions
from liveguard.evaluate.scoring import iter_scored
from liveguard.readers.inputs import iter_records
from ray_nodes import two_nodes
from scale_corpus import write_corpus

CPUS = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import ray

    with tempfile.TemporaryDirectory(prefix="liveguard-ray-bench-") as tmp:
        corpus = write_corpus(Path(tmp) / "runs.jsonl", args.runs)
        start = time.perf_counter()
        local = [r.json_bytes() for r in iter_scored(iter_records([corpus]), judges=False, jobs=CPUS)]
        local_s = time.perf_counter() - start
        with two_nodes(object_store_mb=200) as address:
            start = time.perf_counter()
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            join_s = time.perf_counter() - start
            nodes: dict[str, int] = {}
            try:
                start = time.perf_counter()
                remote = [r.json_bytes() for r in iter_rows_ray([str(corpus)], ScoreOptions(judges=False),
                                                                nodes=nodes)]
                ray_s = time.perf_counter() - start
            finally:
                ray.shutdown()
    figures: dict[str, Any] = {
        "runs": args.runs, "cpus": CPUS, "load": round(os.getloadavg()[0], 2),
        "identical": remote == local, "rows_per_node": sorted(nodes.values()),
        "join_s": round(join_s, 2), "ray_s": round(ray_s, 2), "local_s": round(local_s, 2),
        "ray_runs_per_s_per_cpu": round(args.runs / ray_s / CPUS),
        "local_runs_per_s_per_cpu": round(args.runs / local_s / CPUS),
    }
    print(orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode())
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
