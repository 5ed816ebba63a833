"""One run's Monitor with the live guards' two promises: act on the first violation,
and stand down (logged, never raised) when the guard itself fails."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from liveguard.errors import LivenessError
from liveguard.model import Step, Violation
from liveguard.monitor import Monitor
from liveguard.policy import Policy
from liveguard.thread_guard import Decider, SeverityFloor, log_guard_failure

if TYPE_CHECKING:
    from liveguard.allowset import AllowSet

__all__ = ["RunGuard"]


class RunGuard:
    """One run's Monitor, with the live guards' two promises built in.

    * ``check(produce)`` observes the steps ``produce()`` returns and gives back the first
      violation the guard must act on (``None`` in ``warn`` mode, which logs instead).
    * Any exception from ``produce`` or the Monitor, other than a
      :class:`~liveguard.errors.LivenessError`, disables this guard for the rest of the
      run and is logged by code and exception type only: the guarded agent runs on.

    Thread-safe (tool calls of one agent turn may run in parallel threads).
    """

    __slots__ = ("_allow_set", "_lock", "_monitor", "_policy", "decider", "disabled")

    @property
    def monitor(self) -> Monitor | None:
        """The Monitor (None before the first step)."""
        return self._monitor

    def __init__(
        self,
        policy: Policy,
        allow_set: AllowSet | None = None,
        *,
        severity: SeverityFloor = "hard",
        warn: bool = False,
        monitor: Monitor | None = None,
        decider: Decider | None = None,
    ) -> None:
        self._policy = policy
        self._allow_set = allow_set
        self.decider = decider or Decider("warn" if warn else "error", severity)
        self._monitor: Monitor | None = monitor
        self._lock = threading.Lock()
        self.disabled = False

    @property
    def steps_seen(self) -> int:
        return 0 if self._monitor is None else self._monitor.steps_seen

    def check(self, produce: Callable[[], Iterable[Step]]) -> Violation | None:
        """Observe the steps ``produce()`` builds; the first violation to act on, if any."""
        with self._lock:
            if self.disabled:
                return None
            try:
                monitor = self._monitor
                if monitor is None:
                    monitor = self._monitor = Monitor(self._policy, self._allow_set)
                found: list[Violation] = []
                for step in produce():
                    found += monitor.observe(step)
            except LivenessError:
                raise
            except Exception as exc:
                self._stand_down(exc)
                return None
            return self._act(found)

    def finish(self) -> Violation | None:
        """End of run: findings only a whole run shows (e.g. ``dead_end``)."""
        with self._lock:
            if self.disabled or self._monitor is None:
                return None
            try:
                found = self._monitor.finish()
            except Exception as exc:
                self._stand_down(exc)
                return None
            return self._act(found)

    def _act(self, found: list[Violation]) -> Violation | None:
        if not found:
            return None
        before = self.decider.seen
        stop = self.decider.decide(found)
        if stop is None and self.decider.seen > before:
            self._rearm()
        return stop

    def _rearm(self) -> None:
        """``"continue"`` let a violation pass: fresh windows, so a loop that goes on fires again.

        Each rule fires once on its crossing; without fresh windows a loop that continues
        would never reach the ceiling. Step indices go on from where they were.
        """
        old = self._monitor
        if old is None:
            return
        fresh = Monitor(self._policy, self._allow_set)
        snapshot = fresh.snapshot()
        snapshot["n"] = old.steps_seen
        fresh.load(snapshot)
        self._monitor = fresh

    def _stand_down(self, exc: Exception) -> None:
        self.disabled = True
        log_guard_failure(exc, self.steps_seen)
