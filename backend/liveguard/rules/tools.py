"""tool_no_progress: the same (tool, canonical args, result) repeated in a window of tool steps."""

from __future__ import annotations

from collections import deque

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import TOOL, Observation, prefix

__all__ = ["ToolNoProgress"]


class ToolNoProgress:
    """Fires when a tool signature reaches its repeat threshold within the tool window.

    The signature includes the result (or error), so a poll that goes running,
    running, done never fires, and a retry whose error changes is progress.
    Non-retryable failures (``"retryable": false``) fire sooner. Per-tool
    overrides set other thresholds or windows, or exempt pollers.
    """

    code = "tool_no_progress"

    kinds = (TOOL,)

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        widest = max([policy.tool_window] + [t.window or 0 for t in policy.tools.values()])
        self._order: deque[tuple[int, str]] = deque(maxlen=widest)
        self._seen: dict[str, deque[tuple[int, int]]] = {}
        self._ordinal = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != TOOL or obs.tool is None:
            return None
        ordinal = self._ordinal = self._ordinal + 1
        order, seen, sig = self._order, self._seen, obs.key
        if len(order) == order.maxlen:
            _, old = order[0]
            positions = seen[old]
            positions.popleft()
            if not positions:
                del seen[old]
        order.append((ordinal, sig))
        mine = seen.get(sig)
        if mine is None:
            mine = seen[sig] = deque()
        mine.append((ordinal, obs.index))
        positions = mine
        if len(positions) == 1:
            return None
        limits = self._policy.tool_limits(obs.tool)
        if limits is None:
            return None
        repeats, window, nonretryable = limits
        threshold = nonretryable if obs.nonretryable else repeats
        recent = [index for o, index in positions if o > ordinal - window]
        if len(recent) != threshold:
            return None
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=obs.node,
                count=len(recent),
                detail={
                    "tool": obs.tool,
                    "digest": prefix(sig),
                    "window": window,
                    "threshold": threshold,
                    "nonretryable": obs.nonretryable,
                    "steps": recent,
                },
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None
