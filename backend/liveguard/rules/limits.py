"""step_limit: run-level and thread-level ceilings on observed steps.

As LangChain's call-limit middlewares: ``run_steps`` counts the steps of one invocation
(reset by :meth:`~liveguard.monitor.Monitor.new_run`), ``thread_steps`` the steps of the
whole thread (kept in the Monitor's snapshot). Built only when the policy sets a limit.
"""

from __future__ import annotations

from typing import Any

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import Observation, Pack, Unpack

__all__ = ["StepLimits"]


class StepLimits:
    """Fires once per scope, on the first step beyond ``run_steps`` / ``thread_steps``."""

    code = "step_limit"

    def __init__(self, policy: Policy) -> None:
        self._run_limit = policy.run_steps
        self._thread_limit = policy.thread_steps
        self._run = 0
        self._thread_steps = 0

    def new_run(self) -> None:
        self._run = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        self._run += 1
        self._thread_steps += 1
        found: list[Violation] | None = None
        for scope, count, limit in (
            ("run", self._run, self._run_limit),
            ("thread", self._thread_steps, self._thread_limit),
        ):
            if limit is not None and count == limit + 1:
                hit = Violation(
                    code=self.code, severity="hard", step=obs.index, node=obs.node, count=count,
                    detail={"scope": scope, "limit": limit},
                )
                found = [*found, hit] if found else [hit]
        return found

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        return [self._run, self._thread_steps]

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._run, self._thread_steps = data
