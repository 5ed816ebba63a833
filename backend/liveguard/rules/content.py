"""Content rules: no_progress_stall, repeated_content and content_cycle.

Content is compared by digest: the step's summary if given, else its output.
Keys pair the node with the digest, so two nodes saying "OK" are not a repeat.
"""

from __future__ import annotations

from typing import Any

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import CONTENTLESS, MESSAGE, Observation, Pack, Unpack, Window, prefix

__all__ = ["ContentCycle", "RepeatedContent", "Stall"]


class Stall:
    """no_progress_stall: N consecutive message steps with identical node + content.

    Any other step in between (a tool step, a tool-call request, another node)
    breaks the run, so a poll that repeats once is not a stall.
    """

    code = "no_progress_stall"

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._prev: tuple[str, str] | None = None
        self._run = 0
        self._start = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != MESSAGE:
            self._prev = None
            return None
        current = (obs.node, obs.key)
        if current == self._prev:
            self._run += 1
        else:
            self._prev, self._run, self._start = current, 1, obs.index
            return None
        if self._run != self._policy.stall_limit(obs.node):
            return None
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=obs.node,
                count=self._run,
                detail={"digest": prefix(obs.key), "first_step": self._start},
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        prev = self._prev
        if prev is None:
            return None
        return [pack(prev[0]), pack(prev[1]), self._run, self._start]

    def restore(self, data: Any, unpack: Unpack) -> None:
        if data is None:
            self._prev, self._run, self._start = None, 0, 0
            return
        node, key, self._run, self._start = data
        self._prev = (unpack(node), unpack(key))


class RepeatedContent:
    """repeated_content: the same node + content N times in the last M message steps."""

    code = "repeated_content"

    kinds = (MESSAGE,)

    def __init__(self, policy: Policy) -> None:
        self._limit = policy.repeat
        self._window: Window[tuple[tuple[str, str], int]] = Window(policy.repeat_window)
        self._counts: dict[tuple[str, str], int] = {}

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != MESSAGE:
            return None
        window, counts = self._window, self._counts
        if len(window) == window.maxlen:
            old = window[0][0]
            left = counts[old] - 1
            if left:
                counts[old] = left
            else:
                del counts[old]
        key = (obs.node, obs.key)
        window.append((key, obs.index))
        count = counts.get(key, 0) + 1
        counts[key] = count
        if count != self._limit:
            return None
        steps = [index for k, index in window if k == key]
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=obs.node,
                count=count,
                detail={"digest": prefix(obs.key), "window": window.maxlen, "steps": steps},
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        return [[pack(node), pack(key), index] for (node, key), index in self._window]

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._window.clear()
        self._counts.clear()
        for node, key, index in data:
            if len(self._window) == self._window.maxlen:  # a narrower window than the saved one
                old = self._window[0][0]
                self._counts[old] -= 1
                if not self._counts[old]:
                    del self._counts[old]
            pair = (unpack(node), unpack(key))
            self._window.append((pair, index))
            self._counts[pair] = self._counts.get(pair, 0) + 1


class ContentCycle:
    """content_cycle: a block of 2–4 steps repeated back to back (A→B→A→B, A→B→C→A→B→C).

    Incremental: for each period p, ``match[p]`` counts how many consecutive
    positions equal the one p steps earlier. A block repeated r times shows as
    ``match[p] >= p * (r - 1)``. A message-only block needs ``cycle_repeats``; a
    block that holds tool steps or tool-call requests needs as many repetitions as
    the tool rule of its tools. Only the smallest active period fires, on the crossing.
    """

    code = "content_cycle"

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._periods = sorted(policy.cycle_periods)
        self._max = self._periods[-1]
        self._history: Window[tuple[str, str, int, str | None, int]] = Window(self._max)
        self._match = dict.fromkeys(range(1, self._max + 1), 0)

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind == CONTENTLESS:  # nothing to compare
            return None
        history, match = self._history, self._match
        item = (obs.node, obs.key, obs.kind, obs.tool, obs.index)
        size = len(history)
        for p in match:
            if p <= size:
                prev = history[size - p]
                match[p] = match[p] + 1 if prev[0] == item[0] and prev[1] == item[1] else 0
        history.append(item)
        fired: list[Violation] | None = None
        for p in self._periods:
            if match[p] < p:
                continue
            if any(match[q] >= q for q in range(1, p)):
                break  # a shorter period explains it (period 1 is a stall/repeat)
            repeats = self._repeats_needed(p)
            if repeats is not None and match[p] == p * (repeats - 1):
                block = history[-p:]
                fired = [
                    Violation(
                        code=self.code,
                        severity="hard",
                        step=obs.index,
                        node=obs.node,
                        count=repeats,
                        detail={
                            "period": p,
                            "repeats": repeats,
                            "first_step": obs.index - p * repeats + 1,
                            "nodes": [b[0] for b in block],
                            "digests": [prefix(b[1]) for b in block],
                        },
                    )
                ]
            break
        return fired

    def _repeats_needed(self, period: int) -> int | None:
        """Repetitions a block of this period must show; None when a tool in it is exempt."""
        needed = self._policy.cycle_repeats
        block = self._history[-period:]
        for _, _, kind, tool, _ in block:
            if kind == MESSAGE:
                continue
            limits = self._policy.tool_limits(tool) if tool else None
            if tool and limits is None:
                return None
            repeats = limits[0] if limits else self._policy.tool_repeats
            needed = max(needed, repeats)
        return needed

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        history = [
            [pack(node), pack(key), kind, -1 if tool is None else pack(tool), index]
            for node, key, kind, tool, index in self._history
        ]
        return [history, [self._match[p] for p in sorted(self._match)]]

    def restore(self, data: Any, unpack: Unpack) -> None:
        history, match = data
        self._history.clear()
        for node, key, kind, tool, index in history:
            self._history.append(
                (unpack(node), unpack(key), kind, None if tool < 0 else unpack(tool), index)
            )
        for p, value in zip(sorted(self._match), match, strict=False):
            self._match[p] = value
