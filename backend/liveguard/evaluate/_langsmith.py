"""LangSmith's online side: listing runs, pushing feedback, and the evaluators.

* :func:`list_project_trajectories` reads a project's root runs (``langsmith.Client``);
* :func:`feedback_for` is the one definition of the ``liveness`` feedback of a verdict,
  used by :func:`push_feedback` callers (``liveguard score --push-feedback``) and by the
  liveness evaluator;
* evaluators, as keyword-only factories that validate when built:
  :func:`create_liveness_evaluator` (deterministic), :func:`create_verdict_evaluator`
  (the full eval graph) and :func:`create_gate_evaluator` (a summary evaluator whose
  categorical ``value`` is the release decision: PROMOTE / HOLD / ROLLBACK), each with an
  async twin (``create_async_*``) sharing the same scoring.

Each evaluator returns a typed result in openevals' shape (:mod:`liveguard.evaluate.results`):
an :class:`~liveguard.evaluate.results.EvaluatorResult` (``key``, ``score``, ``comment``,
``metadata``), a :class:`~liveguard.evaluate.results.GateResult` for the gate (plus ``value``). A
factory given a bad argument raises :class:`EvaluatorArgumentError` naming it, when the
evaluator is built, never later inside ``langsmith.evaluate``.

Evaluators take either calling convention:

* LangSmith's ``evaluator(run, example)`` (``langsmith.evaluate``): the run tree is read
  with :func:`liveguard.readers.langsmith.run_to_trajectory`;
* openevals' ``evaluator(*, inputs=..., outputs=..., reference_outputs=...)``, where
  ``outputs`` is the agent's message list (or ``{"messages": [...]}``), read with
  :func:`liveguard.readers.message_list.trajectory_from_messages`.

When both are given (``langsmith.evaluate`` passes both to such a signature), the run tree
wins: it has the node names. The scoring itself is the library's (``check_trajectory`` /
``evaluate_trajectory`` / ``decide``), kept apart from tracing. Nothing from LangSmith is
imported at module import time.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from liveguard.core._monitor import check_trajectory
from liveguard.core.allowset import AllowSet
from liveguard.core.messages import field
from liveguard.core.model import Trajectory, Verdict
from liveguard.core.policy import Policy
from liveguard.errors import EvaluatorArgumentError, TrajectoryReadError
from liveguard.evaluate.gate import GATE_PASS_RATE, decide
from liveguard.evaluate.judges import JudgeConfig
from liveguard.evaluate.results import (
    GATE_SCORES,
    EvaluatorResult,
    GateResult,
    gate_result,
    liveness_result,
    verdict_result,
)
from liveguard.evaluate.scoring import policy_for
from liveguard.readers.langsmith import _source_of, run_to_trajectory
from liveguard.readers.message_list import trajectory_from_messages
from liveguard.settings import Settings

if TYPE_CHECKING:
    from liveguard.evaluate.gate import GateDecision

__all__ = [
    "GATE_SCORES",
    "LIVENESS_KEY",
    "EvaluatorArgumentError",
    "create_async_gate_evaluator",
    "create_async_liveness_evaluator",
    "create_async_verdict_evaluator",
    "create_gate_evaluator",
    "create_liveness_evaluator",
    "create_verdict_evaluator",
    "feedback_for",
    "gate_feedback",
    "list_project_trajectories",
    "push_feedback",
]

LIVENESS_KEY: Final = "liveness"

Evaluator = Callable[..., EvaluatorResult]
AsyncEvaluator = Callable[..., Awaitable[EvaluatorResult]]
GateEvaluator = Callable[..., GateResult]
AsyncGateEvaluator = Callable[..., Awaitable[GateResult]]


# ============================================================================ feedback


def feedback_for(verdict: Verdict) -> EvaluatorResult:
    """The ``liveness`` feedback of a verdict, typed (:func:`liveguard.evaluate.results.liveness_result`).

    Liveness is the deterministic floor only: score 0.0 when any hard violation fired, else
    1.0; the comment lists the hard codes (``"ok"`` when none), ``metadata`` holds
    ``hard_codes`` and ``missing``. A run with no steps (a root run read without its child
    runs) is missing evidence: score 0.0, comment ``missing:no_steps``. Judge scores are not
    part of it (they are the ``verdict`` evaluator's). The CLI's ``--push-feedback``
    (``push_feedback(client, run_id, **feedback_for(verdict))``) and the liveness evaluator
    both write exactly this.
    """
    return liveness_result(verdict.hard_codes, has_steps="no_steps" not in verdict.missing)


def gate_feedback(decision: GateDecision) -> GateResult:
    """The release gate's result (:func:`liveguard.evaluate.results.gate_result`): categorical ``value``."""
    return gate_result(decision)


def _call_quietly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(list_runs|read_run)\(\) is deprecated",
                                category=DeprecationWarning)
        return fn(*args, **kwargs)


def list_project_trajectories(
    client: Any,
    project_name: str,
    *,
    limit: int | None = None,
) -> Iterator[Trajectory | TrajectoryReadError]:
    """The root runs of a LangSmith project as Trajectories (or read errors, per run).

    ``client.list_runs(project_name=..., is_root=True)`` lists the roots, then
    ``client.read_run(id, load_child_runs=True)`` loads each tree (the deprecation
    warnings langsmith 0.15 attaches to both are silenced for these calls only). A run
    that cannot be fetched or converted is yielded as a :class:`TrajectoryReadError`
    named by its id; an unknown project or an unreachable server raises the client's
    error.
    """
    roots = _call_quietly(client.list_runs, project_name=project_name, is_root=True, limit=limit)
    for root in roots:
        run_id = _source_of(root)
        try:
            tree = _call_quietly(client.read_run, field(root, "id"), load_child_runs=True)
        except Exception as exc:
            yield TrajectoryReadError(run_id, f"cannot read run: {type(exc).__name__}: {exc}")
            continue
        try:
            yield run_to_trajectory(tree)
        except TrajectoryReadError as exc:
            yield exc


def push_feedback(
    client: Any,
    run_id: Any,
    *,
    key: str = "liveness",
    score: float | int | bool,
    comment: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    session_id: Any = None,
) -> None:
    """Write one feedback row on a run: ``client.create_feedback(run_id, key, ...)``.

    Pass the run's project (``session_id``, in ``Trajectory.metadata["session_id"]`` for
    runs read from LangSmith): langsmith 0.15 warns that run feedback without it is
    deprecated. ``metadata`` is accepted so a typed result can be passed whole
    (``**feedback_for(verdict)``) and is not written: a feedback row carries key, score and
    comment, as ``langsmith.evaluate`` writes an evaluator's result.
    """
    client.create_feedback(run_id=run_id, key=key, score=score, comment=comment,
                           session_id=session_id)


# ============================================================================ evaluators


def _bad(factory: str, argument: str, message: str) -> EvaluatorArgumentError:
    return EvaluatorArgumentError(f"{factory}({argument}=...): {message}")


def _check(
    factory: str,
    *,
    policy: object,
    allow_sets: object,
    graph: object,
    judge_config: object = None,
) -> None:
    """The arguments every factory shares, checked when the evaluator is built."""
    if policy is not None and not isinstance(policy, Policy):
        raise _bad(factory, "policy", f"must be a liveguard Policy, not {type(policy).__name__}")
    if allow_sets is not None:
        if not isinstance(allow_sets, Mapping):
            raise _bad(factory, "allow_sets", "must be a mapping of graph name to AllowSet, "
                                              f"not {type(allow_sets).__name__}")
        for name, allow in allow_sets.items():
            if not isinstance(name, str):
                raise _bad(factory, "allow_sets", f"keys must be graph names, not {type(name).__name__}")
            if not isinstance(allow, AllowSet):
                raise _bad(factory, "allow_sets",
                           f"[{name!r}] must be an AllowSet, not {type(allow).__name__}")
    if graph is not None and (not isinstance(graph, str) or not graph):
        raise _bad(factory, "graph", f"must be a non-empty graph name or None, not {type(graph).__name__}")
    if judge_config is not None and not isinstance(judge_config, JudgeConfig):
        raise _bad(factory, "judge_config",
                   f"must be a liveguard JudgeConfig, not {type(judge_config).__name__}")


def _check_gate(factory: str, *, window: object, min_runs: object, pass_rate: object, judges: object) -> None:
    """The gate's bounds (``decide``'s), checked when the evaluator is built."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise _bad(factory, "window", f"must be an int >= 1, got {window!r}")
    if isinstance(min_runs, bool) or not isinstance(min_runs, int) or min_runs < 0:
        raise _bad(factory, "min_runs", f"must be an int >= 0, got {min_runs!r}")
    if (isinstance(pass_rate, bool) or not isinstance(pass_rate, int | float)
            or not math.isfinite(pass_rate) or not 0.0 <= pass_rate <= 1.0):
        raise _bad(factory, "pass_rate", f"must be a number within [0, 1], got {pass_rate!r}")
    if not isinstance(judges, bool):
        raise _bad(factory, "judges", f"must be True or False, got {type(judges).__name__}")


def _read(graph: str | None, run: Any, outputs: Any) -> Trajectory:
    """The run tree when given (LangSmith), else the message list (openevals)."""
    if run is not None:
        return run_to_trajectory(run, graph=graph)
    if outputs is not None:
        return trajectory_from_messages(outputs, graph=graph)
    raise TypeError("an evaluator needs a run (LangSmith: evaluator(run, example)) or "
                    "outputs=<message list> (openevals: evaluator(outputs=...))")


Score = Callable[[Trajectory], EvaluatorResult]
AsyncScore = Callable[[Trajectory], Coroutine[Any, Any, EvaluatorResult]]


def _run_evaluator(name: str, graph: str | None, score: Score) -> Evaluator:
    def evaluator(
        run: Any = None, example: Any = None, *, inputs: Any = None, outputs: Any = None,
        reference_outputs: Any = None, **kwargs: Any,
    ) -> EvaluatorResult:
        return score(_read(graph, run, outputs))

    evaluator.__name__ = evaluator.__qualname__ = name
    return evaluator


def _async_run_evaluator(name: str, graph: str | None, score: AsyncScore) -> AsyncEvaluator:
    async def evaluator(
        run: Any = None, example: Any = None, *, inputs: Any = None, outputs: Any = None,
        reference_outputs: Any = None, **kwargs: Any,
    ) -> EvaluatorResult:
        return await score(_read(graph, run, outputs))

    evaluator.__name__ = evaluator.__qualname__ = name
    return evaluator


def _sync_to_async(score: Score) -> AsyncScore:
    async def ascore(trajectory: Trajectory) -> EvaluatorResult:
        return score(trajectory)

    return ascore


# -- liveness: deterministic ---------------------------------------------------------------------
def _liveness_score(
    policy: Policy | None, allow_sets: Mapping[str, AllowSet] | None
) -> Score:
    settings = Settings.from_env()  # the edge: read once, when the evaluator is built

    def score(trajectory: Trajectory) -> EvaluatorResult:
        default = policy if policy is not None else settings.policy(Policy())
        allow = (allow_sets or {}).get(trajectory.graph or "")
        violations = check_trajectory(trajectory.steps, policy_for(trajectory, default, settings=settings),
                                      allow)
        return liveness_result((v.code for v in violations if v.severity == "hard"),
                               has_steps=bool(trajectory.steps))

    return score


def create_liveness_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    graph: str | None = None,
) -> Evaluator:
    """Deterministic liveness (:func:`feedback_for`): 1.0 when no hard violation fires, else 0.0.

    ``graph`` names the target graph when the run does not say (it selects the allow-set).
    Returns an :class:`~liveguard.evaluate.results.EvaluatorResult`.
    """
    _check("create_liveness_evaluator", policy=policy, allow_sets=allow_sets, graph=graph)
    return _run_evaluator("liveness", graph, _liveness_score(policy, allow_sets))


def create_async_liveness_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    graph: str | None = None,
) -> AsyncEvaluator:
    """The async twin of :func:`create_liveness_evaluator` (the same scoring)."""
    _check("create_async_liveness_evaluator", policy=policy, allow_sets=allow_sets, graph=graph)
    return _async_run_evaluator("liveness", graph, _sync_to_async(_liveness_score(policy, allow_sets)))


# -- verdict: the full eval graph ----------------------------------------------------------------
async def _averdict(
    trajectory: Trajectory,
    policy: Policy | None,
    allow_sets: Mapping[str, AllowSet] | None,
    judge_config: JudgeConfig | None,
    *,
    settings: Settings,
    structural_only: bool = False,
) -> Verdict:
    """One run's verdict. ``structural_only`` is the caller's explicit ``judges=False``."""
    from liveguard.evaluate.eval_graph import aevaluate_trajectory, build_eval_graph
    from liveguard.evaluate.judges import JudgeClient

    default = policy if policy is not None else settings.policy(Policy())
    client = JudgeClient(judge_config if judge_config is not None else JudgeConfig.from_settings(settings))
    try:
        return await aevaluate_trajectory(
            trajectory,
            allow_set=(allow_sets or {}).get(trajectory.graph or ""),
            policy=policy_for(trajectory, default, settings=settings),
            settings=settings,
            graph=build_eval_graph(client=client, structural_only=structural_only, settings=settings),
        )
    finally:
        await client.aclose()


def _verdict_score(
    policy: Policy | None, allow_sets: Mapping[str, AllowSet] | None, judge_config: JudgeConfig | None
) -> AsyncScore:
    settings = Settings.from_env()  # the edge: read once, when the evaluator is built

    async def score(trajectory: Trajectory) -> EvaluatorResult:
        return verdict_result(await _averdict(trajectory, policy, allow_sets, judge_config,
                                               settings=settings))

    return score


def create_verdict_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judge_config: JudgeConfig | None = None,
    graph: str | None = None,
) -> Evaluator:
    """The full eval graph: score is the composite (or 1.0/0.0 when unjudged); comment the codes.

    Returns an :class:`~liveguard.evaluate.results.EvaluatorResult` (the verdict's evidence in
    ``metadata``). Not for use inside a running event loop: use
    :func:`create_async_verdict_evaluator`.
    """
    _check("create_verdict_evaluator", policy=policy, allow_sets=allow_sets, graph=graph,
           judge_config=judge_config)
    ascore = _verdict_score(policy, allow_sets, judge_config)
    return _run_evaluator("verdict", graph, lambda trajectory: asyncio.run(ascore(trajectory)))


def create_async_verdict_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judge_config: JudgeConfig | None = None,
    graph: str | None = None,
) -> AsyncEvaluator:
    """The async twin of :func:`create_verdict_evaluator` (the same scoring)."""
    _check("create_async_verdict_evaluator", policy=policy, allow_sets=allow_sets, graph=graph,
           judge_config=judge_config)
    return _async_run_evaluator("verdict", graph, _verdict_score(policy, allow_sets, judge_config))


# -- the release gate: a summary evaluator -------------------------------------------------------
def _gate_trajectories(
    graph: str | None, runs: Sequence[Any] | None, outputs: Sequence[Any] | None
) -> list[Trajectory]:
    if runs is not None:
        return [_read(graph, run, None) for run in runs]
    if outputs is not None:
        return [
            trajectory_from_messages(out, run_id=f"outputs[{i}]", graph=graph)
            for i, out in enumerate(outputs)
        ]
    raise TypeError("a summary evaluator needs runs (LangSmith) or outputs=[message lists] (openevals)")


def create_gate_evaluator(
    *,
    window: int = 50,
    min_runs: int = 10,
    pass_rate: float = GATE_PASS_RATE,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judges: bool = False,
    graph: str | None = None,
) -> GateEvaluator:
    """Summary evaluator: ``(runs, examples)`` or ``(*, outputs=[...])`` → the gate decision.

    Returns a :class:`~liveguard.evaluate.results.GateResult`: ``{"key": "release_gate", "value":
    "PROMOTE" | "HOLD" | "ROLLBACK", "score", "comment", "metadata"}`` (:func:`gate_feedback`).
    Judges are off unless ``judges=True``.
    """
    ascore = _gate_score("create_gate_evaluator", window=window, min_runs=min_runs,
                         pass_rate=pass_rate, policy=policy, allow_sets=allow_sets, judges=judges,
                         graph=graph)

    def release_gate(
        runs: Sequence[Any] | None = None, examples: Sequence[Any] | None = None, *,
        inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
        reference_outputs: Sequence[Any] | None = None,
    ) -> GateResult:
        return asyncio.run(ascore(_gate_trajectories(graph, runs, outputs)))

    return release_gate


def create_async_gate_evaluator(
    *,
    window: int = 50,
    min_runs: int = 10,
    pass_rate: float = GATE_PASS_RATE,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judges: bool = False,
    graph: str | None = None,
) -> AsyncGateEvaluator:
    """The async twin of :func:`create_gate_evaluator` (the same scoring)."""
    ascore = _gate_score("create_async_gate_evaluator", window=window, min_runs=min_runs,
                         pass_rate=pass_rate, policy=policy, allow_sets=allow_sets, judges=judges,
                         graph=graph)

    async def release_gate(
        runs: Sequence[Any] | None = None, examples: Sequence[Any] | None = None, *,
        inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
        reference_outputs: Sequence[Any] | None = None,
    ) -> GateResult:
        return await ascore(_gate_trajectories(graph, runs, outputs))

    return release_gate


def _gate_score(
    factory: str,
    *,
    window: int,
    min_runs: int,
    pass_rate: float,
    policy: Policy | None,
    allow_sets: Mapping[str, AllowSet] | None,
    judges: bool,
    graph: str | None,
) -> Callable[[list[Trajectory]], Coroutine[Any, Any, GateResult]]:
    _check(factory, policy=policy, allow_sets=allow_sets, graph=graph)
    _check_gate(factory, window=window, min_runs=min_runs, pass_rate=pass_rate, judges=judges)
    # judges=False is an explicit structural-only evaluation: no judge is called, and a
    # clean run may pass on the deterministic floor (the output says "structural only").
    settings = Settings.from_env()  # the edge: read once, when the evaluator is built
    config = None if judges else JudgeConfig.from_settings(settings).model_copy(update={"kill_switch": True})

    async def score(trajectories: list[Trajectory]) -> GateResult:
        verdicts = [await _averdict(t, policy, allow_sets, config, settings=settings,
                                     structural_only=not judges)
                    for t in trajectories]
        return gate_result(decide(verdicts, window=window, min_runs=min_runs, pass_rate=pass_rate))

    return score
