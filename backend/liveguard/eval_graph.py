"""The agent-eval StateGraph: structural guards first, LLM judges second, one writer of the verdict.

Topology (exactly)::

    START → plan_levels → loop_guard → step_eval → trajectory_eval → outcome_gate
          → trajectory_anomaly → detect_defects → aggregate → escalate_borderline → END

State and the single-writer rule. LangGraph silently drops keys a node returns that
are not declared channels, and two nodes writing one plain channel clobber each other.
So guards never write ``violations``: each writes its findings under its own key of
``graph_meta["telemetry"]``, a channel whose reducer merges key-wise. Judges write their
level under their own key of ``scores`` (also merged key-wise). ``aggregate`` is the
only writer of ``violations`` and ``verdict``. ``escalate_borderline`` writes only its
panel result to ``escalation``; :func:`apply_escalation` folds that into the returned
verdict, so the pass rule lives in one function (:func:`_decide`).

Cost: once ``loop_guard`` has a hard violation, no judge is called (the run costs zero
tokens); with ``LLM_KILL_SWITCH=1`` or no key, no judge is called anywhere and the
verdict says why. Evidence is codes, counts and step indices only.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from liveguard.allowset import AllowSet
from liveguard.model import Level, LevelScore, Trajectory, Verdict, Violation
from liveguard.monitor import check_trajectory
from liveguard.policy import Policy
from liveguard.rules.build import TRANSITION_CODES

if TYPE_CHECKING:
    from liveguard.judges import Gateway, JudgeResult

__all__ = [
    "EvalState",
    "aevaluate_many",
    "aevaluate_trajectory",
    "apply_escalation",
    "build_eval_graph",
    "evaluate_trajectory",
    "merge_meta",
]

log = logging.getLogger("liveguard.eval")

NODES = (
    "plan_levels",
    "loop_guard",
    "step_eval",
    "trajectory_eval",
    "outcome_gate",
    "trajectory_anomaly",
    "detect_defects",
    "aggregate",
    "escalate_borderline",
)
GUARDS = ("loop_guard", "trajectory_anomaly", "detect_defects")
JUDGE_NODES: Mapping[str, Level] = {
    "step_eval": "step",
    "trajectory_eval": "trajectory",
    "outcome_gate": "outcome",
}
MAX_STEPS_TO_JUDGE = 200
MAX_FIELD_CHARS = 2_000


def merge_meta(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> dict[str, Any]:
    """Reducer for ``graph_meta`` and ``scores``: merge key-wise, ``telemetry`` one level deeper.

    Two guards writing ``{"telemetry": {"loop_guard": ...}}`` and
    ``{"telemetry": {"detect_defects": ...}}`` both survive.
    """
    out = dict(left or {})
    for key, value in (right or {}).items():
        if key == "telemetry" and isinstance(value, Mapping):
            out[key] = {**out.get(key, {}), **value}
        else:
            out[key] = value
    return out


class EvalState(TypedDict, total=False):
    """Declared channels. Anything else a node returns is dropped by LangGraph."""

    trajectory: Trajectory
    allow_set: AllowSet | None
    policy: Policy | None
    outcome: Any
    levels: list[str]
    graph_meta: Annotated[dict[str, Any], merge_meta]
    scores: Annotated[dict[str, LevelScore], merge_meta]
    violations: list[Violation]
    verdict: Verdict
    escalation: dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------
def _telemetry(state: EvalState) -> dict[str, Any]:
    return dict((state.get("graph_meta") or {}).get("telemetry") or {})


def _found(state: EvalState, guard: str) -> list[Violation]:
    return [Violation.model_validate(v) for v in _telemetry(state).get(guard, {}).get("violations", [])]


def _hard_so_far(state: EvalState) -> list[str]:
    return sorted({v.code for g in GUARDS for v in _found(state, g) if v.severity == "hard"})


def _dump(violations: Iterable[Violation]) -> list[dict[str, Any]]:
    return [v.model_dump() for v in violations]


def _clip(value: Any) -> Any:
    text = value if isinstance(value, str) else repr(value) if value is not None else None
    if text is None:
        return None
    return text if len(text) <= MAX_FIELD_CHARS else text[:MAX_FIELD_CHARS] + "…"


def _judge_payload(level: Level, state: EvalState) -> dict[str, Any]:
    run = state["trajectory"]
    steps = run.steps[:MAX_STEPS_TO_JUDGE]
    if level == "step":
        return {
            "graph": run.graph,
            "steps": [
                {"i": i, "node": s.node, "summary": _clip(s.summary), "output": _clip(s.output),
                 "tool": s.tool, "args": _clip(s.args), "result": _clip(s.result),
                 "error": _clip(s.error)}
                for i, s in enumerate(steps)
            ],
        }
    if level == "trajectory":
        return {
            "graph": run.graph,
            "path": [s.node for s in steps],
            "summaries": [_clip(s.summary) for s in steps],
            "tools": [s.tool for s in steps if s.tool],
        }
    return {"graph": run.graph, "status": run.status, "outcome": _clip(state.get("outcome"))}


def _level_score(level: Level, result: JudgeResult) -> LevelScore:
    evidence = {"requests": result.requests, "prompt_version": result.prompt_version}
    if result.error is not None:
        return LevelScore(level=level, reason=f"judge_error:{result.error}",
                          source=f"judge:{result.model}", evidence={**evidence, "error": result.error})
    return LevelScore(level=level, score=result.score, confidence=result.confidence,
                      reason="judged", source=f"judge:{result.model}", evidence=evidence)


def _skipped(level: Level, why: str) -> LevelScore:
    return LevelScore(level=level, reason=f"skipped:{why}", source="none")


# -- the graph -------------------------------------------------------------------------------
def build_eval_graph(
    *,
    gateway: Gateway | None = None,
    panel_size: int = 3,
    margin: float = 0.05,
    anomaly: bool | None = None,
) -> Any:
    """Compile the eval graph. ``gateway=None`` builds one from the environment.

    ``anomaly=None`` reads ``AGENT_EVAL_TRAJECTORY_ANOMALY`` (on unless ``0``); the
    anomaly guard only runs when the run's graph has an allow-set.
    """
    from langgraph.graph import END, START, StateGraph

    from liveguard.judges import Gateway, JudgeConfig

    if panel_size < 1 or not 0.0 <= margin <= 1.0:
        raise ValueError("panel_size must be >= 1 and margin within [0, 1]")
    use_anomaly = (
        os.environ.get("AGENT_EVAL_TRAJECTORY_ANOMALY", "1").strip() != "0"
        if anomaly is None
        else anomaly
    )
    nodes = _Nodes(gateway or Gateway(JudgeConfig.from_env()), panel_size, margin, use_anomaly)
    builder: Any = StateGraph(EvalState)
    builder.add_node("plan_levels", nodes.plan_levels)
    builder.add_node("loop_guard", nodes.loop_guard)
    for node, level in JUDGE_NODES.items():
        builder.add_node(node, nodes.judge_node(node, level))
    builder.add_node("trajectory_anomaly", nodes.trajectory_anomaly)
    builder.add_node("detect_defects", nodes.detect_defects)
    builder.add_node("aggregate", nodes.aggregate)
    builder.add_node("escalate_borderline", nodes.escalate_borderline)
    builder.add_edge(START, NODES[0])
    for a, b in itertools.pairwise(NODES):
        builder.add_edge(a, b)
    builder.add_edge(NODES[-1], END)
    return builder.compile(name="agent_eval", checkpointer=False)


class _Nodes:
    """The eval graph's nodes; they share one gateway and the escalation settings."""

    def __init__(self, gate: Gateway, panel_size: int, margin: float, use_anomaly: bool) -> None:
        self.gate = gate
        self.panel_size = panel_size
        self.margin = margin
        self.use_anomaly = use_anomaly

    def plan_levels(self, state: EvalState) -> dict[str, Any]:
        run = state["trajectory"]
        levels = []
        if run.steps:
            levels.append("step")
        if len(run.steps) >= 2:
            levels.append("trajectory")
        if state.get("outcome") is not None:
            levels.append("outcome")
        return {"levels": levels, "graph_meta": {"telemetry": {"plan_levels": {"levels": levels}}}}

    def loop_guard(self, state: EvalState) -> dict[str, Any]:
        """One Monitor over the run, every rule family (core, allow-set, defects): one digest per step."""
        allow = state.get("allow_set")
        policy = state.get("policy") or Policy.from_env()
        steps = state["trajectory"].steps
        found = check_trajectory(steps, policy, allow)
        report = {
            "violations": _dump(found),
            "steps": len(steps),
            "enabled": policy.enabled,
            "allow_set": allow is not None,
        }
        return {"graph_meta": {"telemetry": {"loop_guard": report}}}

    def judge_node(self, node: str, level: Level) -> Any:
        async def judge(state: EvalState) -> dict[str, Any]:
            return {"scores": {level: await self._judge(level, state)}}

        judge.__name__ = node
        return judge

    async def _judge(self, level: Level, state: EvalState) -> LevelScore:
        from liveguard.judges import JudgeSkipped

        if level not in state.get("levels", []):
            return _skipped(level, "not_planned")
        if _hard_so_far(state):
            return _skipped(level, "hard_violation")  # a broken run costs zero tokens
        try:
            result = await self.gate.judge(level, _judge_payload(level, state))
        except JudgeSkipped:
            return _skipped(level, self.gate.skip_reason or "skipped")
        score = _level_score(level, result)
        log.info("judge level=%s reason=%s requests=%d", level, score.reason, result.requests)
        return score

    async def trajectory_anomaly(self, state: EvalState) -> dict[str, Any]:
        """The anomaly judge: one call for a legal-but-unusual ordering.

        The allow-set rules themselves ran in ``loop_guard`` (always, when an allow-set is
        given); ``AGENT_EVAL_TRAJECTORY_ANOMALY=0`` turns off only this judge call.
        """
        allow = state.get("allow_set")
        if not self.use_anomaly or allow is None:
            why = "disabled" if not self.use_anomaly else "no_allow_set"
            return {"graph_meta": {"telemetry": {"trajectory_anomaly": {"enabled": False, "why": why}}}}
        found = [v for v in _found(state, "loop_guard") if v.code in TRANSITION_CODES]
        report: dict[str, Any] = {"enabled": True}
        unusual = [v for v in found if v.severity == "soft"]
        if unusual and not _hard_so_far(state) and self.gate.skip_reason is None:
            # A legal but unusual ordering: one judge call, with trajectory_eval's prompt.
            result = await self.gate.judge("trajectory", _judge_payload("trajectory", state))
            report["judge"] = _level_score("trajectory", result).model_dump()
        return {"graph_meta": {"telemetry": {"trajectory_anomaly": report}}}

    def detect_defects(self, state: EvalState) -> dict[str, Any]:
        """Whole-run detectors that are not Monitor rules (the Monitor's defect rules ran in loop_guard)."""
        return {"graph_meta": {"telemetry": {"detect_defects": {"violations": []}}}}

    def aggregate(self, state: EvalState) -> dict[str, Any]:
        verdict = build_verdict(state, gate_model=self.gate.config.model)
        return {"violations": list(verdict.violations), "verdict": verdict}

    async def escalate_borderline(self, state: EvalState) -> dict[str, Any]:
        verdict = state["verdict"]
        composite = verdict.composite
        if verdict.hard_codes or composite is None or abs(composite - 0.80) > self.margin:
            return {"escalation": {"called": False}}
        if self.gate.skip_reason is not None:
            return {"escalation": {"called": False, "why": self.gate.skip_reason}}
        payload = _judge_payload("trajectory", state)
        results = await self.gate.judge_many([("trajectory", payload)] * self.panel_size)
        scores = [r.score for r in results if r.error is None and r.score is not None]
        escalation: dict[str, Any] = {
            "called": True,
            "panel": self.panel_size,
            "answered": len(scores),
            "requests": sum(r.requests for r in results),
        }
        if scores:
            escalation["median"] = statistics.median(scores)
        return {"escalation": escalation}


def build_verdict(state: EvalState, gate_model: str | None = None) -> Verdict:
    """aggregate's pure core: re-collect every guard's telemetry and the judges' scores."""
    from liveguard.judges import PROMPT_VERSION

    run = state["trajectory"]
    telemetry = _telemetry(state)
    violations = [v for g in GUARDS for v in _found(state, g)]
    scores = dict(state.get("scores") or {})
    anomaly_judge = telemetry.get("trajectory_anomaly", {}).get("judge")
    extra = [LevelScore.model_validate(anomaly_judge)] if anomaly_judge else []
    for level_score in [*scores.values(), *extra]:
        if level_score.reason.startswith("judge_error:"):
            violations.append(Violation(
                code="judge_error", severity="soft", step=0, node=level_score.level, count=1,
                detail={"level": level_score.level, "error": level_score.evidence.get("error")},
            ))
    violations.sort(key=lambda v: (v.step, v.code))
    judged_scores = [s.score for s in scores.values() if s.score is not None]
    composite = sum(judged_scores) / len(judged_scores) if judged_scores else None
    skipped = sorted({s.reason.split(":", 1)[1] for s in scores.values()
                      if s.reason.startswith("skipped:") and s.reason != "skipped:not_planned"})
    hard = sorted({v.code for v in violations if v.severity == "hard"})
    judge_error = any(v.code == "judge_error" for v in violations)
    passed, reason = _decide(hard, composite)
    confidences = [s.confidence for s in scores.values() if s.confidence is not None]
    return Verdict(
        run_id=run.run_id,
        graph=run.graph,
        passed=passed,
        composite=composite,
        violations=violations,
        levels=scores,
        judged=bool(judged_scores),
        judges_skipped=skipped[0] if skipped and not judged_scores else None,
        judge_error=judge_error,
        prompt_version=PROMPT_VERSION,
        confidence=min(confidences) if confidences else (1.0 if hard else None),
        reason=reason,
        source="eval_graph" + (f":{gate_model}" if gate_model else ""),
        evidence={
            "hard_codes": hard,
            "soft_codes": sorted({v.code for v in violations if v.severity == "soft"}),
            "steps": sorted({v.step for v in violations}),
            "counts": {g: len(_found(state, g)) for g in GUARDS},
            "levels": sorted(scores),
            "steps_total": len(run.steps),
        },
    )


def _decide(hard: Sequence[str], composite: float | None) -> tuple[bool, str]:
    """The one pass rule: a hard violation vetoes everything; else the pass mark decides."""
    from liveguard.gate import CELL_PASS

    if hard:
        return False, "hard_violation"
    if composite is None:
        return True, "unjudged_structurally_clean"
    if composite < CELL_PASS:
        return False, "below_pass_mark"
    return True, "passed"


def apply_escalation(verdict: Verdict, escalation: Mapping[str, Any] | None) -> Verdict:
    """Fold a borderline panel's median into the verdict (the panel decides)."""
    if not escalation or not escalation.get("called") or "median" not in escalation:
        return verdict
    median = float(escalation["median"])
    passed, reason = _decide(verdict.hard_codes, median)
    evidence = {**verdict.evidence, "escalation": {k: escalation[k] for k in
                                                  ("panel", "answered", "requests", "median")}}
    return verdict.model_copy(update={
        "passed": passed, "composite": median, "reason": f"panel:{reason}", "evidence": evidence,
    })


def _inputs(
    trajectory: Trajectory, allow_set: AllowSet | None, policy: Policy | None, outcome: Any
) -> dict[str, Any]:
    return {
        "trajectory": trajectory,
        "allow_set": allow_set,
        "policy": policy,
        "outcome": trajectory.outcome if outcome is None else outcome,
        "graph_meta": {"telemetry": {}},
        "scores": {},
    }


async def aevaluate_trajectory(
    trajectory: Trajectory,
    *,
    allow_set: AllowSet | None = None,
    policy: Policy | None = None,
    outcome: Any = None,
    graph: Any = None,
) -> Verdict:
    """Run the eval graph on one trajectory and return its verdict."""
    compiled = graph if graph is not None else build_eval_graph()
    state = await compiled.ainvoke(_inputs(trajectory, allow_set, policy, outcome))
    return apply_escalation(state["verdict"], state.get("escalation"))


def evaluate_trajectory(
    trajectory: Trajectory,
    *,
    allow_set: AllowSet | None = None,
    policy: Policy | None = None,
    outcome: Any = None,
    gateway: Gateway | None = None,
) -> Verdict:
    """Synchronous evaluation of one run (not for use inside a running event loop).

    Builds the graph around ``gateway`` (default: from the environment) and closes the
    gateway's client before returning, so each call owns its own event loop.
    """

    async def run() -> Verdict:
        from liveguard.judges import Gateway, JudgeConfig

        gate = gateway if gateway is not None else Gateway(JudgeConfig.from_env())
        try:
            return await aevaluate_trajectory(
                trajectory, allow_set=allow_set, policy=policy, outcome=outcome,
                graph=build_eval_graph(gateway=gate),
            )
        finally:
            await gate.aclose()

    return asyncio.run(run())


async def aevaluate_many(
    items: Sequence[tuple[Trajectory, AllowSet | None, Policy | None]],
    *,
    graph: Any,
    jobs: int = 4,
) -> list[Verdict]:
    """Evaluate a batch concurrently (at most ``jobs`` runs at once); order preserved."""
    limit = asyncio.Semaphore(max(1, jobs))

    async def one(item: tuple[Trajectory, AllowSet | None, Policy | None]) -> Verdict:
        async with limit:
            return await aevaluate_trajectory(item[0], allow_set=item[1], policy=item[2], graph=graph)

    return list(await asyncio.gather(*(one(i) for i in items)))
