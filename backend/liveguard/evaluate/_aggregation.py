"""The ``aggregate`` node's pure core: every guard's telemetry and every judge's score into one
:class:`~liveguard.core.model.Verdict`, through :func:`liveguard.evaluate.verdict.decide_run`.

The eval graph's nodes read and write a plain state dict (see :mod:`liveguard.evaluate.eval_graph`:
guards write under ``graph_meta["telemetry"][<guard>]``, judges under ``scores[<level>]``);
these functions only read it. They live apart from the graph's wiring: pure functions over
plain data, run once per scored run, testable without LangGraph.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from liveguard.core._monitor import check_trajectory
from liveguard.core.evidence import (
    JUDGE_ERROR,
    JUDGE_VOID,
    JUDGES_SKIPPED,
    NO_ALLOWSET,
    NO_STEPS,
    RULE_FAMILY_OFF,
    SEMANTIC_UNAVAILABLE,
    MissingEvidence,
    level_error,
    level_skip,
)
from liveguard.core.model import LevelScore, Trajectory, Verdict, Violation
from liveguard.core.policy import Policy
from liveguard.evaluate.judges import PROMPT_VERSION
from liveguard.evaluate.verdict import VOIDING_CODES, decide_run

__all__ = ["GUARDS", "build_verdict", "dump_violations", "findings", "hard_so_far", "merge_meta",
           "missing_evidence", "telemetry_of"]

GUARDS = ("loop_guard", "trajectory_anomaly", "detect_defects")
"""The structural guards, in the graph's order; each writes its own telemetry key."""

State = Mapping[str, Any]
"""The eval graph's state (``liveguard.evaluate.eval_graph.EvalState``), read-only here."""


def merge_meta(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Reducer for ``graph_meta`` and ``scores``: merge key-wise, ``telemetry`` one level deeper.

    Two guards writing ``{"telemetry": {"loop_guard": ...}}`` and
    ``{"telemetry": {"detect_defects": ...}}`` both survive.
    """
    out = dict(left) if left else {}
    if not right:
        return out
    for key, value in right.items():
        if key == "telemetry" and (type(value) is dict or isinstance(value, Mapping)):
            inner = out.get(key)
            merged = dict(inner) if inner else {}
            merged.update(value)
            out[key] = merged
        else:
            out[key] = value
    return out


def telemetry_of(state: State) -> Mapping[str, Any]:
    """The guards' telemetry, read-only (nodes return new dicts; they never mutate state)."""
    return (state.get("graph_meta") or _EMPTY).get("telemetry") or _EMPTY


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def findings(state: State, guard: str) -> list[Violation]:
    return [Violation.model_validate(v) for v in telemetry_of(state).get(guard, {}).get("violations", [])]


def hard_so_far(state: State) -> list[str]:
    return sorted({v.code for g in GUARDS for v in findings(state, g) if v.severity == "hard"})


def dump_violations(violations: Iterable[Violation]) -> list[dict[str, Any]]:
    return [v.model_dump() for v in violations]


def missing_evidence(state: State, scores: Mapping[str, LevelScore], structural_only: bool,
             use_anomaly: bool) -> list[MissingEvidence]:
    """Every piece of missing evidence for this run (typed; its text is ``kind:detail``)."""
    run = state["trajectory"]
    telemetry = telemetry_of(state)
    missing: list[MissingEvidence] = []
    if not run.steps:
        missing.append(MissingEvidence(NO_STEPS))
    planned = set(state.get("levels") or [])
    for level, s in sorted(scores.items()):
        if level not in planned:
            continue
        why = level_skip(s.reason)
        if level_error(s.reason) is not None:
            missing.append(MissingEvidence.judge_error(level, s.evidence.get("error")))
        elif why is not None and why != "hard_violation":
            skipped = MissingEvidence(JUDGES_SKIPPED, why)
            if skipped not in missing:
                missing.append(skipped)
    anomaly_judge = telemetry.get("trajectory_anomaly", {}).get("judge")
    if anomaly_judge and level_error(str(anomaly_judge.get("reason", ""))) is not None:
        error = (anomaly_judge.get("evidence") or {}).get("error")
        missing.append(MissingEvidence.judge_error("anomaly", error))
    for spin in telemetry.get("detect_defects", {}).get("spin_checks", []):
        if level_error(str(spin.get("reason", ""))) is not None:
            error = (spin.get("evidence") or {}).get("error")
            missing.append(MissingEvidence.judge_error("spin_check", error))
    for v in telemetry.get("loop_guard", {}).get("violations", []):
        code = v.get("code")
        if code == SEMANTIC_UNAVAILABLE:
            missing.append(MissingEvidence(SEMANTIC_UNAVAILABLE, str((v.get("detail") or {}).get("reason"))))
        elif code in VOIDING_CODES and not structural_only:
            void = MissingEvidence(JUDGE_VOID, code)
            if void not in missing:
                # the run's text addressed the evaluator: a judge that read it may have obeyed
                missing.append(void)
    if state.get("allowsets_in_use") and state.get("allow_set") is None:
        missing.append(MissingEvidence(NO_ALLOWSET, run.graph or "-"))
    if not telemetry.get("loop_guard", {}).get("enabled", True):
        missing.append(MissingEvidence(RULE_FAMILY_OFF, "loop_guard"))
    if not use_anomaly and not structural_only:
        missing.append(MissingEvidence(RULE_FAMILY_OFF, "trajectory_anomaly"))
    return missing


def loop_guard_update(state: State) -> dict[str, Any]:
    """``loop_guard``'s update: one Monitor over the run, every rule family, the step text
    scanned; its findings as plain data under ``telemetry["loop_guard"]``."""
    allow = state.get("allow_set")
    policy = _scanning(state.get("policy") or _DEFAULT_POLICY)
    steps = state["trajectory"].steps
    found = check_trajectory(steps, policy, allow)
    report = {
        "violations": dump_violations(found),
        "steps": len(steps),
        "enabled": policy.enabled,
        "allow_set": allow is not None,
    }
    return {"graph_meta": {"telemetry": {"loop_guard": report}}}


def aggregate_update(state: State, gate_model: str | None, structural_only: bool) -> dict[str, Any]:
    """``aggregate``'s update: the verdict, and its violations (the only writer of both)."""
    verdict = build_verdict(state, gate_model=gate_model, structural_only=structural_only)
    return {"violations": list(verdict.violations), "verdict": verdict}


_DEFAULT_POLICY = Policy()
_SCANNING: dict[int, tuple[Policy, Policy]] = {}


def _scanning(policy: Policy) -> Policy:
    """``policy`` with ``scan_text`` on (the judges' guard: every evaluation scans step text).

    One copy per policy object (a batch uses a handful), kept with its original so the id
    is never reused while cached."""
    if policy.scan_text:
        return policy
    hit = _SCANNING.get(id(policy))
    if hit is not None and hit[0] is policy:
        return hit[1]
    copy = policy.model_copy(update={"scan_text": True})
    if len(_SCANNING) >= 64:
        _SCANNING.clear()
    _SCANNING[id(policy)] = (policy, copy)
    return copy


def _order(v: Violation) -> tuple[int, str]:
    return (v.step, v.code)


def _start_time(run: Trajectory) -> str | None:
    value = (run.metadata or {}).get("start_time")
    return value if isinstance(value, str) and value else None


def build_verdict(
    state: State, gate_model: str | None = None, *, structural_only: bool = False
) -> Verdict:
    """aggregate's pure core: re-collect every guard's telemetry and the judges' scores."""
    run = state["trajectory"]
    telemetry = telemetry_of(state)
    found = {g: findings(state, g) for g in GUARDS}  # once: each re-validates its violations
    violations = [v for g in GUARDS for v in found[g]]
    scores = dict(state.get("scores") or {})
    anomaly_judge = telemetry.get("trajectory_anomaly", {}).get("judge")
    extra = [LevelScore.model_validate(anomaly_judge)] if anomaly_judge else []
    spins = [LevelScore.model_validate(s) for s in telemetry.get("detect_defects", {}).get("spin_checks", [])]
    extra += spins
    if spins:  # the judge confirms a soft semantic_repeat: hard from the policy's spin_hard_repeats
        from liveguard.evaluate.spin import spin_confirmations

        violations += spin_confirmations(spins, state.get("policy"))
    for level_score in [*scores.values(), *extra]:
        if level_error(level_score.reason) is not None:
            violations.append(Violation(
                code="judge_error", severity="soft", step=0, node=level_score.level, count=1,
                detail={"level": level_score.level, "error": level_score.evidence.get("error")},
            ))
    if len(violations) > 1:
        violations.sort(key=_order)
    use_anomaly = bool(telemetry.get("plan_levels", {}).get("anomaly", True))
    missing = missing_evidence(state, scores, structural_only, use_anomaly)
    judged_scores: list[float] = []
    confidences: list[float] = []
    skipped_reasons: set[str] = set()
    for s in scores.values():  # one pass over the levels
        if s.score is not None:
            judged_scores.append(s.score)
        if s.confidence is not None:
            confidences.append(s.confidence)
        why = level_skip(s.reason)
        if why is not None and why != "not_planned":
            skipped_reasons.add(why)
    complete = bool(judged_scores) and not any(m.kind in (JUDGE_ERROR, JUDGE_VOID) for m in missing)
    composite = sum(judged_scores) / len(judged_scores) if complete else None
    partial = sum(judged_scores) / len(judged_scores) if judged_scores and not complete else None
    skipped = sorted(skipped_reasons)
    hard_set: set[str] = set()
    soft_set: set[str] = set()
    step_set: set[int] = set()
    judge_error = False
    for v in violations:  # one pass over the findings
        (hard_set if v.severity == "hard" else soft_set).add(v.code)  # Severity: hard | soft
        step_set.add(v.step)
        judge_error = judge_error or v.code == "judge_error"
    hard = sorted(hard_set)
    passed, reason = decide_run(hard, composite, missing, structural_only=structural_only)
    evidence: dict[str, Any] = {
        "hard_codes": hard,
        "soft_codes": sorted(soft_set),
        "steps": sorted(step_set),
        "counts": {g: len(found[g]) for g in GUARDS},
        "levels": sorted(scores),
        "steps_total": len(run.steps),
    }
    if partial is not None:
        evidence["partial_composite"] = partial
    if spins:
        evidence["spin_checks"] = [
            {"score": s.score, "reason": s.reason, "source": s.source, **s.evidence} for s in spins
        ]
    # Verdict(...) without BaseModel.__init__'s own overhead: the same validation, the same model
    verdict: Verdict = Verdict.__pydantic_validator__.validate_python({
        "run_id": run.run_id,
        "graph": run.graph,
        "passed": passed,
        "composite": composite,
        "violations": violations,
        "levels": scores,
        "judged": complete,
        "judges_skipped": (skipped[0] if skipped and not judged_scores
                        else "structural_only" if structural_only else None),
        "judge_error": judge_error,
        "structural_only": structural_only,
        "missing": missing,
        "start_time": _start_time(run),
        "prompt_version": PROMPT_VERSION,
        "confidence": min(confidences) if confidences else (1.0 if hard else None),
        "reason": reason,
        "source": "eval_graph" + (f":{gate_model}" if gate_model else ""),
        "evidence": evidence,
    })
    return verdict
