"""spin_check: the judge that reads the evidence (layer 3 of the defence).

Right after a soft ``semantic_repeat`` (a suspicion: a message, or a tool call, that seems
to bring a state back), and every ``policy.spin_check_every`` message steps (0: never
periodically), one judge call through the judge client (:class:`~liveguard.evaluate.judges.JudgeClient`,
``trajectory`` level, with its own system prompt,
:data:`~liveguard.evaluate.judges.SPIN_CHECK_PROMPT`) asks one question: is the same state coming
back with nothing new in between? :class:`SpinTrigger` decides when (and stops for good once
a hard finding has fired: the run is already vetoed, a call would be waste);
:func:`spin_payload` builds what the judge reads; :func:`spin_check` asks;
:func:`spin_checks` replays a recorded run.

What the judge reads (:func:`spin_payload`): the run's task (the given one, else the first
user message); the suspected step; the step it matched (the finding's ``matched_step``, or
the first step of its chain for a tool call); and every step between them in order:
messages, tool calls with their arguments, tool results and errors, user messages. A
periodic check has no matched step: it reads the last ``semantic_window`` message steps and
everything between. Long texts are cut from the middle so that both ends stay (a page keeps
its heading and its last lines); when the steps between are too many for the prompt, the
middle ones are left out and counted (``omitted``). The prompt says that below
:data:`SPIN_CONFIRMS` confirms the repeat (the run stops once a state's return is confirmed
a second time, :attr:`~liveguard.core.policy.Policy.spin_hard_repeats`) and that a retry after a
new result is not a spin.

What an answer does (:func:`spin_confirmations`, :class:`SpinTally`): an answer below
:data:`SPIN_CONFIRMS` to a check a soft ``semantic_repeat`` triggered is a *judged spin*.
The judge confirms a state's return, never a first one alone: a judged spin is hard from
``policy.spin_hard_repeats`` (2) on, counting the suspicion's own count in its node's window
or the judged spins of its return (this one, and each earlier judged spin suspected inside
its stretch, at or after the step it matched), whichever is larger. A reworded repeat that
the judge calls a spin at its first suspicion is two occurrences (a converging wrap-up, a
re-run verification script, a re-asked refusal): hard only once the same state comes back
and is called a spin again (a second suspicion in its window, or a judged spin of another
node inside its stretch: a ping-pong), as the layer itself makes only the second suspicion
in a window hard. Two judged spins far apart, the second's stretch beginning after the first
was suspected, are two states each seen twice: no stop.
Once a judged spin is hard, :func:`spin_checks` asks no more (the run is vetoed).

Evidence rule: the kill switch or a missing key means no request and a
``skipped:<why>`` score; a failed request is ``judge_error:<code>``. Both have
``score=None``: missing evidence, never a pass. Each answer is a
:class:`~liveguard.core.model.LevelScore` with its provenance (``source="spin_check:<model>"``,
prompt version, requests, trigger, the step indices asked about). The judge sees the
steps' text; the recorded evidence holds only indices and codes.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from liveguard.core.evidence import level_error_reason, level_skip_reason
from liveguard.core.messages import is_user_input, tool_call_args, tool_call_name, tool_calls
from liveguard.core.model import LevelScore, Step, Violation
from liveguard.core.policy import Policy
from liveguard.core.semantic.text import text_of

if TYPE_CHECKING:
    from liveguard.evaluate.judges import JudgeClient

__all__ = [
    "SPIN_CONFIRMS", "SpinTally", "SpinTrigger", "cut_middle", "spin_check", "spin_checks",
    "spin_confirmations", "spin_payload",
]

SPIN_CONFIRMS: Final = 0.5
"""A spin check after a soft ``semantic_repeat`` that scores below this says the run spins:
it confirms the suspicion (a *judged spin*), which becomes hard from the policy's
``spin_hard_repeats``-th repeat on (:func:`spin_confirmations`). The prompt tells the judge
that below this stops the run."""
MAX_TASK_CHARS: Final = 2_000
"""The task, the suspected step and the matched step are each cut to this many characters."""
BETWEEN_CHARS: Final = 14_000
"""The texts of the steps between share this many characters ..."""
MIN_STEP_CHARS: Final = 240
MAX_STEP_CHARS: Final = 1_500
"""... each cut to between these many (from the middle); steps beyond what the share holds at
the least are left out from the middle of the stretch (and counted)."""
Trigger = Literal["periodic", "soft_finding"]
_CUT = " […{} characters cut…] "
_DEFAULT = Policy()


class SpinTrigger:
    """When to ask: after a soft semantic finding, or every K message steps; never after a hard one.

    ``messages`` holds the indices of the last ``semantic_window`` message steps (where a
    periodic check starts reading)."""

    def __init__(self, policy: Policy) -> None:
        self._every = policy.spin_check_every
        self._count = 0
        self.stopped = False
        self.messages: deque[int] = deque(maxlen=policy.semantic_window)

    def observe(self, index: int, step: Step, violations: Sequence[Violation]) -> Trigger | None:
        """Feed each step with the violations the Monitor raised on it; return why to ask now."""
        if self.stopped:
            return None
        if any(v.hard for v in violations):
            self.stopped = True
            return None
        message = step.tool is None and _text(step) is not None
        if message:
            self.messages.append(index)
            self._count += 1
        if any(v.code == "semantic_repeat" for v in violations):
            return "soft_finding"
        if message and self._every and self._count % self._every == 0:
            return "periodic"
        return None


def cut_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters from the middle: its start and its end stay."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(_CUT.format(len(text))))
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + _CUT.format(len(text) - keep) + (text[-tail:] if tail else "")


def _text(step: Step) -> str | None:
    content = step.summary if step.summary is not None else step.output
    return text_of(content) if content is not None else None


def _data(value: Any) -> str:
    """A tool's arguments, result or error as the judge reads it: text as is, data as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return json.dumps(value, ensure_ascii=False, default=str)


def _render(index: int, step: Step, limit: int) -> dict[str, Any]:
    """One step as the judge reads it: its index and node; a message's text; a tool call's
    tool, arguments, result and error; a request's tool calls (name and arguments)."""
    item: dict[str, Any] = {"i": index, "node": step.node}
    if is_user_input(step):
        item["user"] = True
    if step.tool is not None:
        item["tool"] = step.tool
        parts = [("args", step.args), ("result", step.result), ("error", step.error)]
        present = [(k, _data(v)) for k, v in parts if v is not None]
        share = max(MIN_STEP_CHARS // 2, limit // max(1, len(present)))
        for key, data in present:
            item[key] = cut_middle(data, share)
        return item
    text = _text(step)
    if text is not None:
        item["text"] = cut_middle(text, limit)
    calls = tool_calls(step.output)
    if calls:
        item["calls"] = [{"tool": tool_call_name(c), "args": cut_middle(_data(tool_call_args(c, {})), limit)}
                         for c in calls[:8]]
    return item


def task_of(steps: Sequence[Step]) -> str | None:
    """The run's task as the user gave it: the first user message's text (None when none)."""
    for step in steps:
        if is_user_input(step):
            text = _text(step)
            if text is not None:
                return text
    return None


def spin_payload(
    steps: Sequence[Step], suspected: int, matched: int | None, *, task: str | None = None,
) -> tuple[dict[str, Any], list[int]]:
    """(what the judge reads, the step indices it reads): ``agent_task``, the run's task; and
    ``steps``, in order: the ``matched`` step (``"mark": "matched"``), every step between, the
    ``suspected`` step (``"mark": "suspected"``); ``steps_left_out``: how many steps between
    were left out from the middle (module docstring). The keys sort in reading order (the
    judges' payload is sorted-key JSON)."""
    text = task if task is not None else task_of(steps)
    ordered: list[dict[str, Any]] = []
    sent: list[int] = []
    start = suspected
    if matched is not None and 0 <= matched < suspected:
        ordered.append({"mark": "matched", **_render(matched, steps[matched], MAX_TASK_CHARS)})
        sent.append(matched)
        start = matched
    between = list(range(start + 1, suspected))
    omitted = 0
    most = BETWEEN_CHARS // MIN_STEP_CHARS
    if len(between) > most:  # keep both ends of the stretch; count what is left out
        omitted = len(between) - most
        between = between[: most // 2] + between[len(between) - (most - most // 2):]
    limit = max(MIN_STEP_CHARS, min(MAX_STEP_CHARS, BETWEEN_CHARS // max(1, len(between))))
    ordered += [_render(i, steps[i], limit) for i in between]
    ordered.append({"mark": "suspected", **_render(suspected, steps[suspected], MAX_TASK_CHARS)})
    payload: dict[str, Any] = {
        "agent_task": cut_middle(text, MAX_TASK_CHARS) if text is not None else None, "steps": ordered}
    if omitted:
        payload["steps_left_out"] = omitted
    sent += [*between, suspected]
    return payload, sent


async def spin_check(
    gateway: JudgeClient, steps: Sequence[Step], index: int, trigger: Trigger,
    finding: Violation | None = None, *, since: int | None = None, task: str | None = None,
) -> LevelScore:
    """One judge call about step ``index`` of ``steps``: a LevelScore with provenance.
    ``finding`` is the soft ``semantic_repeat`` that triggered it (its step, node and the
    step it matched are kept); ``since``: where a periodic check starts reading."""
    matched = matched_step(finding) if finding is not None else since
    payload, sent = spin_payload(steps, index, matched, task=task)
    evidence: dict[str, Any] = {"trigger": trigger, "steps": sent}
    if finding is not None:
        evidence.update(finding_step=finding.step, finding_node=finding.node, finding_count=finding.count)
        if matched is not None:
            evidence["matched_step"] = matched
    if "steps_left_out" in payload:
        evidence["omitted"] = payload["steps_left_out"]
    skip = gateway.skip_reason
    if skip is not None:
        return LevelScore(level="trajectory", reason=level_skip_reason(skip), source="spin_check",
                          evidence=evidence)
    result = await gateway.judge("trajectory", payload, check="spin_check")
    evidence.update(requests=result.requests, prompt_version=result.prompt_version)
    source = f"spin_check:{result.model}"
    if result.error is not None:
        return LevelScore(level="trajectory", reason=level_error_reason(result.error), source=source,
                          evidence={**evidence, "error": result.error})
    return LevelScore(level="trajectory", score=result.score, confidence=result.confidence,
                      reason="judged", source=source, evidence=evidence)


def matched_step(finding: Violation) -> int | None:
    """The step a suspicion matched: ``matched_step``, else the first of its chain (``steps``)."""
    detail: Mapping[str, Any] = finding.detail
    matched = detail.get("matched_step")
    if isinstance(matched, int):
        return matched
    chain = detail.get("steps")
    if isinstance(chain, list) and chain and isinstance(chain[0], int):
        return int(chain[0])
    return None


async def spin_checks(
    steps: Sequence[Step], violations: Iterable[Violation], policy: Policy, gateway: JudgeClient,
    *, task: str | None = None,
) -> list[LevelScore]:
    """Replay a recorded run: the spin checks a live guard would have made, in order.
    ``task``: the run's task (default: its first user message)."""
    by_step: dict[int, list[Violation]] = {}
    for v in violations:
        by_step.setdefault(v.step, []).append(v)
    trigger = SpinTrigger(policy)
    tally = SpinTally(policy)
    found: list[LevelScore] = []
    for index, step in enumerate(steps):
        here = by_step.get(index, [])
        why = trigger.observe(index, step, here)
        if why is None:
            continue
        finding = next((v for v in here if v.code == "semantic_repeat"), None)
        since = trigger.messages[0] if finding is None and trigger.messages else None
        spin = await spin_check(gateway, steps, index, why, finding, since=since, task=task)
        found.append(spin)
        if tally.add(spin) is not None:  # a judged spin is hard: the run is vetoed, ask no more
            trigger.stopped = True
    return found


class SpinTally:
    """The judge's confirmations, one spin check at a time, in the run's order (module docstring).

    :meth:`add` returns the hard ``semantic_repeat`` a spin check makes, or None: a check
    triggered by a soft ``semantic_repeat`` that scored below :data:`SPIN_CONFIRMS` is a
    judged spin; it is hard when ``max(its suspicion's count, the judged spins of its
    return)`` reaches ``policy.spin_hard_repeats``. The judged spins of a return are this one
    and every earlier judged spin suspected inside its stretch (at or after the step it
    matched): the same state coming back, in one node or across the nodes of a cycle (a
    reviewer and a coder trading the same complaint). Two judged spins far apart, each about
    a stretch that ended before the other began, are two states each seen twice, not one
    seen three times. A skipped or failed check (``score`` None) is missing evidence
    already: it counts neither as a spin nor as a pass. A check without its suspicion's
    count (recorded before it was kept) counts as a first suspicion; one without the step
    it matched links to every earlier judged spin (as it was read when recorded)."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.needed = (policy or _DEFAULT).spin_hard_repeats
        self._suspected: list[int] = []  # the suspected step of each judged spin so far

    @property
    def spins(self) -> int:
        """The judged spins so far."""
        return len(self._suspected)

    def add(self, spin: LevelScore) -> Violation | None:
        evidence = spin.evidence
        if spin.score is None or spin.score >= SPIN_CONFIRMS or "finding_step" not in evidence:
            return None
        step = int(evidence["finding_step"])
        matched = evidence.get("matched_step")
        start = matched if isinstance(matched, int) and not isinstance(matched, bool) else None
        linked = 1 + sum(1 for earlier in self._suspected if start is None or earlier >= start)
        self._suspected.append(step)
        count = evidence.get("finding_count")
        own = count if isinstance(count, int) and not isinstance(count, bool) else 1
        repeats = max(own, linked)
        if repeats < self.needed:
            return None
        return Violation(
            code="semantic_repeat", severity="hard", step=step,
            node=str(evidence.get("finding_node", "-")), count=repeats,
            detail={"confirmed": True, "confirmed_by": "spin_check", "score": spin.score,
                    "source": spin.source, "judged_spins": linked, "finding_count": own,
                    "needed": self.needed},
        )


def spin_confirmations(spins: Iterable[LevelScore], policy: Policy | None = None) -> list[Violation]:
    """The judge's confirmations: a hard ``semantic_repeat`` for each judged spin (a spin check
    that a soft ``semantic_repeat`` triggered and that scored below :data:`SPIN_CONFIRMS`)
    from ``policy.spin_hard_repeats`` on (:class:`SpinTally`; default policy: 2). A skipped
    or failed check confirms nothing (it is missing evidence already)."""
    tally = SpinTally(policy)
    return [v for v in map(tally.add, spins) if v is not None]
