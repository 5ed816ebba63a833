"""The release gate and the auto-approve check: where verdicts become decisions.

``decide(verdicts)`` looks at the last ``window`` runs:

* any hard liveness violation (a structural code: loops, stalls, illegal hops) → ROLLBACK;
* pass rate ≥ ``pass_rate`` with at least ``min_runs`` runs → PROMOTE;
* otherwise → HOLD.

``verdict_clears_autoapprove(verdict)`` fails closed: anything short of a judged,
error-free, passing verdict above the pass mark, with ``AGENT_EVAL_AUTOAPPROVE=1``,
is False.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from liveguard.model import Verdict

__all__ = [
    "CELL_PASS",
    "EXIT_CODES",
    "Decision",
    "GateDecision",
    "decide",
    "verdict_clears_autoapprove",
]

CELL_PASS: Final = 0.80
"""The judge pass mark: a composite below it fails."""

Decision = Literal["PROMOTE", "HOLD", "ROLLBACK"]
EXIT_CODES: Final[Mapping[str, int]] = {"PROMOTE": 0, "HOLD": 3, "ROLLBACK": 4}


class GateDecision(BaseModel):
    """A decision with the evidence behind it (run ids, codes and counts only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Decision
    runs: int
    window: int
    min_runs: int
    threshold: float
    passed: int
    pass_rate: float | None
    rollback_runs: list[str] = Field(default_factory=list)
    rollback_codes: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]


def decide(
    verdicts: Sequence[Verdict],
    *,
    window: int = 50,
    min_runs: int = 10,
    pass_rate: float = CELL_PASS,
) -> GateDecision:
    """PROMOTE / HOLD / ROLLBACK over the last ``window`` verdicts (input order is run order)."""
    if window < 1 or min_runs < 0 or not 0.0 <= pass_rate <= 1.0:
        raise ValueError("window must be >= 1, min_runs >= 0 and pass_rate within [0, 1]")
    recent = list(verdicts)[-window:]
    passed = sum(1 for v in recent if v.passed)
    rate = passed / len(recent) if recent else None
    rollback = [v for v in recent if v.liveness_codes]
    codes = sorted({c for v in rollback for c in v.liveness_codes})
    reasons: list[str] = []
    if rollback:
        decision: Decision = "ROLLBACK"
        reasons.append(f"{len(rollback)} run(s) with hard liveness violations: {', '.join(codes)}")
    elif len(recent) < min_runs:
        decision = "HOLD"
        reasons.append(f"only {len(recent)} run(s) in the window; {min_runs} needed")
    elif rate is not None and rate >= pass_rate:
        decision = "PROMOTE"
        reasons.append(f"pass rate {rate:.2f} >= {pass_rate:.2f} over {len(recent)} runs")
    else:
        decision = "HOLD"
        reasons.append(f"pass rate {rate or 0.0:.2f} < {pass_rate:.2f} over {len(recent)} runs")
    return GateDecision(
        decision=decision,
        runs=len(recent),
        window=window,
        min_runs=min_runs,
        threshold=pass_rate,
        passed=passed,
        pass_rate=rate,
        rollback_runs=[v.run_id for v in rollback],
        rollback_codes=codes,
        reasons=reasons,
    )


def verdict_clears_autoapprove(
    verdict: Verdict | None, env: Mapping[str, str] | None = None
) -> bool:
    """True only when a send may go out without a human. Fails closed on anything else."""
    env = os.environ if env is None else env
    if env.get("AGENT_EVAL_AUTOAPPROVE", "").strip() != "1":
        return False
    if verdict is None or not verdict.passed or verdict.hard_codes:
        return False
    if not verdict.judged or verdict.judge_error or verdict.judges_skipped:
        return False
    return verdict.composite is not None and verdict.composite >= CELL_PASS
