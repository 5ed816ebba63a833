"""Release gate decisions and the fail-closed auto-approve check."""

from __future__ import annotations

import pytest

from liveguard import Violation
from liveguard.core.model import Verdict
from liveguard.evaluate.gate import EXIT_CODES, decide, verdict_clears_autoapprove
from liveguard.settings import Settings

ON = {"AGENT_EVAL_AUTOAPPROVE": "1"}


def verdict(run_id: str = "r", *, passed: bool = True, codes: tuple[str, ...] = (),
            composite: float | None = 0.9, judged: bool = True, judge_error: bool = False,
            skipped: str | None = None) -> Verdict:
    violations = [Violation(code=c, severity="hard", step=0, node="n", count=1) for c in codes]
    return Verdict(run_id=run_id, passed=passed and not codes, composite=composite,
                   violations=violations, judged=judged, judge_error=judge_error,
                   judges_skipped=skipped, prompt_version="t", reason="x")


def test_any_liveness_violation_rolls_back() -> None:
    runs = [verdict(f"ok{i}") for i in range(20)] + [verdict("loop", codes=("content_cycle",))]
    got = decide(runs, min_runs=5)
    assert got.decision == "ROLLBACK"
    assert got.rollback_runs == ["loop"]
    assert got.rollback_codes == ["content_cycle"]
    assert got.exit_code == 4


def test_promote_needs_pass_rate_and_min_runs() -> None:
    runs = [verdict(f"r{i}") for i in range(9)] + [verdict("bad", passed=False, composite=0.5)]
    assert decide(runs, min_runs=10, pass_rate=0.8).decision == "PROMOTE"
    assert decide(runs, min_runs=11, pass_rate=0.8).decision == "HOLD"
    assert decide(runs, min_runs=10, pass_rate=0.95).decision == "HOLD"
    assert decide([], min_runs=0).decision == "HOLD"


def test_window_keeps_only_the_last_runs() -> None:
    runs = [verdict("old", passed=False, composite=0.1)] + [verdict(f"r{i}") for i in range(10)]
    windowed = decide(runs, window=10, min_runs=10, pass_rate=1.0)
    assert (windowed.decision, windowed.runs, windowed.left_out, windowed.total) == ("PROMOTE", 10, 1, 11)
    assert windowed.left_out_hard_runs == []  # a judged failure is not a hard finding
    assert decide(runs, window=11, min_runs=10, pass_rate=1.0).decision == "HOLD"


def test_by_default_the_gate_decides_over_every_run() -> None:
    """2,575 looping runs among 50,000 used to PROMOTE: the default window was the last 50."""
    runs = [verdict("loop", codes=("content_cycle",))] + [verdict(f"r{i}") for i in range(60)]
    got = decide(runs, min_runs=10)
    assert (got.decision, got.window, got.runs, got.left_out, got.total) == ("ROLLBACK", None, 61, 0, 61)
    assert got.rollback_runs == ["loop"]
    assert got.window_line() == "window: all 61 runs"


def test_runs_left_out_with_hard_findings_hold_and_are_counted() -> None:
    runs = ([verdict("old-loop", codes=("content_cycle",)), verdict("old-hop", codes=("illegal_transition",))]
            + [verdict(f"r{i}") for i in range(50)])
    got = decide(runs, window=50, min_runs=10)
    assert got.decision == "HOLD"
    assert (got.runs, got.left_out, got.total) == (50, 2, 52)
    assert got.left_out_hard_runs == ["old-loop", "old-hop"]
    assert "2 run(s) left out of the window (last 50) with hard findings" in got.reasons[0]
    assert got.window_line() == ("window: last 50 of 52 runs (covered: 50, left out: 2, "
                                 "2 of them with hard findings)")
    assert got.counts() == {"given": 52, "covered": 50, "passed": 50, "failed": 0, "left_out": 2,
                            "left_out_with_hard_findings": 2, "rollback": 0, "unreadable": 0}
    # A hard finding inside the window still rolls back; the left-out ones are still counted.
    inside = decide([*runs, verdict("new-loop", codes=("no_progress_stall",))], window=50, min_runs=10)
    assert inside.decision == "ROLLBACK"
    assert len(inside.left_out_hard_runs) == 2


def test_judge_only_failures_hold_not_rollback() -> None:
    runs = [verdict(f"r{i}", passed=False, composite=0.4) for i in range(10)]
    assert decide(runs, min_runs=1).decision == "HOLD"


def test_exit_codes() -> None:
    assert dict(EXIT_CODES) == {"PROMOTE": 0, "HOLD": 3, "ROLLBACK": 4, "REFUSE": 2}
    with pytest.raises(ValueError, match="window"):
        decide([], window=0)


@pytest.mark.parametrize(
    ("v", "env", "expected"),
    [
        (verdict(), ON, True),
        (verdict(), {}, False),
        (verdict(), {"AGENT_EVAL_AUTOAPPROVE": "true"}, False),
        (verdict(codes=("repeated_content",)), ON, False),
        (verdict(judged=False, composite=None), ON, False),
        (verdict(judge_error=True), ON, False),
        (verdict(skipped="kill_switch"), ON, False),
        (verdict(composite=0.79), ON, False),
        (verdict(composite=0.80), ON, True),
        (None, ON, False),
    ],
)
def test_autoapprove_fails_closed(v: Verdict | None, env: dict[str, str], expected: bool) -> None:
    assert verdict_clears_autoapprove(v, enabled=Settings.from_env(env).autoapprove) is expected
