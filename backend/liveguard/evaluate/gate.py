"""The release gate and the auto-approve check: where verdicts become decisions.

``decide(verdicts)`` decides over every run it is given. ``window=N`` (explicit, never a
default) narrows the decision to the last N runs: "the last N by start time" when every
run carries a readable ISO start time (``Verdict.start_time``, from the run's
``metadata.start_time``), else the last N in input order (``GateDecision.order`` says
which). The decision states the window, how many runs it covered (``runs``), how many
it left out (``left_out``) and which of those carry hard findings
(``left_out_hard_runs``). In this order:

* duplicate run ids or unreadable runs in the input → REFUSE (exit 2, naming them);
* any hard liveness violation in the window (a structural code: loops, stalls, illegal
  hops) → ROLLBACK;
* any run left out of the window with a hard finding → HOLD: a window never silences one;
* any missing evidence in the window (``Verdict.missing``: judges failed or skipped,
  no steps, a graph without an allow-set, a rule family switched off) → HOLD;
* fewer than ``min_runs`` runs → HOLD;
* pass rate ≥ ``pass_rate`` → PROMOTE, else HOLD.

``GateDecision.missing`` holds one human line per piece of missing evidence (judge scores
voided by a suspected evaluator injection and a failed embedder included); it is
computed here only, and ``liveguard gate`` and ``liveguard report`` print the same one.

``verdict_clears_autoapprove(verdict)`` fails closed: anything short of a judged,
error-free, passing verdict above the pass mark with no suspected evaluator injection,
with auto-approve switched on, is False.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from liveguard.core.evidence import (
    JUDGE_ERROR,
    JUDGE_VOID,
    JUDGES_SKIPPED,
    NO_ALLOWSET,
    NO_STEPS,
    RULE_FAMILY_OFF,
    MissingEvidence,
)
from liveguard.core.model import Verdict
from liveguard.evaluate.verdict import PASS_MARK

__all__ = [
    "EXIT_CODES",
    "GATE_PASS_RATE",
    "Decision",
    "GateDecision",
    "decide",
    "missing_lines",
    "verdict_clears_autoapprove",
]

GATE_PASS_RATE: Final = 0.80
"""The gate's default pass rate: the share of runs in the window that must pass.
A different concept from the judge pass mark, with its own constant."""

Decision = Literal["PROMOTE", "HOLD", "ROLLBACK", "REFUSE"]
EXIT_CODES: Final[Mapping[str, int]] = {"PROMOTE": 0, "HOLD": 3, "ROLLBACK": 4, "REFUSE": 2}
_FAMILY_FLAGS: Final[Mapping[str, str]] = {
    "loop_guard": "AGENT_EVAL_LOOP_GUARD=0",
    "trajectory_anomaly": "AGENT_EVAL_TRAJECTORY_ANOMALY=0",
}


class GateDecision(BaseModel):
    """A decision with the evidence behind it (run ids, codes and counts only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Decision
    runs: int
    """Runs the decision covered (the window's runs)."""
    window: int | None
    """The explicit window (the last N runs), or None: every run given."""
    min_runs: int
    threshold: float
    passed: int
    pass_rate: float | None
    order: Literal["start_time", "input"] = "input"
    structural_only: bool = False
    rollback_runs: list[str] = Field(default_factory=list)
    rollback_codes: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    """One human line per piece of missing evidence (the report's banner)."""
    total: int = 0
    """Runs given (scored verdicts), in the window or not."""
    left_out: int = 0
    """Runs given but outside the window."""
    left_out_hard_runs: list[str] = Field(default_factory=list)
    """Run ids outside the window with a hard finding (they hold the decision)."""
    unreadable: int = 0
    """Input runs that gave no verdict (they refuse the decision)."""

    def counts(self) -> dict[str, int]:
        """The decision's counts, by name (``gate --format json``)."""
        return {"given": self.total, "covered": self.runs, "passed": self.passed,
                "failed": self.runs - self.passed, "left_out": self.left_out,
                "left_out_with_hard_findings": len(self.left_out_hard_runs),
                "rollback": len(self.rollback_runs), "unreadable": self.unreadable}

    def window_line(self) -> str:
        """``window: all 120 runs``, or ``window: last 50 of 120 runs (covered: 50, left out: 70, ...)``."""
        if self.window is None:
            return f"window: all {self.total} runs"
        hard = len(self.left_out_hard_runs)
        return (f"window: last {self.window} of {self.total} runs (covered: {self.runs}, "
                f"left out: {self.left_out}, {hard} of them with hard findings)")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]


def _instant(text: str | None) -> float | None:
    """Seconds since the epoch of an ISO start time (naive = UTC), or None."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _ids(ids: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" (+{len(ids) - limit} more)" if len(ids) > limit else "")


def _evidence(verdict: Verdict) -> list[MissingEvidence]:
    """The verdict's missing evidence, typed (a copy made with ``model_copy(update=...)`` may hold text)."""
    return [MissingEvidence.parse(m) for m in verdict.missing]


def missing_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """One human line per kind of missing evidence over ``verdicts`` (codes, counts, ids)."""
    failed: dict[str, set[str]] = {}
    skipped: dict[str, set[str]] = {}
    no_steps: list[str] = []
    no_allow: dict[str, int] = {}
    families: set[str] = set()
    void: dict[str, list[str]] = {}
    other: dict[str, list[str]] = {}
    for v in verdicts:
        for m in _evidence(v):
            kind, detail = m.kind, m.detail
            if kind == JUDGE_ERROR:
                failed.setdefault(v.run_id, set()).add(detail)
            elif kind == JUDGES_SKIPPED:
                skipped.setdefault(detail, set()).add(v.run_id)
            elif kind == NO_STEPS:
                no_steps.append(v.run_id)
            elif kind == NO_ALLOWSET:
                no_allow[detail] = no_allow.get(detail, 0) + 1
            elif kind == RULE_FAMILY_OFF:
                families.add(detail)
            elif kind == JUDGE_VOID:
                void.setdefault(detail, []).append(v.run_id)
            else:  # semantic_unavailable, and any kind added later: never silently dropped
                other.setdefault(m, []).append(v.run_id)
    lines: list[str] = []
    if failed:
        codes = Counter(d for details in failed.values() for d in details)
        listed = ", ".join(f"{code} x{n}" for code, n in sorted(codes.items()))
        lines.append(f"judges failed: {len(failed)} run(s) unjudged (level:error {listed})")
    for why, ids in sorted(skipped.items()):
        lines.append(f"judges skipped ({why}): {len(ids)} run(s) unjudged")
    if no_steps:
        lines.append(f"no steps: {len(no_steps)} run(s) with no step recorded or recovered: "
                     f"{_ids(sorted(set(no_steps)))}")
    if no_allow:
        graphs = ", ".join(f"{g} ({n} run(s))" for g, n in sorted(no_allow.items()))
        lines.append(f"no allow-set: transition rules did not run for graph(s) {graphs}")
    for family in sorted(families):
        lines.append(f"rule family off: {family} ({_FAMILY_FLAGS.get(family, 'environment')})")
    for code, runs in sorted(void.items()):
        lines.append(f"judge scores void ({code}: the run's text addressed the evaluator): "
                     f"{len(runs)} run(s) unjudged: {_ids(sorted(set(runs)))}")
    for code, runs in sorted(other.items()):
        lines.append(f"missing evidence {code}: {len(set(runs))} run(s): {_ids(sorted(set(runs)))}")
    return lines


def decide(  # noqa: PLR0915 - one decision rule, read top to bottom
    verdicts: Sequence[Verdict],
    *,
    window: int | None = None,
    min_runs: int = 10,
    pass_rate: float = GATE_PASS_RATE,
    unreadable: Sequence[str] = (),
    duplicates: Sequence[str] = (),
) -> GateDecision:
    """PROMOTE / HOLD / ROLLBACK / REFUSE over every verdict, or the last ``window`` ones.

    ``unreadable`` names input runs that gave no verdict (``file:line``); ``duplicates``
    run ids seen more than once in the input (duplicates among ``verdicts`` are found
    here too). Either refuses the decision.
    """
    if (window is not None and window < 1) or min_runs < 0 or not 0.0 <= pass_rate <= 1.0:
        raise ValueError("window must be >= 1, min_runs >= 0 and pass_rate within [0, 1]")
    counts = Counter(v.run_id for v in verdicts)
    dupes = sorted(set(duplicates) | {rid for rid, n in counts.items() if n > 1})
    instants = [_instant(v.start_time) for v in verdicts]
    timed = bool(verdicts) and all(t is not None for t in instants)
    ordered = ([v for _, _, v in sorted(zip(instants, range(len(verdicts)), verdicts, strict=True),
                                        key=lambda x: (x[0], x[1]))]
               if timed else list(verdicts))
    recent = ordered if window is None else ordered[-window:]
    older = ordered[: len(ordered) - len(recent)]
    left_hard = [v.run_id for v in older if v.hard_codes]
    passed = sum(1 for v in recent if v.passed)
    rate = passed / len(recent) if recent else None
    rollback = [v for v in recent if v.liveness_codes]
    codes = sorted({c for v in rollback for c in v.liveness_codes})
    missing = missing_lines(recent)
    structural = bool(recent) and all(v.structural_only for v in recent)
    reasons: list[str] = []
    decision: Decision
    if dupes or unreadable:
        decision = "REFUSE"
        if dupes:
            reasons.append(f"duplicate run ids in the input: {_ids(dupes)}")
        if unreadable:
            reasons.append(f"{len(unreadable)} unreadable run(s): {_ids(list(unreadable))}")
    elif rollback:
        decision = "ROLLBACK"
        reasons.append(f"{len(rollback)} run(s) with hard liveness violations: {', '.join(codes)}")
    elif left_hard:
        decision = "HOLD"
        left_codes = sorted({c for v in older if v.hard_codes for c in v.hard_codes})
        reasons.append(f"{len(left_hard)} run(s) left out of the window (last {window}) with hard "
                       f"findings: {', '.join(left_codes)}: {_ids(left_hard)}")
    elif missing:
        decision = "HOLD"
        incomplete = sum(1 for v in recent if v.missing)
        unjudged = [v for v in recent if any(m.judge_gap for m in _evidence(v))]
        if unjudged:
            codes = sorted({m.error for v in unjudged for m in _evidence(v) if m.judge_gap})
            reasons.append(f"{len(unjudged)} unjudged run(s) in the window: {', '.join(codes)}")
        reasons.append(f"missing evidence on {incomplete} run(s) in the window (see below)")
    elif len(recent) < min_runs:
        decision = "HOLD"
        reasons.append(f"only {len(recent)} run(s) in the window; {min_runs} needed")
    elif rate is not None and rate >= pass_rate:
        decision = "PROMOTE"
        reasons.append(f"pass rate {rate:.2f} >= {pass_rate:.2f} over {len(recent)} runs")
    else:
        decision = "HOLD"
        reasons.append(f"pass rate {rate or 0.0:.2f} < {pass_rate:.2f} over {len(recent)} runs")
    if structural and decision != "REFUSE":
        reasons.append("structural only: judges not asked (--no-judges)")
    return GateDecision(
        decision=decision,
        runs=len(recent),
        window=window,
        min_runs=min_runs,
        threshold=pass_rate,
        passed=passed,
        pass_rate=rate,
        order="start_time" if timed else "input",
        structural_only=structural,
        rollback_runs=[v.run_id for v in rollback],
        rollback_codes=codes,
        reasons=reasons,
        missing=missing,
        total=len(ordered),
        left_out=len(older),
        left_out_hard_runs=left_hard,
        unreadable=len(unreadable),
    )


def verdict_clears_autoapprove(verdict: Verdict | None, *, enabled: bool) -> bool:
    """True only when a send may go out without a human. Fails closed on anything else.

    ``enabled`` is the auto-approve switch (``Settings.autoapprove``: ``AGENT_EVAL_AUTOAPPROVE=1``,
    read at the edge); this never reads the environment.
    """
    if not enabled:
        return False
    if verdict is None or not verdict.passed or verdict.hard_codes or verdict.missing:
        return False
    if not verdict.judged or verdict.judge_error or verdict.judges_skipped:
        return False
    if verdict.structural_only or ("escalation" in verdict.evidence and "median" not in (
        verdict.evidence["escalation"] or {}
    )):
        return False
    if any(v.code == "evaluator_injection_suspected" for v in verdict.violations):
        return False
    return verdict.composite is not None and verdict.composite >= PASS_MARK
