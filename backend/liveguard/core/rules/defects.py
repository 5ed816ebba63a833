"""Defect rules (soft): patterns that are not loops but deserve a look.

``tool_entropy_collapse``: after a varied start (at least ``min_start_tools`` distinct
tools), the last ``recent`` tool calls all use a single tool. It can only be judged on
the whole run, so it reports from ``finish()``; its state is the last ``recent`` calls
and the set of tool names seen before them.
"""

from __future__ import annotations

from typing import Any

from liveguard.core.model import Violation
from liveguard.core.rules.base import TOOL, Observation, Pack, RuleBase, Unpack

__all__ = ["ToolEntropyCollapse"]


class ToolEntropyCollapse(RuleBase):
    """Soft: a run that used several tools ends hammering one.

    The tail is one flat list (index, node, tool, ...) of the last ``recent`` calls.
    """

    __slots__ = ("_calls", "_min_start", "_recent", "_size", "_start", "_tail")

    kinds = (TOOL,)

    def __init__(self, *, recent: int = 5, min_start_tools: int = 3) -> None:
        if recent < 1 or min_start_tools < 1:
            raise ValueError("recent and min_start_tools must be >= 1")
        self._recent = recent
        self._size = 3 * recent  # the tail's length when full
        self._min_start = min_start_tools
        self._tail: list[Any] = []
        self._start: set[str] = set()
        self._calls = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != TOOL or obs.tool is None:
            return None
        tail = self._tail
        if len(tail) >= self._size:
            self._start.add(tail[2])  # leaves the tail: part of the start now
            del tail[:3]
        tail.append(obs.index)  # one field at a time: no tuple built per step
        tail.append(obs.node)
        tail.append(obs.tool)
        self._calls += 1
        return None

    def finish(self) -> list[Violation] | None:
        if self._calls < self._recent + self._min_start or len(self._start) < self._min_start:
            return None
        tail = self._tail
        if len(set(tail[2::3])) != 1:
            return None
        index, node, tool = tail[-3:]
        return [
            Violation(
                code="tool_entropy_collapse", severity="soft", step=index, node=node,
                count=self._recent,
                detail={"tool": tool, "distinct_before": len(self._start), "recent": self._recent},
            )
        ]

    def snapshot(self, pack: Pack) -> Any:
        t = self._tail
        tail = [[t[i], pack(t[i + 1]), pack(t[i + 2])] for i in range(0, len(t), 3)]
        # packed in name order, so the strings table never depends on the set's iteration order
        return [tail, sorted([pack(tool) for tool in sorted(self._start)]), self._calls]

    def restore(self, data: Any, unpack: Unpack) -> None:
        saved, start, self._calls = data
        tail = self._tail
        tail.clear()
        for index, node, tool in saved:
            if len(tail) >= self._size:
                del tail[:3]
            tail += (index, unpack(node), unpack(tool))
        self._start = {unpack(tool) for tool in start}
