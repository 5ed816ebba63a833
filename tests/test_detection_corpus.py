"""The committed detection corpus (benchmarks/detection/) is well-formed.

A data test, not a timed one: every data line parses into liveguard's ``Trajectory``,
every labelled run exists, labels and splits are valid and the split is the documented
deterministic one, and every data file has its source and licence recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from liveguard import Policy, Trajectory, TrajectoryReadError, read_jsonl

DETECTION = Path(__file__).resolve().parents[1] / "benchmarks" / "detection"
DATA = DETECTION / "data"
SOURCE_FILES = {
    "taubench": "taubench_airline.jsonl",
    "tau2_retail": "tau2_retail.jsonl",
    "tau2_claude": "tau2_claude.jsonl",
    "whowhen": "whowhen.jsonl",
    "whowhen_hc": "whowhen_hc.jsonl",
    "miniswe": "miniswe.jsonl",
}
LABELS = {"loop", "stall", "progress"}
SPLITS = {"dev", "test"}


def _labels() -> list[dict[str, Any]]:
    lines = (DETECTION / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Trajectory]]:
    """Every run of every data file, by source; a line that does not parse fails here."""
    out: dict[str, dict[str, Trajectory]] = {}
    for source, name in SOURCE_FILES.items():
        parsed: dict[str, Trajectory] = {}
        for item in read_jsonl(DATA / name):
            assert not isinstance(item, TrajectoryReadError), f"{item}"
            assert isinstance(item, Trajectory)
            assert item.run_id not in parsed, f"duplicate run id {item.run_id} in {name}"
            assert item.steps, f"{item.run_id}: no steps"
            parsed[item.run_id] = item
        out[source] = parsed
    return out


def test_every_data_file_is_listed_with_a_licence() -> None:
    sources = (DETECTION / "SOURCES.md").read_text(encoding="utf-8")
    for name in SOURCE_FILES.values():
        assert f"data/{name}" in sources
    assert sorted(p.name for p in DATA.glob("*.jsonl")) == sorted(SOURCE_FILES.values())
    licences = list((DETECTION / "licenses").iterdir())
    assert len(licences) >= 3
    assert all("MIT License" in p.read_text() for p in licences)


def test_every_run_parses_and_ids_are_unique(runs: dict[str, dict[str, Trajectory]]) -> None:
    ids = [run_id for by_id in runs.values() for run_id in by_id]
    assert len(ids) == len(set(ids))
    assert len(runs["miniswe"]) >= 150  # the throughput benchmark's file (issue 21)


def test_labels_are_valid_and_point_at_real_runs(runs: dict[str, dict[str, Trajectory]]) -> None:
    labels = _labels()
    assert len(labels) >= 150
    assert len({row["run_id"] for row in labels}) == len(labels)
    for row in labels:
        assert set(row) <= {"run_id", "source", "label", "split", "reason", "loop_start"}, row
        assert row["label"] in LABELS, row
        assert row["split"] in SPLITS, row
        assert row["source"] in SOURCE_FILES, row
        run = runs[row["source"]].get(row["run_id"])
        assert run is not None, f"{row['run_id']} is not in data/{SOURCE_FILES[row['source']]}"
        assert isinstance(row["reason"], str), row
        assert len(row["reason"]) > 10, row
        if "loop_start" in row:
            assert row["label"] in {"loop", "stall"}, row
            assert 0 <= row["loop_start"] < len(run.steps), row
    looping = sum(row["label"] in {"loop", "stall"} for row in labels)
    assert looping >= 50


def test_split_is_the_documented_deterministic_one() -> None:
    """Within each (source, label) group, ordered by sha256(run_id): dev, test, dev, ..."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in _labels():
        groups[(row["source"], row["label"])].append(row)
    for group in groups.values():
        group.sort(key=lambda r: hashlib.sha256(r["run_id"].encode()).hexdigest())
        assert [r["split"] for r in group] == ["dev" if i % 2 == 0 else "test" for i in range(len(group))]
    counts = Counter(row["split"] for row in _labels())
    assert abs(counts["dev"] - counts["test"]) <= len(groups)


def _bench_run_module() -> Any:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("liveguard_detection_run", DETECTION / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_run_records_the_policy_of_its_agent_architecture(
    runs: dict[str, dict[str, Trajectory]],
) -> None:
    """Tool agents (tau-bench, tau2-bench, mini-swe-agent) carry ``metadata.policy = "tool_agent"``, which
    ``liveguard score`` reads; the multi-agent Who&When runs carry none (no preset is "no
    revisit ceiling"), and run.py's table gives every source its policy."""
    from liveguard.evaluate.scoring import policy_for

    bench = _bench_run_module()
    assert set(bench.POLICIES) == set(SOURCE_FILES) == set(bench.PRESET_OF)
    for source, by_id in runs.items():
        expected = {"taubench": "tool_agent", "tau2_retail": "tool_agent", "tau2_claude": "tool_agent",
                    "miniswe": "tool_agent"}.get(source)
        assert bench.PRESET_OF[source] == expected
        for run in by_id.values():
            assert (run.metadata or {}).get("source") == source
            assert (run.metadata or {}).get("policy") == expected, run.run_id
            resolved = policy_for(run, Policy.workflow())
            if expected == "tool_agent":  # liveguard score reads the preset from the run
                assert resolved.revisit_limit("tools") is None
                assert resolved.revisit_limit("agent") is None
            policy = bench.policy_of(run)
            assert policy.semantic is False
            assert bench.policy_of(run, semantic=True).semantic is True
    # every node of a converted tool agent: no revisit count
    for source in ("taubench", "tau2_retail", "tau2_claude", "miniswe"):
        nodes = {step.node for run in runs[source].values() for step in run.steps}
        policy = bench.POLICIES[source]()
        assert {node for node in nodes if policy.revisit_limit(node) is not None} == set(), source
    for source in ("whowhen", "whowhen_hc"):  # an arbitrary graph: default_policy's construction
        policy = bench.POLICIES[source]()
        assert policy.max_revisits > policy.window
        assert policy.model_copy(update={"max_revisits": Policy.workflow().max_revisits}) == Policy.workflow()
