"""Scoring at scale: floor == graph, --jobs N == --jobs 1, and a batch survives hostile runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from benchmarks.scale_corpus import iter_runs, write_corpus

from fake_openai import FakeOpenAI, Reply
from liveguard.core.allowset import load_allowsets
from liveguard.core.model import Trajectory
from liveguard.evaluate import eval_graph
from liveguard.evaluate.engine.floor import Floor
from liveguard.evaluate.engine.scorer import ScoreOptions, Scorer
from liveguard.readers.inputs import iter_inputs

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden_datasets"
PATHS = ROOT / "expected_paths"
EXE = Path(sys.executable).with_name("liveguard")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script, from a directory without ./expected_paths/ (paths given are absolute)."""
    assert EXE.exists(), "the liveguard console script is not installed"
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, check=False,
                          cwd=tempfile.gettempdir())


def golden_runs() -> list[Trajectory]:
    runs = [item for _, item in iter_inputs([GOLDEN, GOLDEN / "langsmith"]) if isinstance(item, Trajectory)]
    assert len(runs) >= 20
    return runs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("scale") / "corpus.jsonl", 400, loop_rate=0.1)


# -- the floor ---------------------------------------------------------------------------------
def test_floor_follows_the_compiled_graph() -> None:
    scorer = Scorer(ScoreOptions(judges=False))
    assert scorer.floor is not None
    assert scorer.floor.nodes == eval_graph.NODES


@pytest.mark.parametrize("judges", [False, True])
def test_floor_from_the_chain_equals_the_floor_of_the_compiled_graph(judges: bool) -> None:
    """The scorer's floor (no LangGraph) has the compiled graph's nodes, order, functions,
    async-ness, reducers, initial values and channels."""
    from liveguard.evaluate.judges import JudgeClient, JudgeConfig

    client = JudgeClient(JudgeConfig.from_settings(Scorer(ScoreOptions(judges=judges)).settings))
    chain = eval_graph.eval_chain(client=client, structural_only=not judges)
    ours = Floor.from_chain(chain, eval_graph.EvalState)
    theirs = Floor.from_graph(eval_graph.build_eval_graph(client=client, structural_only=not judges))
    assert theirs is not None

    def shape(floor: Floor) -> list[tuple[str, str, bool]]:
        return [(name, getattr(fn, "__qualname__", ""), is_async) for name, fn, is_async in floor._steps]

    assert shape(ours) == shape(theirs)
    assert [fn for _, fn, _ in ours._steps] == [fn for _, fn in chain]
    assert ours._reducers == theirs._reducers == {"graph_meta": eval_graph.merge_meta,
                                                  "scores": eval_graph.merge_meta}
    assert ours._initial == theirs._initial
    assert ours._channels == theirs._channels


def test_scoring_without_judges_never_imports_langgraph() -> None:
    """The floor needs no LangGraph: a fresh interpreter scores a run and never imports it."""
    code = (
        "import sys\n"
        "from liveguard.evaluate.engine.scorer import ScoreOptions, Scorer\n"
        f"line = open({str(GOLDEN / 'campaign.jsonl')!r}, 'rb').readline()\n"
        "row = Scorer(ScoreOptions(judges=False)).score_chunk([('x:1', line)])[0]\n"
        "assert row.verdict is not None, row.error\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'langgraph'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_floor_declines_a_graph_with_a_branch() -> None:
    """A conditional edge cannot be followed by a plain loop: the floor declines, the graph is used."""
    from langgraph.graph import END, START, StateGraph

    builder: Any = StateGraph(dict)
    builder.add_node("a", lambda s: {})
    builder.add_node("b", lambda s: {})
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: "b", ["b", END])
    builder.add_edge("b", END)
    assert Floor.from_graph(builder.compile()) is None


def _both(scorer: Scorer, runs: list[Trajectory]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    floor = [scorer.floor_verdict(r).model_dump() for r in runs]

    async def graph() -> list[dict[str, Any]]:
        return [(await scorer.graph_verdict(r)).model_dump() for r in runs]

    return floor, asyncio.run(graph())


def test_floor_verdicts_equal_graph_verdicts_on_golden_runs() -> None:
    scorer = Scorer(ScoreOptions(allow_sets=load_allowsets(PATHS), judges=False))
    runs = golden_runs()
    floor, graph = _both(scorer, runs)
    assert floor == graph
    assert {v["passed"] for v in floor} == {True, False}  # both kinds of verdict compared


def test_floor_verdicts_equal_graph_verdicts_on_generated_corpus() -> None:
    scorer = Scorer(ScoreOptions(judges=False))
    runs = [Trajectory.model_validate(r) for r in iter_runs(300, loop_rate=0.1)]
    floor, graph = _both(scorer, runs)
    assert floor == graph
    assert sum(not v["passed"] for v in floor) >= 10


@pytest.mark.parametrize("score", [0.9, 0.81])  # 0.81: borderline, the escalation panel runs too
def test_floor_with_judges_equals_graph_with_judges(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, score: float
) -> None:
    """Judges on (a local OpenAI-compatible server): the floor awaits the same judge nodes."""
    fake_openai.default_answer = {"score": score, "confidence": 0.7, "reason": "ok"}
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AGENT_EVAL_API_KEY", "k")
    scorer = Scorer(ScoreOptions(allow_sets=load_allowsets(PATHS)))
    runs = golden_runs()

    async def both() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        try:
            floor = [(await scorer.averdict(r)).model_dump() for r in runs]
            graph = [(await scorer.graph_verdict(r)).model_dump() for r in runs]
        finally:
            await scorer.gateway.aclose()
        return floor, graph

    floor, graph = asyncio.run(both())
    assert floor == graph
    assert any(v["judged"] for v in floor)
    assert len(fake_openai.requests) % 2 == 0  # each path asked the same questions


def test_floor_builds_no_judge_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no judge to call, nothing judge-related is built (a spy counts the payload builder)."""
    calls = []
    real = eval_graph._judge_payload

    def spy(level: Any, state: Any) -> Any:
        calls.append(level)
        return real(level, state)

    monkeypatch.setattr(eval_graph, "_judge_payload", spy)
    scorer = Scorer(ScoreOptions(judges=False))
    for run_ in golden_runs():
        scorer.floor_verdict(run_)
    assert calls == []


# -- processes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["jsonl", "json", "table"])
def test_jobs_n_output_is_byte_identical_to_jobs_1_on_golden_runs(fmt: str) -> None:
    args = ("score", str(GOLDEN), str(GOLDEN / "langsmith"), "--paths", str(PATHS), "--no-judges",
            "--format", fmt)
    one, two = run(*args, "--jobs", "1"), run(*args, "--jobs", "2")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == two.stdout
    assert one.stdout.count("sql_agent-looping") == 1


def test_jobs_n_output_is_byte_identical_to_jobs_1_on_generated_corpus(corpus: Path) -> None:
    one = run("score", str(corpus), "--no-judges", "--format", "jsonl", "--jobs", "1")
    two = run("score", str(corpus), "--no-judges", "--format", "jsonl", "--jobs", "2")
    assert one.returncode == 0, one.stderr
    assert one.stdout == two.stdout
    rows = [json.loads(line) for line in one.stdout.splitlines()]
    assert [r["run_id"] for r in rows] == [f"scale-{i:07d}" for i in range(400)]  # input order


def test_json_format_streams_a_valid_array(corpus: Path) -> None:
    proc = run("score", str(corpus), "--no-judges", "--format", "json", "--jobs", "2")
    assert len(json.loads(proc.stdout)) == 400


def test_judge_calls_are_concurrent_under_one_bound_across_workers(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """--jobs 2, AGENT_EVAL_CONCURRENCY=2: judge requests overlap, never more than 2 at once.

    70 runs make three chunks, so both workers judge at the same time.
    """
    corpus = write_corpus(tmp_path / "healthy.jsonl", 70, loop_rate=0.0)
    answer = {"score": 0.9, "confidence": 0.8, "reason": "ok"}
    fake_openai.default_answer = answer
    fake_openai.enqueue(*[Reply.slow(0.05, answer)] * 140)
    env = {**os.environ, "AGENT_EVAL_BASE_URL": fake_openai.base_url, "AGENT_EVAL_API_KEY": "k",
           "AGENT_EVAL_CONCURRENCY": "2"}
    proc = subprocess.run([str(EXE), "score", str(corpus), "--format", "jsonl", "--jobs", "2"],
                          capture_output=True, text=True, check=False, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["provenance"]["judged"] for r in rows] == [True] * 70
    assert len(fake_openai.requests) == 140  # step + trajectory per run
    assert fake_openai.max_in_flight == 2


def test_jobs_below_one_is_a_usage_error(corpus: Path) -> None:
    proc = run("score", str(corpus), "--jobs", "0")
    assert proc.returncode == 2
    assert "--jobs" in proc.stderr


# -- batch isolation ---------------------------------------------------------------------------
SECRET = "alice@example.com"


def _hostile_lines() -> list[bytes]:
    healthy = [orjson.dumps(r) for r in iter_runs(6, loop_rate=0.0)]
    request = {"node": "model", "output": {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "name": ["sql", SECRET], "args": {"q": 1}}]}}
    tool = {"node": "tools", "tool": "sql", "args": {"q": 1}, "result": "r"}
    list_name = {"run_id": "list-name", "graph": "g", "metadata": {"policy": "tool_agent"},
                 "steps": [request, tool] * 4}
    key_step = {"run_id": "key-step", "graph": "g", "steps": [{"node": "a", SECRET: "4111 1111 1111 1111"}]}
    deep: Any = {"x": 1}
    for _ in range(150):
        deep = {SECRET: deep}
    deep_args = {"run_id": "deep-args", "graph": "g", "steps": [{"node": "t", "tool": "t", "args": deep}]}
    return [healthy[0], healthy[1], orjson.dumps(list_name), orjson.dumps(key_step),
            b"{not json " + SECRET.encode(), healthy[2], orjson.dumps(deep_args), healthy[3],
            healthy[0], healthy[4]]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_hostile_runs_become_error_rows_and_the_batch_goes_on(tmp_path: Path, jobs: str) -> None:
    path = tmp_path / "hostile.jsonl"
    lines = _hostile_lines()
    path.write_bytes(b"\n".join(lines) + b"\n")
    proc = run("score", str(path), "--no-judges", "--format", "jsonl", "--jobs", jobs)
    assert proc.returncode == 2  # error rows present
    assert "Traceback" not in proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) == len(lines)  # rows out == runs in
    assert SECRET not in proc.stdout + proc.stderr
    assert "4111" not in proc.stdout + proc.stderr
    by_line = {r["source"].rsplit(":", 1)[1]: r for r in rows}
    assert by_line["1"]["passed"] is True
    assert by_line["2"]["passed"] is True
    # list-valued tool name: a TypeError inside the rules, or (once the rules accept it) a verdict
    third = by_line["3"]
    assert third.get("error") is None or third["error"].startswith("TypeError: ")
    assert by_line["4"]["error"].startswith("steps.0.#")  # the key itself shown only as a digest
    assert "unknown key" in by_line["4"]["error"]
    assert by_line["5"]["error"].startswith("invalid JSON")
    assert by_line["7"]["error"].startswith("FingerprintError: ")
    assert by_line["7"]["run_id"] == "deep-args"
    assert by_line["9"]["error"] == "DuplicateRunId: the same run id came earlier in this input"
    assert by_line["9"]["run_id"] == "scale-0000000"
    assert [by_line[n]["passed"] for n in ("6", "8", "10")] == [True, True, True]


def test_scorer_turns_any_exception_into_an_error_row() -> None:
    """Whatever the exception type, one error row, with the record's text redacted."""

    class Boom(Scorer):
        def floor_verdict(self, run: Trajectory) -> Any:
            raise KeyError(run.steps[0].summary)

    scorer = Boom(ScoreOptions(judges=False))
    line = orjson.dumps({"run_id": "r", "steps": [{"node": "a", "summary": f"mail {SECRET}"}]})
    (row,) = scorer.score_chunk([("f.jsonl:1", line)])
    assert row.verdict is None
    assert row.run_id == "r"
    assert row.error is not None
    assert row.error.startswith("KeyError: ")
    assert SECRET not in row.error


def test_rows_without_verdicts_write_the_same_json(corpus: Path) -> None:
    """``verdicts=False`` (score --format json|jsonl) leaves the verdict in the worker: the
    rows' JSON and summaries are the same, and reading a verdict says why it is missing."""
    from liveguard.evaluate.scoring import score_paths

    kept = list(score_paths([corpus], judges=False, jobs=2))
    light = list(score_paths([corpus], judges=False, jobs=2, verdicts=False))
    assert [r.as_json() for r in light] == [r.as_json() for r in kept]
    assert [(r.passed, r.hard_codes, r.reason) for r in light] == [(r.passed, r.hard_codes, r.reason)
                                                                   for r in kept]
    assert sum(not r.passed for r in light) >= 10
    with pytest.raises(RuntimeError, match="verdicts=False"):
        _ = light[0].verdict
    assert kept[0].verdict is not None


def test_a_row_crosses_processes_whole() -> None:
    """Pickled rows (the workers' answer) keep path, verdict and JSON; a node name holding the
    path separator still round-trips."""
    import pickle

    from liveguard.evaluate.rows import RunRow

    scorer = Scorer(ScoreOptions(judges=False))
    run_ = golden_runs()[0]
    for nodes in (("a", "b\x1fc", "d"), ("only",), ()):
        row = scorer._row("src:1", run_, scorer.floor_verdict(run_))
        row.path = nodes
        back = pickle.loads(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
        assert isinstance(back, RunRow)
        assert back.path == nodes
        assert back == row
        assert back.as_json() == row.as_json()
