"""The agent-eval StateGraph: structural guards first, LLM judges second, one writer of the verdict.

Topology (exactly)::

    START → plan_levels → loop_guard → step_eval → trajectory_eval → outcome_gate
          → trajectory_anomaly → detect_defects → aggregate → escalate_borderline → END

State and the single-writer rule. LangGraph silently drops keys a node returns that
are not declared channels, and two nodes writing one plain channel clobber each other.
So guards never write ``violations``: each writes its findings under its own key of
``graph_meta["telemetry"]``, a channel whose reducer merges key-wise. Judges write their
level under their own key of ``scores`` (also merged key-wise). ``aggregate`` is the
only writer of ``violations`` and ``verdict``. ``escalate_borderline`` records its
panel under ``escalation`` and replaces ``verdict`` with
:func:`liveguard.evaluate.verdict.apply_escalation` of it (the only other writer, and only through
the verdict module), so ``build_eval_graph().invoke()`` returns the final verdict. The
pass rule lives in one function, :func:`liveguard.evaluate.verdict.decide_run`.

Evidence or no pass: a planned judge level (or the panel) that failed, judges that did
not run, a run with no steps, a graph with no allow-set while allow-sets are in use and a
rule family switched off are each listed in ``Verdict.missing``, and the run is not passed.
A structural-only evaluation (``structural_only=True``, the CLI's ``--no-judges``) plans no
judge level and lets a structurally clean run pass, saying so (``reason="structural_only"``).

Cost: once ``loop_guard`` has a hard violation, no judge is called (the run costs zero
tokens); with ``LLM_KILL_SWITCH=1`` or no key, no judge is called anywhere and the
verdict says why. Evidence is codes, counts and step indices only.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict, cast

from liveguard.core.allowset import AllowSet
from liveguard.core.evidence import level_error_reason, level_skip_reason
from liveguard.core.model import Level, LevelScore, Trajectory, Verdict, Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.build import TRANSITION_CODES
from liveguard.evaluate._aggregation import (
    aggregate_update,
    build_verdict,
    dump_violations,
    findings,
    hard_so_far,
    loop_guard_update,
    merge_meta,
)
from liveguard.evaluate.verdict import (
    BORDERLINE_MARGIN,
    apply_escalation,
    is_borderline,
    panel_outcome,
)
from liveguard.settings import Settings

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from liveguard.evaluate.judges import JudgeClient, JudgeResult

__all__ = [
    "EvalState",
    "aevaluate_many",
    "aevaluate_trajectory",
    "apply_escalation",
    "build_eval_graph",
    "build_verdict",
    "eval_chain",
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
JUDGE_NODES: Mapping[str, Level] = {
    "step_eval": "step",
    "trajectory_eval": "trajectory",
    "outcome_gate": "outcome",
}
MAX_STEPS_TO_JUDGE = 200
MAX_FIELD_CHARS = 2_000


class EvalState(TypedDict, total=False):
    """Declared channels. Anything else a node returns is dropped by LangGraph."""

    trajectory: Trajectory
    allow_set: AllowSet | None
    allowsets_in_use: bool
    policy: Policy | None
    outcome: Any
    levels: list[str]
    graph_meta: Annotated[dict[str, Any], merge_meta]
    scores: Annotated[dict[str, LevelScore], merge_meta]
    violations: list[Violation]
    verdict: Verdict
    escalation: dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------
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
        return LevelScore(level=level, reason=level_error_reason(result.error),
                          source=f"judge:{result.model}", evidence={**evidence, "error": result.error})
    return LevelScore(level=level, score=result.score, confidence=result.confidence,
                      reason="judged", source=f"judge:{result.model}", evidence=evidence)


@functools.lru_cache(maxsize=64)
def _skipped(level: Level, why: str) -> LevelScore:
    """A skipped level's score; the same frozen object for the same arguments (built once)."""
    return LevelScore(level=level, reason=level_skip_reason(why), source="none")




# -- the graph -------------------------------------------------------------------------------
def build_eval_graph(
    *,
    client: JudgeClient | None = None,
    gateway: JudgeClient | None = None,
    panel_size: int = 3,
    margin: float = BORDERLINE_MARGIN,
    anomaly: bool | None = None,
    structural_only: bool = False,
    settings: Settings | None = None,
) -> CompiledStateGraph[EvalState, None, EvalState, EvalState]:
    """Compile the eval graph.

    ``client`` (``gateway`` is its deprecated name) is the judge client; None builds one
    from ``settings``. ``settings=None`` reads the environment once, here (this is an
    edge). ``anomaly=None`` follows ``settings.trajectory_anomaly``. ``structural_only=True``
    plans no judge level: a structurally clean run passes with ``reason="structural_only"``.
    """
    from langgraph.graph import END, START, StateGraph

    chain = eval_chain(client=client if client is not None else gateway, panel_size=panel_size,
                       margin=margin, anomaly=anomaly, structural_only=structural_only,
                       settings=settings)
    builder: Any = StateGraph(EvalState)
    for name, fn in chain:
        builder.add_node(name, fn)
    builder.add_edge(START, NODES[0])
    for a, b in itertools.pairwise(NODES):
        builder.add_edge(a, b)
    builder.add_edge(NODES[-1], END)
    compiled: CompiledStateGraph[EvalState, None, EvalState, EvalState] = builder.compile(
        name="agent_eval", checkpointer=False)
    return compiled


def eval_chain(
    *,
    client: JudgeClient | None = None,
    panel_size: int = 3,
    margin: float = BORDERLINE_MARGIN,
    anomaly: bool | None = None,
    structural_only: bool = False,
    settings: Settings | None = None,
) -> list[tuple[str, Callable[..., Any]]]:
    """The eval graph's nodes, in :data:`NODES` order, as ``(name, function)``: what
    :func:`build_eval_graph` compiles, and what the scoring floor
    (:class:`~liveguard.evaluate.engine.floor.Floor`) runs without importing LangGraph at all."""
    from liveguard.evaluate.judges import JudgeClient, JudgeConfig

    if panel_size < 1 or not 0.0 <= margin <= 1.0:
        raise ValueError("panel_size must be >= 1 and margin within [0, 1]")
    if client is None or anomaly is None:
        settings = settings if settings is not None else Settings.from_env()
    if client is None:
        assert settings is not None
        client = JudgeClient(JudgeConfig.from_settings(settings))
    use_anomaly = anomaly if anomaly is not None else (settings is None or settings.trajectory_anomaly)
    nodes = _Nodes(client, panel_size, margin, use_anomaly, structural_only)
    chain: list[tuple[str, Callable[..., Any]]] = [
        ("plan_levels", nodes.plan_levels),
        ("loop_guard", nodes.loop_guard),
        *((node, nodes.judge_node(node, level)) for node, level in JUDGE_NODES.items()),
        # Structural only, these three never call a judge: their plain-function forms.
        ("trajectory_anomaly", nodes.anomaly_off if structural_only else nodes.trajectory_anomaly),
        ("detect_defects", nodes.defects_found if structural_only else nodes.detect_defects),
        ("aggregate", nodes.aggregate),
        ("escalate_borderline", nodes.no_escalation if structural_only else nodes.escalate_borderline),
    ]
    assert tuple(name for name, _ in chain) == NODES
    return chain


class _Nodes:
    """The eval graph's nodes; they share one judge client and the escalation settings."""

    def __init__(
        self, client: JudgeClient, panel_size: int, margin: float, use_anomaly: bool,
        structural_only: bool,
    ) -> None:
        self.client = client
        self.panel_size = panel_size
        self.margin = margin
        self.use_anomaly = use_anomaly
        self.structural_only = structural_only

    def plan_levels(self, state: EvalState) -> dict[str, Any]:
        run = state["trajectory"]
        levels = []
        if not self.structural_only:
            if run.steps:
                levels.append("step")
            if len(run.steps) >= 2:
                levels.append("trajectory")
            if state.get("outcome") is not None:
                levels.append("outcome")
        report = {"levels": levels, "structural_only": self.structural_only,
                  "anomaly": self.use_anomaly}
        return {"levels": levels, "graph_meta": {"telemetry": {"plan_levels": report}}}

    def loop_guard(self, state: EvalState) -> dict[str, Any]:
        """One Monitor over the run, every rule family (core, allow-set, defects): one digest per step."""
        return loop_guard_update(state)

    def judge_node(self, node: str, level: Level) -> Any:
        """The node of one judge level. A structural-only graph plans no level (see
        ``plan_levels``), so its judge nodes are plain functions that record the level as
        not planned: nothing to await, and the floor runs them without a coroutine."""
        if self.structural_only:
            def unplanned(state: EvalState) -> dict[str, Any]:
                return {"scores": {level: _skipped(level, "not_planned")}}

            unplanned.__name__ = node
            return unplanned

        async def judge(state: EvalState) -> dict[str, Any]:
            if level not in state.get("levels", ()):  # _judge's first check, without its coroutine
                return {"scores": {level: _skipped(level, "not_planned")}}
            return {"scores": {level: await self._judge(level, state)}}

        judge.__name__ = node
        return judge

    async def _judge(self, level: Level, state: EvalState) -> LevelScore:
        from liveguard.evaluate.judges import JudgeSkipped

        if level not in state.get("levels", []):
            return _skipped(level, "not_planned")
        if hard_so_far(state):
            return _skipped(level, "hard_violation")  # a broken run costs zero tokens
        if self.client.skip_reason is not None:  # judges off: build no payload at all
            return _skipped(level, self.client.skip_reason)
        try:
            result = await self.client.judge(level, _judge_payload(level, state))
        except JudgeSkipped:
            return _skipped(level, self.client.skip_reason or "skipped")
        score = _level_score(level, result)
        log.info("judge level=%s reason=%s requests=%d", level, score.reason, result.requests)
        return score

    async def trajectory_anomaly(self, state: EvalState) -> dict[str, Any]:
        """The anomaly judge: one call for a legal-but-unusual ordering.

        The allow-set rules themselves ran in ``loop_guard`` (always, when an allow-set is
        given); ``AGENT_EVAL_TRAJECTORY_ANOMALY=0`` turns off only this judge call.
        """
        allow = state.get("allow_set")
        if not self.use_anomaly or allow is None or self.structural_only:
            return self.anomaly_off(state)
        found = [v for v in findings(state, "loop_guard") if v.code in TRANSITION_CODES]
        report: dict[str, Any] = {"enabled": True}
        unusual = [v for v in found if v.severity == "soft"]
        if unusual and not hard_so_far(state) and self.client.skip_reason is None:
            # A legal but unusual ordering: one judge call, with trajectory_eval's prompt.
            result = await self.client.judge("trajectory", _judge_payload("trajectory", state))
            report["judge"] = _level_score("trajectory", result).model_dump()
        return {"graph_meta": {"telemetry": {"trajectory_anomaly": report}}}

    def anomaly_off(self, state: EvalState) -> dict[str, Any]:
        """``trajectory_anomaly`` when its judge cannot run (always so structural only)."""
        why = ("structural_only" if self.structural_only
               else "disabled" if not self.use_anomaly else "no_allow_set")
        return {"graph_meta": {"telemetry": {"trajectory_anomaly": {"enabled": False, "why": why}}}}

    def defects_found(self, state: EvalState) -> dict[str, Any]:
        """``detect_defects`` without spin checks (structural only there are none)."""
        return {"graph_meta": {"telemetry": {"detect_defects": self._defects(state)}}}

    def no_escalation(self, state: EvalState) -> dict[str, Any]:
        """``escalate_borderline`` structural only: an unjudged verdict is never borderline."""
        return {"escalation": {"called": False}}

    def _defects(self, state: EvalState) -> dict[str, Any]:
        run = state["trajectory"]
        found: list[Violation] = []
        if state.get("allowsets_in_use") and state.get("allow_set") is None:
            found.append(Violation(code="no_allowset", severity="soft", step=0,
                                   node=run.graph or "-", count=1,
                                   detail={"graph": run.graph or "-"}))
        return {"violations": dump_violations(found)}

    async def detect_defects(self, state: EvalState) -> dict[str, Any]:
        """``no_allowset`` and, with the semantic layer on, the spin checks (the periodic judge).

        Every per-step rule ran in the Monitor in ``loop_guard`` (``role_drift``,
        ``tool_entropy_collapse`` and the step-text rule ``evaluator_injection_suspected``
        among them).
        """
        report = self._defects(state)
        spins = await self._spin_checks(state)
        if spins:
            report["spin_checks"] = [spin.model_dump() for spin in spins]
        return {"graph_meta": {"telemetry": {"detect_defects": report}}}

    async def _spin_checks(self, state: EvalState) -> list[LevelScore]:
        """``spin_check`` (semantic layer): the judge asked every K message steps or after a
        soft ``semantic_repeat``, never after a hard finding, never without judges."""
        policy = state.get("policy")
        if policy is None or not policy.semantic or self.structural_only or hard_so_far(state):
            return []  # a hard finding already decides the run: a broken run costs zero tokens
        if self.client.skip_reason is not None:
            return []  # the judges' own skip is already missing evidence (judges_skipped)
        from liveguard.evaluate.spin import spin_checks

        found = findings(state, "loop_guard")
        run = state["trajectory"]
        given = (run.metadata or {}).get("input")  # the run's input, when its reader kept it
        return await spin_checks(run.steps, found, policy, self.client,
                                 task=given if isinstance(given, str) and given.strip() else None)

    def aggregate(self, state: EvalState) -> dict[str, Any]:
        return aggregate_update(state, self.client.config.model, self.structural_only)

    async def escalate_borderline(self, state: EvalState) -> dict[str, Any]:
        """Ask the panel on a borderline composite and apply it (through the verdict module)."""
        verdict = state["verdict"]
        if not is_borderline(verdict, self.margin):
            return {"escalation": {"called": False}}
        if self.client.skip_reason is not None:
            return {"escalation": {"called": False, "why": self.client.skip_reason}}
        payload = _judge_payload("trajectory", state)
        results = await self.client.judge_many([("trajectory", payload)] * self.panel_size)
        escalation = panel_outcome([r.score if r.error is None else None for r in results],
                                   [r.error for r in results if r.error is not None])
        escalation["requests"] = sum(r.requests for r in results)
        return {"escalation": escalation, "verdict": apply_escalation(verdict, escalation)}


def _inputs(
    trajectory: Trajectory, allow_set: AllowSet | None, policy: Policy | None, outcome: Any,
    allowsets_in_use: bool = False,
) -> dict[str, Any]:
    return {
        "trajectory": trajectory,
        "allow_set": allow_set,
        "allowsets_in_use": allowsets_in_use,
        "policy": policy,
        "outcome": trajectory.outcome if outcome is None else outcome,
        # graph_meta and scores start empty (their reducers' initial value); every guard and
        # judge node writes its own key into them
    }


async def aevaluate_trajectory(
    trajectory: Trajectory,
    *,
    allow_set: AllowSet | None = None,
    policy: Policy | None = None,
    outcome: Any = None,
    graph: Any = None,
    allowsets_in_use: bool = False,
    structural_only: bool = False,
    settings: Settings | None = None,
) -> Verdict:
    """Run the eval graph on one trajectory and return its (final, escalated) verdict.

    ``allowsets_in_use=True`` with ``allow_set=None`` records ``no_allowset`` (missing
    evidence). ``structural_only`` applies only when ``graph`` is None (a given graph
    was compiled with its own). ``policy=None`` is ``settings.policy(Policy())``, as in
    :func:`evaluate_trajectory`; ``settings=None`` reads the environment once, here (an
    edge), for the policy and for the graph it builds.
    """
    cfg = settings if settings is not None else Settings.from_env()
    resolved = policy if policy is not None else cfg.policy(Policy())
    compiled = graph if graph is not None else build_eval_graph(structural_only=structural_only,
                                                                 settings=cfg)
    inputs = cast("EvalState", _inputs(trajectory, allow_set, resolved, outcome, allowsets_in_use))
    state = await compiled.ainvoke(inputs)
    verdict: Verdict = state["verdict"]
    return verdict


def evaluate_trajectory(
    trajectory: Trajectory,
    *,
    allow_set: AllowSet | None = None,
    policy: Policy | None = None,
    outcome: Any = None,
    client: JudgeClient | None = None,
    gateway: JudgeClient | None = None,
    structural_only: bool = False,
    settings: Settings | None = None,
) -> Verdict:
    """Synchronous evaluation of one run (not for use inside a running event loop).

    Builds the graph around ``client`` (``gateway`` is its deprecated name; default: from
    ``settings``, else the environment) and closes the client before returning, so each
    call owns its own event loop. ``structural_only=True`` is the documented Python
    equivalent of ``--no-judges``: no judge is asked, and a structurally clean run passes
    with ``reason="structural_only"``. Without it, a run the judges did not score is not
    passed.
    """

    async def run() -> Verdict:
        from liveguard.evaluate.judges import JudgeClient, JudgeConfig

        given = client if client is not None else gateway
        cfg = settings if settings is not None else Settings.from_env()
        judge_client = given if given is not None else JudgeClient(JudgeConfig.from_settings(cfg))
        try:
            return await aevaluate_trajectory(
                trajectory, allow_set=allow_set, policy=policy, outcome=outcome, settings=cfg,
                graph=build_eval_graph(client=judge_client, structural_only=structural_only,
                                       settings=cfg),
            )
        finally:
            await judge_client.aclose()

    return asyncio.run(run())


async def aevaluate_many(
    items: Sequence[tuple[Trajectory, AllowSet | None, Policy | None]],
    *,
    graph: Any,
    jobs: int = 4,
    settings: Settings | None = None,
) -> list[Verdict]:
    """Evaluate a batch concurrently (at most ``jobs`` runs at once); order preserved.

    A ``None`` policy is ``settings.policy(Policy())`` (``settings=None``: the environment, read once).
    """
    limit = asyncio.Semaphore(max(1, jobs))
    cfg = settings if settings is not None else Settings.from_env()

    async def one(item: tuple[Trajectory, AllowSet | None, Policy | None]) -> Verdict:
        async with limit:
            return await aevaluate_trajectory(item[0], allow_set=item[1], policy=item[2], graph=graph,
                                              settings=cfg)

    return list(await asyncio.gather(*(one(i) for i in items)))
