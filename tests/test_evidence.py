"""Missing evidence is a typed value (issue 20, item 2), built and parsed in one module, and
its text is what the outputs always carried."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

import liveguard
from liveguard.core.evidence import KINDS, MissingEvidence, level_error, level_error_reason, level_skip
from liveguard.core.model import Verdict
from liveguard.evaluate.verdict import apply_escalation

ROOT = Path(liveguard.__file__).resolve().parent
_BUILT = re.compile(r"""f?["'](?:judge_error|judges_skipped|judge_void|no_allowset|rule_family_off|"""
                    r"""semantic_unavailable|skipped):(?! )""")


def test_the_prefix_strings_live_in_one_module() -> None:
    """No module but evidence.py builds or parses ``kind:`` text (a literal ``"judge_error:"``...)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "evidence.py":
            continue
        hits = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if _BUILT.search(line.split("#", 1)[0]) and not line.strip().startswith(("``", '"""'))]
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert not found, found


def test_a_missing_evidence_value_is_its_text_and_reads_by_kind() -> None:
    m = MissingEvidence.judge_error("step", "http_5xx")
    assert (m.kind, m.detail, m.level, m.error) == ("judge_error", "step:http_5xx", "step", "http_5xx")
    assert m == "judge_error:step:http_5xx"
    assert str(m) == "judge_error:step:http_5xx"
    assert MissingEvidence.parse("judge_error:step:http_5xx") == m
    assert MissingEvidence.parse(m) is m
    assert MissingEvidence("no_steps") == "no_steps"
    assert MissingEvidence("no_steps").detail == ""
    assert pickle.loads(pickle.dumps(m)).level == "step"
    assert json.dumps([m]) == '["judge_error:step:http_5xx"]'
    assert m.judge_gap
    assert not m.gate_only
    assert MissingEvidence("no_allowset", "g").gate_only
    assert set(KINDS) >= {"judge_error", "judges_skipped", "judge_void", "no_steps", "no_allowset"}
    with pytest.raises(ValueError, match="unknown kind"):
        MissingEvidence("judges_sleeping", "x")


def test_a_verdict_keeps_typed_evidence_and_serializes_the_same_text() -> None:
    v = Verdict(run_id="r", passed=False, prompt_version="p", reason="unjudged",
                missing=["judges_skipped:no_api_key", MissingEvidence("rule_family_off", "loop_guard")])
    assert all(isinstance(m, MissingEvidence) for m in v.missing)
    assert [m.kind for m in v.missing] == ["judges_skipped", "rule_family_off"]
    text = ["judges_skipped:no_api_key", "rule_family_off:loop_guard"]
    assert v.model_dump()["missing"] == text
    assert json.loads(v.model_dump_json())["missing"] == text
    back = Verdict.model_validate_json(v.model_dump_json())
    assert back == v
    assert back.missing[0].detail == "no_api_key"
    with pytest.raises(ValueError, match="unknown kind"):
        Verdict(run_id="r", passed=False, prompt_version="p", reason="x", missing=["lost:1"])


def test_the_panels_failure_is_typed() -> None:
    v = Verdict(run_id="r", passed=True, composite=0.82, judged=True, prompt_version="p", reason="passed")
    failed = apply_escalation(v, {"called": True, "panel": 3, "answered": 1, "errors": ["timeout"]})
    assert [(m.kind, m.level, m.error) for m in failed.missing] == [("judge_error", "panel", "timeout")]


def test_a_levels_reason_is_built_and_read_here() -> None:
    assert level_error(level_error_reason("http_429")) == "http_429"
    assert level_error("judged") is None
    assert level_skip("skipped:no_api_key") == "no_api_key"
