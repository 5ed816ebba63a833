"""The verdict module's decision rule and the settings' precedence, each written once."""

from __future__ import annotations

import pytest

from liveguard import Policy, Trajectory
from liveguard.core.model import Verdict
from liveguard.evaluate.gate import GATE_PASS_RATE, decide
from liveguard.evaluate.scoring import policy_for
from liveguard.evaluate.verdict import (
    BORDERLINE_MARGIN,
    PASS_MARK,
    apply_escalation,
    decide_run,
    is_borderline,
)
from liveguard.settings import Settings, resolve
from liveguard.testing import messages


@pytest.mark.parametrize(
    ("hard", "composite", "missing", "structural", "expected"),
    [
        (["content_cycle"], 1.0, [], False, (False, "hard_violation")),
        (["content_cycle"], None, [], True, (False, "hard_violation")),
        ([], 1.0, ["judge_error:step:http_5xx"], False, (False, "unjudged")),
        ([], None, ["judges_skipped:no_api_key"], False, (False, "unjudged")),
        ([], None, ["no_steps"], True, (False, "incomplete_evidence")),
        ([], None, ["rule_family_off:loop_guard"], True, (False, "incomplete_evidence")),
        ([], None, ["no_allowset:g"], True, (True, "structural_only")),  # holds the gate only
        ([], None, [], True, (True, "structural_only")),
        ([], None, [], False, (False, "unjudged")),
        ([], PASS_MARK - 0.01, [], False, (False, "below_pass_mark")),
        ([], PASS_MARK, [], False, (True, "passed")),
    ],
)
def test_the_decision_rule(hard: list[str], composite: float | None, missing: list[str],
                           structural: bool, expected: tuple[bool, str]) -> None:
    assert decide_run(hard, composite, missing, structural_only=structural) == expected


def _verdict(**fields: object) -> Verdict:
    base: dict[str, object] = {"run_id": "r", "passed": True, "composite": 0.82, "judged": True,
                               "prompt_version": "p", "reason": "passed"}
    return Verdict.model_validate({**base, **fields})


def test_escalation_is_applied_by_the_verdict_module() -> None:
    v = _verdict()
    assert is_borderline(v, BORDERLINE_MARGIN)
    assert not is_borderline(_verdict(composite=0.9))
    failed = apply_escalation(v, {"called": True, "panel": 3, "answered": 1, "errors": ["timeout"]})
    assert (failed.passed, failed.judged, failed.composite) == (False, False, None)
    assert failed.missing == ["judge_error:panel:timeout"]
    low = apply_escalation(v, {"called": True, "panel": 3, "answered": 3, "median": 0.7})
    assert (low.passed, low.composite, low.reason) == (False, 0.7, "panel:below_pass_mark")
    assert apply_escalation(v, {"called": False}) is v


def test_the_gate_decides_at_its_own_pass_rate() -> None:
    """The default threshold is GATE_PASS_RATE (0.80 of the runs passed), applied at its edge."""
    below = _verdict(run_id="r4", passed=False, composite=0.5, reason="below_pass_mark")
    four_of_five = [*(_verdict(run_id=f"r{i}") for i in range(4)), below]
    at_rate = decide(four_of_five, min_runs=1)
    assert (at_rate.decision, at_rate.pass_rate, at_rate.threshold) == ("PROMOTE", 0.8, GATE_PASS_RATE)
    assert GATE_PASS_RATE == 0.80
    assert decide(four_of_five[1:], min_runs=1).decision == "HOLD"  # 3 of 4: 0.75
    assert decide(four_of_five, min_runs=1, pass_rate=0.81).decision == "HOLD"
    assert decide(four_of_five, min_runs=1, pass_rate=0.75).decision == "PROMOTE"


@pytest.mark.parametrize(
    ("explicit", "metadata", "default", "expected"),
    [(1, 2, 3, 1), (None, 2, 3, 2), (None, None, 3, 3), (0, 2, 3, 0)],
)
def test_precedence_explicit_then_metadata_then_default(
    explicit: int | None, metadata: int | None, default: int, expected: int
) -> None:
    assert resolve(explicit, metadata, default) == expected


def test_policy_precedence_for_a_run() -> None:
    run = Trajectory(run_id="r", steps=messages(("a", "x")), metadata={"policy": "tool_agent"})
    plain = Trajectory(run_id="p", steps=messages(("a", "x")))
    settings = Settings.from_env({})
    explicit = Policy.workflow(window=7)
    default = Policy.workflow(window=9)
    assert policy_for(run, default, explicit, settings) == explicit
    assert policy_for(run, default, None, settings) == Policy.tool_agent()
    assert policy_for(plain, default, None, settings) == default


def test_settings_are_a_snapshot_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_LOOP_GUARD", "0")
    settings = Settings.from_env()
    monkeypatch.setenv("AGENT_EVAL_LOOP_GUARD", "1")
    assert not settings.loop_guard
    assert settings.rule_families_off() == ["rule_family_off:loop_guard"]
    assert settings.policy(Policy()).enabled is False
    assert Settings.from_env({"AGENT_EVAL_AUTOAPPROVE": "1"}).autoapprove
