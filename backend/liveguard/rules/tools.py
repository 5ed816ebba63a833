"""tool_no_progress: the same (tool, canonical args, result) repeated over recent tool turns.

A **turn** is the tool calls of one model message. The Monitor hands a parallel turn's
tool steps over together, in a canonical order, once the turn is complete (see
:class:`~liveguard.monitor.Monitor`); a tool step with no tool-call request before it is a
turn of its own. So a sequential agent has one tool step per turn, and for it every
threshold and window below reads exactly as "tool steps".
"""

from __future__ import annotations

from typing import Any

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import TOOL, Observation, Pack, Unpack, Window, prefix

__all__ = ["ToolNoProgress"]

_MAX_ENTRIES = 256
"""Hard bound on remembered (turn, signature) pairs, whatever a turn's width."""


class ToolNoProgress:
    """Fires when a tool signature reaches its repeat threshold within the window of turns.

    The signature includes the result (or error), so a poll that goes running,
    running, done never fires, and a retry whose error changes is progress.
    Non-retryable failures (``"retryable": false``) fire sooner. Per-tool
    overrides set other thresholds or windows, or exempt pollers.

    Parallel turns, precisely:

    * a signature counts at most once per turn (two identical calls in one message are
      one attempt);
    * a turn **makes progress** when at least one of its signatures is not among the
      signatures of the previous ``window`` turns (the widest tool window);
    * an appearance of a signature **counts** when the signature is new in that turn,
      or when the turn made no progress. A constant side call (``whoami()``) issued beside
      calls that bring something new is therefore never counted after its first
      appearance; once every call of a turn repeats, all of them count again;
    * a signature fires when its counted appearances in the last ``window`` turns reach
      the threshold, at the index of its own step in the turn.

    The result depends only on the set of signatures per turn, never on the order in
    which parallel calls finished.
    """

    code = "tool_no_progress"

    kinds = (TOOL,)

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._widest = max([policy.tool_window] + [t.window or 0 for t in policy.tools.values()])
        # (turn, signature, step index, counted): one entry per distinct signature per turn
        self._entries: Window[tuple[int, str, int, bool]] = Window(_MAX_ENTRIES)
        self._turn: list[Observation] = []
        self._turns = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != TOOL or obs.tool is None:
            return None
        self._turn.append(obs)
        if not obs.last:
            return None
        turn, self._turn = self._turn, []
        return self._close(turn)

    def _close(self, turn: list[Observation]) -> list[Violation] | None:
        number = self._turns = self._turns + 1
        entries, oldest = self._entries, number - self._widest
        while entries and entries[0][0] <= oldest:
            entries.popleft()
        known = {sig for _, sig, _, _ in entries}
        mine: dict[str, Observation] = {}
        for obs in turn:
            mine.setdefault(obs.key, obs)
        progress = any(sig not in known for sig in mine)
        found: list[Violation] | None = None
        for sig, obs in mine.items():
            counted = sig not in known or not progress
            entries.append((number, sig, obs.index, counted))
            if not counted:
                continue
            hit = self._check(number, sig, obs)
            if hit is not None:
                found = [*found, hit] if found else [hit]
        return found

    def _check(self, number: int, sig: str, obs: Observation) -> Violation | None:
        limits = self._policy.tool_limits(obs.tool or "")
        if limits is None:
            return None
        repeats, window, nonretryable = limits
        threshold = nonretryable if obs.nonretryable else repeats
        recent = [index for t, s, index, c in self._entries if c and s == sig and t > number - window]
        if len(recent) != threshold:
            return None
        return Violation(
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

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        entries = [[t, pack(sig), index, int(c)] for t, sig, index, c in self._entries]
        return [self._turns, entries, [obs.pack(pack) for obs in self._turn]]

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._turns, entries, turn = data
        self._entries.clear()
        for t, sig, index, c in entries:
            self._entries.append((t, unpack(sig), index, bool(c)))
        self._turn = [Observation.unpack(obs, unpack) for obs in turn]
        for obs in self._turn:
            obs.last = False
