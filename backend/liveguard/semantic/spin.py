"""spin_check: the periodic judge (layer 3 of the defence).

Every ``policy.spin_check_every`` message steps (0: never periodically), and right after
a soft ``semantic_repeat``, one judge call through the judge client
(:class:`~liveguard.judges.JudgeClient`, ``trajectory`` level) asks whether the last rounds
spin in place. :class:`SpinTrigger` decides when (and stops for good once a hard finding
has fired: the run is already vetoed, a call would be waste); :func:`spin_check` asks;
:func:`spin_checks` replays a recorded run.

Evidence rule: the kill switch or a missing key means no request and a
``skipped:<why>`` score; a failed request is ``judge_error:<code>``. Both have
``score=None``: missing evidence, never a pass. Each answer is a
:class:`~liveguard.model.LevelScore` with its provenance (``source="spin_check:<model>"``,
prompt version, requests, trigger, the step indices asked about). The judge sees the
rounds' text; the recorded evidence holds only indices and codes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from liveguard.evidence import level_error_reason, level_skip_reason
from liveguard.model import LevelScore, Step, Violation
from liveguard.policy import Policy
from liveguard.semantic.text import text_of

if TYPE_CHECKING:
    from liveguard.judges import JudgeClient

__all__ = ["SPIN_CONFIRMS", "SPIN_TASK", "SpinTrigger", "spin_check", "spin_checks", "spin_confirmations"]

SPIN_TASK: Final = (
    "spin_check: these are the last rounds of an agent run. Do they spin in place (the same "
    "request, plan, complaint or draft again, perhaps in other words) or move the task forward? "
    "Score 1 when every round makes new progress, 0 when the rounds spin in place."
)
MAX_ROUND_CHARS: Final = 1_500
SPIN_CONFIRMS: Final = 0.5
"""A spin check after a soft ``semantic_repeat`` that scores below this says the run spins:
it confirms the suspicion, which becomes hard (:func:`spin_confirmations`)."""
Trigger = Literal["periodic", "soft_finding"]


class SpinTrigger:
    """When to ask: every K message steps, or after a soft semantic finding; never after a hard one."""

    def __init__(self, policy: Policy) -> None:
        self._every = policy.spin_check_every
        self._messages = 0
        self.stopped = False
        self.rounds: deque[tuple[int, str, str]] = deque(maxlen=policy.semantic_window)

    def observe(self, index: int, step: Step, violations: Sequence[Violation]) -> Trigger | None:
        """Feed each step with the violations the Monitor raised on it; return why to ask now."""
        if self.stopped:
            return None
        if any(v.hard for v in violations):
            self.stopped = True
            return None
        content = step.summary if step.summary is not None else step.output
        text = text_of(content) if step.tool is None and content is not None else None
        if text is None:
            return None
        self.rounds.append((index, step.node, text[:MAX_ROUND_CHARS]))
        self._messages += 1
        if any(v.code == "semantic_repeat" for v in violations):
            return "soft_finding"
        if self._every and self._messages % self._every == 0:
            return "periodic"
        return None


async def spin_check(
    gateway: JudgeClient, rounds: Iterable[tuple[int, str, str]], trigger: Trigger,
    finding: Violation | None = None,
) -> LevelScore:
    """One judge call about ``rounds`` ((index, node, text) triples); a LevelScore with provenance.
    ``finding`` is the soft ``semantic_repeat`` that triggered it (its step and node are kept)."""
    picked = list(rounds)
    evidence: dict[str, Any] = {"trigger": trigger, "steps": [i for i, _, _ in picked]}
    if finding is not None:
        evidence.update(finding_step=finding.step, finding_node=finding.node)
    skip = gateway.skip_reason
    if skip is not None:
        return LevelScore(level="trajectory", reason=level_skip_reason(skip), source="spin_check",
                          evidence=evidence)
    payload = {"task": SPIN_TASK,
               "rounds": [{"i": i, "node": node, "text": text} for i, node, text in picked]}
    result = await gateway.judge("trajectory", payload)
    evidence.update(requests=result.requests, prompt_version=result.prompt_version)
    source = f"spin_check:{result.model}"
    if result.error is not None:
        return LevelScore(level="trajectory", reason=level_error_reason(result.error), source=source,
                          evidence={**evidence, "error": result.error})
    return LevelScore(level="trajectory", score=result.score, confidence=result.confidence,
                      reason="judged", source=source, evidence=evidence)


async def spin_checks(
    steps: Sequence[Step], violations: Iterable[Violation], policy: Policy, gateway: JudgeClient
) -> list[LevelScore]:
    """Replay a recorded run: the spin checks a live guard would have made, in order."""
    by_step: dict[int, list[Violation]] = {}
    for v in violations:
        by_step.setdefault(v.step, []).append(v)
    trigger = SpinTrigger(policy)
    found: list[LevelScore] = []
    for index, step in enumerate(steps):
        here = by_step.get(index, [])
        why = trigger.observe(index, step, here)
        if why is not None:
            finding = next((v for v in here if v.code == "semantic_repeat"), None)
            found.append(await spin_check(gateway, trigger.rounds, why, finding))
    return found


def spin_confirmations(spins: Iterable[LevelScore]) -> list[Violation]:
    """The judge's confirmations: a hard ``semantic_repeat`` for each spin check that a soft
    ``semantic_repeat`` triggered and that scored below :data:`SPIN_CONFIRMS` (the run
    spins). A skipped or failed check confirms nothing (it is missing evidence already)."""
    found: list[Violation] = []
    for spin in spins:
        evidence = spin.evidence
        if spin.score is None or spin.score >= SPIN_CONFIRMS or "finding_step" not in evidence:
            continue
        found.append(Violation(
            code="semantic_repeat", severity="hard", step=int(evidence["finding_step"]),
            node=str(evidence.get("finding_node", "-")), count=1,
            detail={"confirmed": True, "confirmed_by": "spin_check", "score": spin.score,
                    "source": spin.source},
        ))
    return found
