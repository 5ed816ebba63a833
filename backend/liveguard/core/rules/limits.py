"""step_limit: run-level and thread-level ceilings on observed steps.

As LangChain's call-limit middlewares: ``run_steps`` counts the steps of one invocation
(reset by :meth:`~liveguard.core._monitor.Monitor.new_run`), ``thread_steps`` the steps of the
whole thread (kept in the Monitor's snapshot). Built only when the policy sets a limit.
"""

from __future__ import annotations

from typing import Any

from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import Observation, Pack, RuleBase, Unpack

__all__ = ["StepLimits"]


class StepLimits(RuleBase):
    """Fires once per scope, on the first step beyond ``run_steps`` / ``thread_steps``."""

    code = "step_limit"

    __slots__ = ("_run", "_run_limit", "_thread_limit", "_thread_steps")

    def __init__(self, policy: Policy) -> None:
        # A missing limit is -1: a count (>= 1 once a step is seen) never equals it + 1.
        self._run_limit = -1 if policy.run_steps is None else policy.run_steps
        self._thread_limit = -1 if policy.thread_steps is None else policy.thread_steps
        self._run = 0
        self._thread_steps = 0

    def new_run(self) -> None:
        self._run = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.node == "__input__":  # the user's turn (liveguard.live.thread_guard.INPUT_NODE)
            return None
        run = self._run = self._run + 1
        thread = self._thread_steps = self._thread_steps + 1
        if run != self._run_limit + 1 and thread != self._thread_limit + 1:
            return None
        found: list[Violation] = []
        for scope, count, limit in (
            ("run", run, self._run_limit),
            ("thread", thread, self._thread_limit),
        ):
            if limit >= 0 and count == limit + 1:
                found.append(Violation(
                    code=self.code, severity="hard", step=obs.index, node=obs.node, count=count,
                    detail={"scope": scope, "limit": limit},
                ))
        return found

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        return [self._run, self._thread_steps]

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._run, self._thread_steps = data
