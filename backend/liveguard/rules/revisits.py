"""node_revisit_cycle: a node visited more than its limit inside the sliding window."""

from __future__ import annotations

from typing import Any

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import Observation, Pack, Unpack, Window

__all__ = ["NodeRevisits"]


class NodeRevisits:
    """Counts visits per node over the last ``policy.window`` steps (all kinds).

    Fires once on the crossing (the visit that makes the count exceed the limit),
    and again only after the count has dropped back and crossed anew.
    """

    code = "node_revisit_cycle"

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._window: Window[str] = Window(policy.window)
        self._counts: dict[str, int] = {}
        self._limits: dict[str, int | None] = {}

    def observe(self, obs: Observation) -> list[Violation] | None:
        window, counts, node = self._window, self._counts, obs.node
        if len(window) == window.maxlen:
            old = window[0]
            left = counts[old] - 1
            if left:
                counts[old] = left
            else:
                del counts[old]
        window.append(node)
        count = counts.get(node, 0) + 1
        counts[node] = count
        try:
            limit = self._limits[node]
        except KeyError:
            limit = self._limits[node] = self._policy.revisit_limit(node)
            if len(self._limits) > 4096:  # unbounded node names: keep the cache bounded
                self._limits.clear()
        if limit is None or count != limit + 1:
            return None
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=node,
                count=count,
                detail={"window": window.maxlen, "limit": limit},
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        return [pack(node) for node in self._window]

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._window.clear()
        self._counts.clear()
        for packed in data:
            window, counts = self._window, self._counts
            if len(window) == window.maxlen:
                old = window[0]
                counts[old] -= 1
                if not counts[old]:
                    del counts[old]
            node = unpack(packed)
            window.append(node)
            counts[node] = counts.get(node, 0) + 1
