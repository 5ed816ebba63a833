"""Why a draft was not auto-approved: the reason codes a person and the pending index see."""

from __future__ import annotations

from liveguard.core.evidence import JUDGE_ERROR, JUDGES_SKIPPED, MissingEvidence, level_error
from liveguard.core.model import Verdict


def reasons_for(verdict: Verdict | None, cleared: bool, *, autoapprove: bool) -> list[str]:
    """Why a send was not auto-approved: codes only (empty when it was).

    ``autoapprove`` is the switch (``Settings.autoapprove``, read at the edge).
    """
    if cleared:
        return []
    from liveguard.evaluate.gate import verdict_clears_autoapprove

    reasons: list[str] = []
    if not autoapprove:
        reasons.append("autoapprove_off")
    if verdict is None:
        return [*reasons, "unjudged:no_verdict"]
    if verdict_clears_autoapprove(verdict, enabled=True):
        return reasons  # only the switch held it
    specific = len(reasons)
    reasons += [f"hard:{code}" for code in verdict.hard_codes]
    # Missing evidence, as the verdict names it (its text: ``kind:detail``) when it does.
    missing = [MissingEvidence.parse(m) for m in verdict.missing]  # a model_copy may hold text
    for m in missing:
        named = f"unjudged:{m.detail}" if m.kind == JUDGES_SKIPPED else str(m)
        if named != "unjudged:hard_violation" and named not in reasons:
            reasons.append(named)
    if not missing:
        if verdict.judges_skipped and verdict.judges_skipped != "hard_violation":
            reasons.append(f"unjudged:{verdict.judges_skipped}")
        elif not verdict.judged and not verdict.hard_codes:
            reasons.append(f"unjudged:{verdict.reason}")
        failed = sorted({s.level for s in verdict.levels.values() if level_error(s.reason) is not None})
        reasons += [str(MissingEvidence(JUDGE_ERROR, level)) for level in failed]
        if verdict.judge_error and not failed:
            reasons.append(JUDGE_ERROR)
    if not verdict.passed and len(reasons) == specific:
        reasons.append(f"not_passed:{verdict.reason}")
    if len(reasons) == specific:
        # Cleared nothing, yet no reason above: name the verdict's reason and soft codes.
        soft = sorted({v.code for v in verdict.violations if v.severity == "soft"})
        reasons += [f"soft:{code}" for code in soft] or [f"not_cleared:{verdict.reason}"]
    return reasons
