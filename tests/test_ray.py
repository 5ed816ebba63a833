"""The Ray engine on a local 2-CPU Ray cluster: the same rows as the local engine, one judge bound."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks.scale_corpus import write_corpus

from bulk_export import write_bulk_export
from fake_openai import FakeOpenAI, Reply
from liveguard.core.allowset import load_allowsets
from liveguard.evaluate.scoring import score_paths

if os.environ.get("CI", "").lower() == "true":
    import ray  # under CI a missing extra is a failure, never a skip
else:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'liveguard[ray]')")

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden_datasets"
PATHS = ROOT / "expected_paths"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def bulk_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden LangSmith traces in the bulk-export layout (Parquet, partitioned folders)."""
    traces: list[dict[str, Any]] = []
    for f in sorted((GOLDEN / "langsmith").glob("*.json")):
        traces += json.loads(f.read_text())
    root = tmp_path_factory.mktemp("export")
    write_bulk_export(root, traces, rows_per_file=150)
    return root


def _rows(paths: list[Path], engine: str, **options: Any) -> list[dict[str, Any]]:
    return [r.as_json() for r in score_paths([str(p) for p in paths], engine=engine, **options)]


def test_ray_rows_equal_local_rows_on_golden_runs(cluster: None, bulk_export: Path) -> None:
    options: dict[str, Any] = {"allow_sets": load_allowsets(PATHS), "judges": False}
    # the JSONL runs (a directory is read recursively, and golden_datasets/langsmith/ holds the
    # same traces as the export: their run ids would be duplicates)
    paths = [*sorted(GOLDEN.glob("*.jsonl")), bulk_export]
    local = _rows(paths, "local", jobs=1, **options)
    remote = _rows(paths, "ray", **options)
    assert remote == local
    golden_lines = sum(len(f.read_text().splitlines()) for f in GOLDEN.glob("*.jsonl"))
    assert len(list(bulk_export.rglob("*.parquet"))) >= 2  # several files
    from_parquet = [r for r in remote if r["source"].endswith(".parquet")]
    assert len(local) == golden_lines + len(from_parquet)  # every JSONL run and every exported trace
    assert len(from_parquet) == 16
    assert all(r["passed"] is not None for r in from_parquet)  # read and scored, no error row


def test_parquet_export_scores_like_the_json_export(bulk_export: Path) -> None:
    """The bulk-export reader recovers the same runs as the JSON export reader (local engine)."""
    json_rows = _rows([GOLDEN / "langsmith"], "local", jobs=1, judges=False)
    parquet_rows = _rows([bulk_export], "local", jobs=1, judges=False)
    for row in json_rows + parquet_rows:
        row.pop("source")
    assert parquet_rows == json_rows


def test_ray_rows_equal_local_rows_on_generated_corpus(cluster: None, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus.jsonl", 300, loop_rate=0.1)
    local = _rows([corpus], "local", jobs=2, judges=False)
    remote = _rows([corpus], "ray", judges=False)
    assert remote == local
    assert sum(r["passed"] is False for r in local) >= 10


def test_judges_under_ray_share_one_bound(
    cluster: None, tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Ray workers, AGENT_EVAL_CONCURRENCY=2: never more than 2 judge requests in flight."""
    corpus = write_corpus(tmp_path / "healthy.jsonl", 12, loop_rate=0.0)
    fake_openai.default_answer = {"score": 0.9, "confidence": 0.8, "reason": "ok"}
    fake_openai.enqueue(*[Reply.slow(0.2, {"score": 0.9, "confidence": 0.8, "reason": "ok"})] * 24)
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AGENT_EVAL_API_KEY", "k")
    monkeypatch.setenv("AGENT_EVAL_CONCURRENCY", "2")
    rows = _rows([corpus], "ray")
    assert len(rows) == 12
    assert all(r["provenance"]["judged"] for r in rows)
    assert len(fake_openai.requests) == 24  # step + trajectory per run
    assert 1 <= fake_openai.max_in_flight <= 2

    monkeypatch.setenv("LLM_KILL_SWITCH", "1")  # read on the driver, obeyed by every worker
    off = _rows([corpus], "ray")
    assert {r["provenance"]["judges_skipped"] for r in off} == {"kill_switch"}
    assert len(fake_openai.requests) == 24


def test_gate_and_report_accept_the_ray_engine(
    cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gate`` and ``report`` take ``--engine ray`` as ``score`` does: the same decision and
    page as the local engine, and a broken line is still an ERROR row, not a lost run."""
    import io

    from liveguard.cli import main

    corpus = write_corpus(tmp_path / "corpus.jsonl", 60, loop_rate=0.2)
    with corpus.open("ab") as f:
        f.write(b'{"run_id": "broken", "steps": [\n')
    monkeypatch.chdir(tmp_path)  # no ./expected_paths/ picked up
    monkeypatch.setenv("LLM_KILL_SWITCH", "1")
    outputs: dict[str, tuple[int, str, str]] = {}
    for engine in ("local", "ray"):
        gate_out, report_out = io.StringIO(), io.StringIO()
        gate = main(["gate", str(corpus), "--no-judges", "--window", "100", "--engine", engine], gate_out)
        page = tmp_path / f"report-{engine}.html"
        main(["report", str(corpus), "--no-judges", "--engine", engine, "-o", str(page)], report_out)
        outputs[engine] = (gate, gate_out.getvalue(), page.read_text())
    assert outputs["ray"][:2] == outputs["local"][:2]
    status, text, _ = outputs["ray"]
    assert status != 0  # looping runs and an unreadable line: never a PROMOTE
    assert "ERROR  " in text
    assert ":61" in text  # the broken line, by its line number
    assert "runs: 60" in text
    assert _report_body(outputs["ray"][2]) == _report_body(outputs["local"][2])


def _report_body(page: str) -> str:
    """The report page without what differs between two invocations (its file name, time)."""
    import re

    return re.sub(r"report-(local|ray)(\.html|_pages)|\d{4}-\d{2}-\d{2}[T ][\d:.]+Z?", "", page)
