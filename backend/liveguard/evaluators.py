"""LangSmith evaluators, as keyword-only factories that validate when built.

* :func:`create_liveness_evaluator`: deterministic, ``(run, example) -> {"key": "liveness",
  "score": 0 or 1, "comment": codes}``: the Monitor over the run's tree.
* :func:`create_verdict_evaluator`: the full eval graph (judges when a key is configured).
* :func:`create_gate_evaluator`: a summary evaluator returning the release-gate decision.

Each factory returns a plain callable; the scoring itself is the library's
(``check_trajectory`` / ``evaluate_trajectory`` / ``decide``), kept apart from tracing.
Runs are read with :func:`liveguard.langsmith.run_to_trajectory`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from liveguard.allowset import AllowSet
from liveguard.gate import GATE_PASS_RATE, decide
from liveguard.judges import JudgeConfig
from liveguard.model import Trajectory, Verdict
from liveguard.monitor import check_trajectory
from liveguard.policy import Policy
from liveguard.scoring import policy_for
from liveguard.settings import Settings

__all__ = ["create_gate_evaluator", "create_liveness_evaluator", "create_verdict_evaluator"]

GATE_SCORES: Mapping[str, float] = {"PROMOTE": 1.0, "HOLD": 0.5, "ROLLBACK": 0.0, "REFUSE": 0.0}

Evaluator = Callable[..., dict[str, Any]]


def _check(allow_sets: Mapping[str, AllowSet] | None, policy: Policy | None) -> None:
    if policy is not None and not isinstance(policy, Policy):
        raise TypeError(f"policy must be a liveguard Policy, not {type(policy).__name__}")
    for name, allow in (allow_sets or {}).items():
        if not isinstance(allow, AllowSet):
            raise TypeError(f"allow_sets[{name!r}] must be an AllowSet, not {type(allow).__name__}")


def _reader(graph: str | None) -> Callable[[Any], Trajectory]:
    from liveguard.langsmith import run_to_trajectory

    def read(run: Any) -> Trajectory:
        return run_to_trajectory(run, graph=graph)

    return read


def create_liveness_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    graph: str | None = None,
) -> Evaluator:
    """Deterministic liveness: 1 when no hard violation fires on the run's tree, else 0.

    ``graph`` names the target graph when the run does not say (it selects the allow-set).
    """
    _check(allow_sets, policy)
    read = _reader(graph)
    settings = Settings.from_env()  # the edge: the environment is read once, here
    default = policy if policy is not None else settings.policy()

    def liveness(run: Any, example: Any = None) -> dict[str, Any]:
        trajectory = read(run)
        allow = (allow_sets or {}).get(trajectory.graph or "")
        violations = check_trajectory(trajectory.steps, policy_for(trajectory, default, None, settings),
                                      allow)
        hard = sorted({v.code for v in violations if v.severity == "hard"})
        return {"key": "liveness", "score": 0 if hard else 1, "comment": ",".join(hard) or "ok"}

    return liveness


def create_verdict_evaluator(
    *,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judge_config: JudgeConfig | None = None,
    graph: str | None = None,
) -> Evaluator:
    """The full eval graph: score is the composite (or 1/0 when unjudged); comment the codes."""
    _check(allow_sets, policy)
    if judge_config is not None and not isinstance(judge_config, JudgeConfig):
        raise TypeError("judge_config must be a liveguard JudgeConfig")
    read = _reader(graph)
    settings = Settings.from_env()  # the edge: the environment is read once, here

    def verdict_of(run: Any, example: Any = None) -> dict[str, Any]:
        verdict = _verdict(read(run), policy, allow_sets, judge_config, settings)
        score = verdict.composite if verdict.composite is not None else float(verdict.passed)
        codes = ",".join(verdict.hard_codes) or "none"
        return {"key": "verdict", "score": score,
                "comment": f"{verdict.reason}; hard={codes}; judges={verdict.judges_skipped or 'ran'}"}

    return verdict_of


def create_gate_evaluator(
    *,
    window: int = 50,
    min_runs: int = 10,
    pass_rate: float = GATE_PASS_RATE,
    policy: Policy | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    judges: bool = False,
    graph: str | None = None,
) -> Evaluator:
    """Summary evaluator: ``(runs, examples) -> {"key": "release_gate", "score", "comment"}``.

    Score is 1 for PROMOTE, 0.5 for HOLD, 0 for ROLLBACK; the comment is the decision
    and its reasons. ``judges=False`` (the default) is a structural-only evaluation, like
    the CLI's ``--no-judges``; with ``judges=True`` an unjudged run holds the gate.
    """
    _check(allow_sets, policy)
    decide([], window=window, min_runs=min_runs, pass_rate=pass_rate)  # validates the bounds
    read = _reader(graph)
    settings = Settings.from_env()  # the edge: the environment is read once, here

    def release_gate(runs: Sequence[Any], examples: Sequence[Any] | None = None) -> dict[str, Any]:
        verdicts = [_verdict(read(run), policy, allow_sets, None, settings, structural_only=not judges)
                    for run in runs]
        decision = decide(verdicts, window=window, min_runs=min_runs, pass_rate=pass_rate)
        return {"key": "release_gate", "score": GATE_SCORES[decision.decision],
                "comment": f"{decision.decision}: " + "; ".join(decision.reasons)}

    return release_gate


def _verdict(
    trajectory: Trajectory,
    policy: Policy | None,
    allow_sets: Mapping[str, AllowSet] | None,
    judge_config: JudgeConfig | None,
    settings: Settings,
    *,
    structural_only: bool = False,
) -> Verdict:
    from liveguard.eval_graph import evaluate_trajectory
    from liveguard.judges import JudgeClient

    default = policy if policy is not None else settings.policy()
    return evaluate_trajectory(
        trajectory,
        allow_set=(allow_sets or {}).get(trajectory.graph or ""),
        policy=policy_for(trajectory, default, None, settings),
        client=JudgeClient(judge_config) if judge_config is not None else None,
        structural_only=structural_only,
        settings=settings,
    )
