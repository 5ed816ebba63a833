"""Error rows name keys, never values (issue 31, item 2).

A run that does not fit the format gets a message built from pydantic's locations and error
types only: the schema's keys as written, a typo named with the key it misses, every error
listed (no "+N more"), and no text of the run, whatever its values look like. An error of
liveguard's own (a configuration error) keeps its message whole, whatever the run holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from liveguard.core.model import Trajectory
from liveguard.core.policy import Policy
from liveguard.evaluate.engine.scorer import ScoreOptions, Scorer
from liveguard.readers.jsonl import parse_line

STEP_KEYS = "args, error, node, output, result, summary, tool"


def _score_jsonl(tmp_path: Path, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``liveguard score FILE --no-judges --format jsonl``: one JSON row per run."""
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in runs))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_EVAL_", "OPENAI_"))}
    done = subprocess.run([sys.executable, "-m", "liveguard.cli", "score", str(path), "--no-judges",
                           "--format", "jsonl"], capture_output=True, text=True, env=env, check=False,
                          cwd=tmp_path)
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == len(runs), done.stderr
    return rows


def test_typos_name_the_key_they_miss(tmp_path: Path) -> None:
    """"nod" for "node", "sumary" for "summary": the message says so, in the key names as written."""
    rows = _score_jsonl(tmp_path, [
        {"run_id": "r1", "steps": [{"nod": "a", "summary": "x"}]},
        {"run_id": "r2", "steps": [{"node": "a", "sumary": "x"}]},
    ])
    assert rows[0]["error"] == ("steps.0.node: missing (a required key); "
                                "steps.0.nod: unknown key (did you mean 'node'?)")
    assert rows[1]["error"] == "steps.0.sumary: unknown key (did you mean 'summary'?)"


def test_every_error_is_listed_and_missing_keys_are_named(tmp_path: Path) -> None:
    rows = _score_jsonl(tmp_path, [
        {"steps": [{"summary": "x"}, {"node": 5}], "expected": {"pased": True}},
        {"run_id": "r"},
    ])
    assert rows[0]["error"] == ("run_id: missing (a required key); steps.0.node: missing (a required key); "
                                "steps.1.node: expected a string; expected.passed: missing (a required key); "
                                "expected.pased: unknown key (did you mean 'passed'?)")
    assert "more" not in rows[0]["error"]
    assert rows[1]["error"] == "steps: missing (a required key)"


def test_values_that_look_like_keys_never_change_a_message(tmp_path: Path) -> None:
    """Values equal to key names (or to parts of them) are neither shown nor edited into the message."""
    rows = _score_jsonl(tmp_path, [
        {"run_id": "nod", "graph": "node", "steps": [{"nod": "summary", "summary": "steps"},
                                                     {"node": "sumary", "sumary": "node"}]},
    ])
    assert rows[0]["error"] == ("steps.0.node: missing (a required key); "
                                "steps.0.nod: unknown key (did you mean 'node'?); "
                                "steps.1.sumary: unknown key (did you mean 'summary'?)")
    assert "redacted" not in rows[0]["error"]


def test_a_private_key_is_a_digest_and_the_schema_keys_are_listed(tmp_path: Path) -> None:
    secret = "alice@example.com"
    rows = _score_jsonl(tmp_path, [{"run_id": "r", "steps": [{"node": "a", secret: "4111 1111 1111 1111"}]}])
    error = rows[0]["error"]
    assert error.startswith("steps.0.#")
    assert f"the keys here are: {STEP_KEYS}" in error
    assert secret not in error
    assert "4111" not in error


def test_a_configuration_error_keeps_its_words_whatever_the_run_holds() -> None:
    """A node named "model" (and a summary naming the embedders) does not edit the error's text."""
    scorer = Scorer(ScoreOptions(judges=False, explicit_policy=Policy(semantic=True,
                                                                     semantic_embedder="nonexistent")))
    line = orjson.dumps({"run_id": "r", "steps": [{"node": "model", "summary": "local static openai"},
                                                  {"node": "unknown", "summary": "embedder"}]})
    (row,) = scorer.score_chunk([("f.jsonl:1", line)])
    assert row.error == "SemanticUnavailable: unknown embedder 'nonexistent' (known: local, openai, static)"


def test_a_foreign_exception_is_named_by_type_and_place_only() -> None:
    secret = "alice@example.com"

    class Boom(Scorer):
        def floor_verdict(self, run: Trajectory) -> Any:
            raise KeyError(f"{run.steps[0].summary} node")

    line = orjson.dumps({"run_id": "r", "steps": [{"node": "a", "summary": secret}]})
    (row,) = Boom(ScoreOptions(judges=False)).score_chunk([("f.jsonl:1", line)])
    assert row.error is not None
    assert row.error.startswith("KeyError: message withheld (it may quote the run) at "
                                "test_error_messages.py:")
    assert secret not in row.error


_KEYS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=20),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
                       max_leaves=8)


def _blank(obj: Any) -> Any:
    """The same run with every string value (not key) replaced by a filler of the same emptiness."""
    if isinstance(obj, dict):
        return {key: _blank(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_blank(value) for value in obj]
    if isinstance(obj, str):
        return "v" if obj else ""
    if isinstance(obj, int) and not isinstance(obj, bool):
        return 7
    return obj


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.dictionaries(_KEYS, _VALUES, max_size=4), min_size=1, max_size=3),
       run_id=_VALUES)
def test_no_value_of_a_run_reaches_its_read_error(steps: list[dict[str, Any]], run_id: Any) -> None:
    """Fuzzed runs: a read error depends on the keys and the values' types only, never on a value."""
    data = {"run_id": run_id, "steps": steps}
    item = parse_line(orjson.dumps(data), "f:1")
    other = parse_line(orjson.dumps(_blank(data)), "f:1")
    if isinstance(item, Trajectory):
        assert isinstance(other, Trajectory)
        return
    assert not isinstance(other, Trajectory)
    assert item.reason == other.reason
