"""The recorded judge of benchmarks/detection (issue 30, item 6): the spin-check prompts are
exported blind (digest and messages only), real answers are imported with their provenance,
and the local OpenAI-compatible server replays them by the prompt's digest to the real judge
client; a prompt with no recorded answer fails the benchmark loudly.

The answers below are written by this test to exercise the machinery, never figures."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from liveguard import Step, Trajectory
from liveguard.evaluate.judges import SPIN_CHECK_PROMPT, prompt_digest

DETECTION = Path(__file__).resolve().parents[1] / "benchmarks" / "detection"


def _module(name: str, file: str) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, DETECTION / file)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


detection = _module("detection_run_under_test", "run.py")
record = _module("detection_record_under_test", "record.py")
cassette = sys.modules["cassette"]

PAGE = "Survivor winners list: All seasons - GoldDerby. Season 1 Richard Hatch, Season 2 Tina Wesson."
WIKI = "Survivor (American TV series) - Wikipedia. The winners table lists names and seasons, not birthdates."


def run_of(run_id: str, queries: list[str], titles: list[str]) -> Trajectory:
    """A tau-bench-shaped run whose reworded searches and lookups bring the same pages back:
    two suspicions (one per tool, steps 4 and 5)."""
    steps = [Step(node="user", summary="Find the birthdates of every Survivor winner.")]
    for query, title in zip(queries, titles, strict=True):
        steps += [Step(node="tools", tool="web_search", args={"query": query}, result=PAGE),
                  Step(node="tools", tool="wiki_lookup", args={"title": title}, result=WIKI),
                  Step(node="agent", summary=f"No birthdates yet; searching {query!r} did not help.")]
    return Trajectory(run_id=run_id, steps=steps, metadata={"source": "taubench", "policy": "tool_agent"})


RUNS = {"a": run_of("a", ["survivor winners birthdates", "birthdates of all survivor winners"],
                    ["Survivor winners", "List of Survivor winners"]),
        "b": run_of("b", ["survivor champions born when", "when were survivor champions born"],
                    ["Survivor champions", "Survivor champions list"])}
LABELS = [{"run_id": "a", "source": "taubench", "label": "loop", "split": "test", "loop_start": 3},
          {"run_id": "b", "source": "taubench", "label": "progress", "split": "test"}]


def exported_prompts(tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / "prompts.jsonl"
    assert detection.export_prompts(LABELS, RUNS, out) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_the_exported_prompts_hold_only_what_the_model_sees(tmp_path: Path) -> None:
    prompts = exported_prompts(tmp_path)
    assert len(prompts) == 4  # two suspicions per run, distinct prompts
    for line in prompts:
        assert set(line) == {"digest", "messages"}
        assert prompt_digest(line["messages"]) == line["digest"]
        assert line["messages"][0]["content"] == SPIN_CHECK_PROMPT
        data = line["messages"][1]["content"]
        for leak in ("run_id", "taubench", "label", "loop_start", "split", '"test"'):
            assert leak not in data  # nothing but what the model is to judge
    assert exported_prompts(tmp_path) == prompts  # deterministic: the same file every time


def answers_file(tmp_path: Path, prompts: list[dict[str, Any]], scores: list[float]) -> Path:
    path = tmp_path / "answers.jsonl"
    lines = [{"digest": p["digest"],
              "answer": f'```json\n{{"score": {s}, "confidence": 0.8, "reason": "test answer"}}\n```'}
             for p, s in zip(prompts, scores, strict=True)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_answers_are_replayed_by_digest_to_the_real_judge_client(tmp_path: Path) -> None:
    prompts = exported_prompts(tmp_path)
    tape = tmp_path / "cassette.jsonl"
    counts = record.record(answers_file(tmp_path, prompts, [0.1, 0.2, 0.1, 0.9]),
                           by="test-model (machinery test)", at="2026-12-07T00:00:00+00:00",
                           prompts=[tmp_path / "prompts.jsonl"], replace=False, path=tape)
    assert (counts["added"], counts["total"], counts["unusable"]) == (4, 4, 0)
    entries = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()]
    assert {e["answered_by"] for e in entries} == {"test-model (machinery test)"}
    assert all(e["answered_at"] and e["recorded_at"] and e["prompt_version"] for e in entries)
    scored = detection.score(LABELS, RUNS, [detection.RECORDED], cassette_path=tape)
    flags = scored["results"][detection.RECORDED]
    # a: both suspicions judged spins, hard at the second; b: one judged spin on a first
    # suspicion is not a stop (Policy.spin_hard_repeats, 2)
    assert flags == {"a": 5, "b": None}
    judge = scored["judge"]
    assert (judge["calls"], judge["distinct_prompts"], judge["unusable_answers"]) == (4, 4, 0)
    assert judge["tokens"] > 0


def test_a_prompt_without_a_recorded_answer_fails_loudly(tmp_path: Path) -> None:
    prompts = exported_prompts(tmp_path)
    tape = tmp_path / "cassette.jsonl"
    record.record(answers_file(tmp_path, prompts[:1], [0.1]), by="test-model", at=None, prompts=[],
                  replace=False, path=tape)
    with pytest.raises(SystemExit, match=r"FAILED: 3 spin-check prompt\(s\) have no recorded answer") as info:
        detection.score(LABELS, RUNS, [detection.RECORDED], cassette_path=tape)
    assert prompts[1]["digest"] in str(info.value)


def test_record_refuses_unknown_prompts_and_silent_overwrites(tmp_path: Path) -> None:
    prompts = exported_prompts(tmp_path)
    tape = tmp_path / "cassette.jsonl"
    stray = tmp_path / "stray.jsonl"
    stray.write_text(json.dumps({"digest": "0" * 64, "answer": "{}"}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="in none of the --prompts files"):
        record.record(stray, by="m", at=None, prompts=[tmp_path / "prompts.jsonl"], replace=False, path=tape)
    record.record(answers_file(tmp_path, prompts, [0.1, 0.9, 0.1, 0.9]), by="m", at=None, prompts=[],
                  replace=False, path=tape)
    with pytest.raises(SystemExit, match="already has another recorded answer"):
        record.record(answers_file(tmp_path, prompts, [0.2, 0.9, 0.1, 0.9]), by="m", at=None, prompts=[],
                      replace=False, path=tape)
    counts = record.record(answers_file(tmp_path, prompts, [0.2, 0.9, 0.1, 0.9]), by="m", at=None, prompts=[],
                           replace=True, path=tape)
    assert (counts["replaced"], counts["unchanged"]) == (1, 3)
    with pytest.raises(SystemExit, match="--by must name"):
        record.record(stray, by=" ", at=None, prompts=[], replace=False, path=tape)
