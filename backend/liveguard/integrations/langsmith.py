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
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from liveguard.allowset import AllowSet
from liveguard.errors import TrajectoryReadError
from liveguard.gate import GATE_PASS_RATE, decide
from liveguard.judges import JudgeConfig
from liveguard.messages import field
from liveguard.model import Trajectory, Verdict
from liveguard.monitor import check_trajectory
from liveguard.policy import Policy
from liveguard.readers.langsmith import _source_of, run_to_trajectory
from liveguard.readers.message_list import trajectory_from_messages
from liveguard.scoring import policy_for

if TYPE_CHECKING:
    from liveguard.gate import GateDecision

__all__ = [
    "GATE_SCORES",
    "LIVENESS_KEY",
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
GATE_SCORES: Mapping[str, float] = {"PROMOTE": 1.0, "HOLD": 0.5, "ROLLBACK": 0.0, "REFUSE": 0.0}
"""The gate decision as a number, next to the categorical ``value``."""

Evaluator = Callable[..., dict[str, Any]]
AsyncEvaluator = Callable[..., Awaitable[dict[str, Any]]]


# ============================================================================ feedback


def feedback_for(verdict: Verdict) -> dict[str, Any]:
    """The ``liveness`` feedback of a verdict: ``{"key", "score", "comment"}``.

    Liveness is the deterministic floor only: score 0 when any hard violation fired, else
    1; the comment lists the hard codes (``"ok"`` when none). A run with no steps (a root
    run read without its child runs) is missing evidence: score 0, comment
    ``missing:no_steps``. Judge scores are not part of
    it (they are the ``verdict`` evaluator's). The CLI's ``--push-feedback`` and the
    liveness evaluator both write exactly this.
    """
    return _liveness(verdict.hard_codes, has_steps="no_steps" not in verdict.missing)


_NO_STEPS: Final = ("missing:no_steps (the run has no steps: a root run without its child runs, "
                    "read it with load_child_runs=True, and no outputs.messages)")


def _liveness(hard_codes: Iterable[str], *, has_steps: bool = True) -> dict[str, Any]:
    """Score 0 on a hard code, and 0 on a run with no steps (missing evidence is never "ok")."""
    hard = sorted(set(hard_codes))
    if not hard and not has_steps:
        return {"key": LIVENESS_KEY, "score": 0, "comment": _NO_STEPS}
    return {"key": LIVENESS_KEY, "score": 0 if hard else 1, "comment": ",".join(hard) or "ok"}


def gate_feedback(decision: GateDecision) -> dict[str, Any]:
    """The release gate's feedback: categorical ``value`` PROMOTE / HOLD / ROLLBACK."""
    return {
        "key": "release_gate",
        "value": decision.decision,
        "score": GATE_SCORES[decision.decision],
        "comment": f"{decision.decision}: " + "; ".join(decision.reasons),
    }


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
    session_id: Any = None,
) -> None:
    """Write one feedback row on a run: ``client.create_feedback(run_id, key, ...)``.

    Pass the run's project (``session_id``, in ``Trajectory.metadata["session_id"]`` for
    runs read from LangSmith): langsmith 0.15 warns that run feedback without it is
    deprecated.
    """
    client.create_feedback(run_id=run_id, key=key, score=score, comment=comment,
                           session_id=session_id)


# ============================================================================ evaluators


def _check(allow_sets: Mapping[str, AllowSet] | None, policy: Policy | None) -> None:
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(f"policy must be a liveguard Policy, not {type(policy).__name__}")
    for name, allow in (allow_sets or {}).items():
        if not isinstance(allow, AllowSet):
            raise TypeError(f"allow_sets[{name!r}] must be an AllowSet, not {type(allow).__name__}")


def _read(graph: str | None, run: Any, outputs: Any) -> Trajectory:
    """The run tree when given (LangSmith), else the message list (openevals)."""
    if run is not None:
        return run_to_trajectory(run, graph=graph)
    if outputs is not None:
        return trajectory_from_messages(outputs, graph=graph)
    raise TypeError("an evaluator needs a run (LangSmith: evaluator(run, example)) or "
                    "outputs=<message list> (openevals: evaluator(outputs=...))")


Score = Callable[[Trajectory], dict[str, Any]]
AsyncScore = Callable[[Trajectory], Coroutine[Any, Any, dict[str, Any]]]


def _run_evaluator(name: str, graph: str | None, score: Score) -> Evaluator:
    def evaluator(
        run: Any = None, example: Any = None, *, inputs: Any = None, outputs: Any = None,
        reference_outputs: Any = None, **kwargs: Any,
    ) -> dict[str, Any]:
        return score(_read(graph, run, outputs))

    evaluator.__name__ = evaluator.__qualname__ = name
    return evaluator


def _async_run_evaluator(name: str, graph: str | None, score: AsyncScore) -> AsyncEvaluator:
    async def evaluator(
        run: Any = None, example: Any = None, *, inputs: Any = None, outputs: Any = None,
        reference_outputs: Any = None, **kwargs: Any,
    ) -> dict[str, Any]:
        return await score(_read(graph, run, outputs))

    evaluator.__name__ = evaluator.__qualname__ = name
    return evaluator


def _sync_to_async(score: Score) -> AsyncScore:
    async def ascore(trajectory: Trajectory) -> dict[str, Any]:
        return score(trajectory)

    return ascore


# -- liveness: deterministic ---------------------------------------------------------------------
def _liveness_score(
    policy: Policy | None, allow_sets: Mapping[str, AllowSet] | None
) -> Score:
    def score(trajectory: Trajectory) -> dict[str, Any]:
        default = policy if policy is not None else Policy.from_env()
        allow = (allow_sets or {}).get(trajectory.graph or "")
        violations = check_trajectory(trajectory.steps, policy_for(trajectory, default), allow)
        return _liveness((v.code for v in violations if v.severity == "hard"),
                         has_steps=bool(trajectory.steps))

    return score


def create_liveness_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    graph: str | None = None,
) -> Evaluator:
    """Deterministic liveness (:func:`feedback_for`): 1 when no hard violation fires, else 0.

    ``graph`` names the target graph when the run does not say (it selects the allow-set).
    """
    _check(allow_sets, policy)
    return _run_evaluator("liveness", graph, _liveness_score(policy, allow_sets))


def create_async_liveness_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    graph: str | None = None,
) -> AsyncEvaluator:
    """The async twin of :func:`create_liveness_evaluator` (the same scoring)."""
    _check(allow_sets, policy)
    return _async_run_evaluator("liveness", graph, _sync_to_async(_liveness_score(policy, allow_sets)))


# -- verdict: the full eval graph ----------------------------------------------------------------
async def _averdict(
    trajectory: Trajectory,
    policy: Policy | None,
    allow_sets: Mapping[str, AllowSet] | None,
    judge_config: JudgeConfig | None,
    structural_only: bool = False,
) -> Verdict:
    """One run's verdict. ``structural_only`` is the caller's explicit ``judges=False``."""
    from liveguard.eval_graph import aevaluate_trajectory, build_eval_graph
    from liveguard.judges import JudgeClient

    default = policy if policy is not None else Policy.from_env()
    client = JudgeClient(judge_config if judge_config is not None else JudgeConfig.from_env())
    try:
        return await aevaluate_trajectory(
            trajectory,
            allow_set=(allow_sets or {}).get(trajectory.graph or ""),
            policy=policy_for(trajectory, default),
            graph=build_eval_graph(client=client, structural_only=structural_only),
        )
    finally:
        await client.aclose()


def _verdict_feedback(verdict: Verdict) -> dict[str, Any]:
    score = verdict.composite if verdict.composite is not None else float(verdict.passed)
    codes = ",".join(verdict.hard_codes) or "none"
    return {"key": "verdict", "score": score,
            "comment": f"{verdict.reason}; hard={codes}; judges={verdict.judges_skipped or 'ran'}"}


def _verdict_score(
    policy: Policy | None, allow_sets: Mapping[str, AllowSet] | None, judge_config: JudgeConfig | None
) -> AsyncScore:
    async def score(trajectory: Trajectory) -> dict[str, Any]:
        return _verdict_feedback(await _averdict(trajectory, policy, allow_sets, judge_config))

    return score


def _check_judges(judge_config: JudgeConfig | None) -> None:
    if judge_config is not None and not isinstance(judge_config, JudgeConfig):
        raise TypeError("judge_config must be a liveguard JudgeConfig")


def create_verdict_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judge_config: JudgeConfig | None = None,
    graph: str | None = None,
) -> Evaluator:
    """The full eval graph: score is the composite (or 1/0 when unjudged); comment the codes.

    Not for use inside a running event loop: use :func:`create_async_verdict_evaluator`.
    """
    _check(allow_sets, policy)
    _check_judges(judge_config)
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
    _check(allow_sets, policy)
    _check_judges(judge_config)
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
) -> Callable[..., dict[str, Any]]:
    """Summary evaluator: ``(runs, examples)`` or ``(*, outputs=[...])`` → the gate decision.

    Returns ``{"key": "release_gate", "value": "PROMOTE" | "HOLD" | "ROLLBACK", "score",
    "comment"}`` (:func:`gate_feedback`). Judges are off unless ``judges=True``.
    """
    ascore = _gate_score(window=window, min_runs=min_runs, pass_rate=pass_rate, policy=policy,
                         allow_sets=allow_sets, judges=judges)

    def release_gate(
        runs: Sequence[Any] | None = None, examples: Sequence[Any] | None = None, *,
        inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
        reference_outputs: Sequence[Any] | None = None,
    ) -> dict[str, Any]:
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
) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The async twin of :func:`create_gate_evaluator` (the same scoring)."""
    ascore = _gate_score(window=window, min_runs=min_runs, pass_rate=pass_rate, policy=policy,
                         allow_sets=allow_sets, judges=judges)

    async def release_gate(
        runs: Sequence[Any] | None = None, examples: Sequence[Any] | None = None, *,
        inputs: Sequence[Any] | None = None, outputs: Sequence[Any] | None = None,
        reference_outputs: Sequence[Any] | None = None,
    ) -> dict[str, Any]:
        return await ascore(_gate_trajectories(graph, runs, outputs))

    return release_gate


def _gate_score(
    *,
    window: int,
    min_runs: int,
    pass_rate: float,
    policy: Policy | None,
    allow_sets: Mapping[str, AllowSet] | None,
    judges: bool,
) -> Callable[[list[Trajectory]], Coroutine[Any, Any, dict[str, Any]]]:
    _check(allow_sets, policy)
    decide([], window=window, min_runs=min_runs, pass_rate=pass_rate)  # validates the bounds
    # judges=False is an explicit structural-only evaluation: no judge is called, and a
    # clean run may pass on the deterministic floor (the output says "structural only").
    config = None if judges else JudgeConfig.from_env().model_copy(update={"kill_switch": True})

    async def score(trajectories: list[Trajectory]) -> dict[str, Any]:
        verdicts = [await _averdict(t, policy, allow_sets, config, structural_only=not judges)
                    for t in trajectories]
        return gate_feedback(decide(verdicts, window=window, min_runs=min_runs, pass_rate=pass_rate))

    return score
