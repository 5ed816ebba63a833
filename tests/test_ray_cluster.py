"""The Ray engine on a two-node Ray cluster on this machine, started as an operator would.

``ray start --head`` starts the head node (1 CPU, resource ``head``), then ``ray start
--address`` a second worker node with its own resources (1 CPU, resource ``worker``), both
under a temp dir of their own and on ports picked here. A Parquet bulk export is scored
across both: the rows equal the local engine's, and both nodes scored rows (the engine
records the node id of each scoring batch; the driver first starts one worker on each node, as a
warm cluster has, and scores again, at most three passes, if Ray happened to keep a pass on one
node: every pass's rows are checked). The fixture's teardown ends only the processes
these two commands started: those of their sessions and those that name the temp dir.
Also: an address nothing listens on is a clear error, exit 2, well within 60 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks import ray_nodes

from bulk_export import write_bulk_export
from liveguard.core.allowset import load_allowsets
from liveguard.evaluate.scoring import score_paths

if os.environ.get("CI", "").lower() == "true":
    import ray  # under CI a missing extra is a failure, never a skip
else:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'liveguard[ray]')")

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden_datasets"
EXE = Path(sys.executable).with_name("liveguard")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[str]:
    """A head node and a worker node (1 CPU each), stopped at teardown; yields the head's address."""
    with ray_nodes.two_nodes() as address:
        yield address


def _copies(traces: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` copies of the traces, every id renamed per copy (the same tree, new run ids)."""
    out: list[dict[str, Any]] = []
    for copy in range(n):
        text = json.dumps(traces)
        text = _UUID.sub(lambda m, c=copy: str(uuid.uuid5(uuid.UUID(m.group(0)), str(c))), text)
        out += json.loads(text)
    return out


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    traces: list[dict[str, Any]] = []
    for f in sorted((GOLDEN / "langsmith").glob("*.json")):
        traces += json.loads(f.read_text())
    root = tmp_path_factory.mktemp("export")
    write_bulk_export(root, _copies(traces, 24), rows_per_file=400)
    return root


_DRIVER = """
import json, sys
from pathlib import Path
from liveguard.core.allowset import load_allowsets
from liveguard.evaluate.engine.scorer import ScoreOptions
from liveguard.evaluate.engine.ray import iter_rows_ray
import ray
export, address, paths, one = sys.argv[1:5]
options = ScoreOptions(allow_sets=load_allowsets(Path(paths)), judges=False)
# A job's first Python worker on a node takes seconds to start (and import liveguard): on an
# export this small, the head could score every row before the worker node's is up. So the
# job first starts one worker on each node (pinned by the nodes' own resources), as a warm
# cluster has; then the rows go wherever Ray's SPREAD scheduling puts them.
ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
@ray.remote(num_cpus=1)
def warm():
    import liveguard.evaluate.engine.scorer, pyarrow  # noqa
    return ray.get_runtime_context().get_node_id()
warmed = ray.get([warm.options(resources={name: 0.01}).remote() for name in ("head", "worker")])
# Where tasks run is Ray's choice: a pass that happens to keep every task on one node is scored
# again (at most three passes); every pass's rows are returned and checked.
passes, nodes = [], {}
while len(passes) < 3 and len(nodes) < 2:
    nodes = {}
    passes.append([r.as_json() for r in iter_rows_ray([export], options, nodes=nodes)])
rows = passes[0]
kept = ray.is_initialized()  # a cluster the caller joined is used as it is, and kept
ray.shutdown()
# joined by the call itself: left again when the rows are read
again = [r.as_json() for r in iter_rows_ray([one], options, address=address)]
print(json.dumps({"rows": rows, "passes": passes, "nodes": nodes, "warmed": len(set(warmed)), "kept": kept,
                  "again": len(again), "initialized": ray.is_initialized()}))
"""


def test_a_parquet_export_is_scored_across_two_nodes_with_the_local_rows(two_nodes: str,
                                                                         export: Path) -> None:
    """The driver runs in a process of its own, as a job would: a local ``ray.init()`` earlier
    in this test process (tests/test_ray.py) leaves Ray state that a second cluster must not meet."""
    allow_sets = load_allowsets(ROOT / "expected_paths")
    local = [r.as_json() for r in score_paths([str(export)], engine="local", jobs=1, judges=False,
                                             allow_sets=allow_sets)]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    one = sorted(export.rglob("*.parquet"))[0]
    driver = [sys.executable, "-c", _DRIVER, str(export), two_nodes, str(ROOT / "expected_paths"), str(one)]
    proc = subprocess.run(driver, capture_output=True, text=True, env=env, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    remote, nodes = out["rows"], out["nodes"]
    assert out["warmed"] == 2
    assert out["kept"] is True  # the caller's own ray.init() is kept
    assert out["again"] > 0
    assert out["initialized"] is False  # joined for the call, left again
    assert len(local) == 16 * 24
    assert len({r["run_id"] for r in local}) == len(local)
    assert all(r["passed"] is not None for r in local)  # read and scored, no error row
    assert remote == local
    assert all(rows == local for rows in out["passes"])
    assert len(list(export.rglob("*.parquet"))) >= 4
    assert len(nodes) == 2, nodes  # both nodes scored rows
    assert sum(nodes.values()) == len(local)
    assert min(nodes.values()) > 0, nodes


def test_the_cli_scores_on_the_cluster_like_the_local_engine(two_nodes: str, export: Path) -> None:
    """``liveguard score --engine ray --ray-address HEAD``: the same JSONL as ``--engine local``."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    args = [str(EXE), "score", str(export), "--paths", str(ROOT / "expected_paths"), "--no-judges",
            "--format", "jsonl"]
    remote = subprocess.run([*args, "--engine", "ray", "--ray-address", two_nodes], capture_output=True,
                            text=True, env=env, check=False, timeout=600)
    local = subprocess.run([*args, "--jobs", "1"], capture_output=True, text=True, env=env, check=False,
                           timeout=600)
    assert remote.returncode == local.returncode == 0, remote.stderr[-2000:]
    assert remote.stdout == local.stdout
    assert len(remote.stdout.splitlines()) == 16 * 24


def test_an_unreachable_ray_address_is_exit_2_within_60_s(tmp_path: Path) -> None:
    """Issue 18: ``--ray-address 127.0.0.1:1`` (nothing listens there) is one clear line, exit 2."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"run_id": "r", "steps": [{"node": "a", "summary": "x"}]}) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    for command in ("score", "gate"):
        # The contract's bound is the timeout: past 60 s the run raises TimeoutExpired.
        proc = subprocess.run([str(EXE), command, str(runs), "--no-judges", "--engine", "ray",
                               "--ray-address", "127.0.0.1:1"], capture_output=True, text=True, env=env,
                              check=False, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert "liveguard: Ray cluster at 127.0.0.1:1 cannot be reached" in proc.stderr
        assert "Traceback" not in proc.stderr
