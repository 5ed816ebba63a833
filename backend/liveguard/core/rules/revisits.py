"""node_revisit_cycle: a node visited more than its limit inside the sliding window."""

from __future__ import annotations

from typing import Any, Final

from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import Observation, Pack, RuleBase, Unpack

__all__ = ["NodeRevisits"]

_UNSET: Final[Any] = object()
_MAX_CACHED: Final = 4096
"""Bound on the per-rule cache of node limits (node names are not bounded)."""


class NodeRevisits(RuleBase):
    """Counts visits per node over the last ``policy.window`` steps (all kinds).

    Fires once on the crossing (the visit that makes the count exceed the limit),
    and again only after the count has dropped back and crossed anew. The window is a
    plain list of node names; a node's count is counted in it when the node has a limit
    (an exempt node, such as a tool agent's ``model`` and ``tools``, is never counted).
    """

    __slots__ = ("_limits", "_policy", "_size", "_window")

    code = "node_revisit_cycle"

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._size = policy.window
        self._window: list[str] = []
        self._limits: dict[str, int | None] = {}

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.user:  # a user's request is not the agent revisiting a node (live: never acted on)
            return None
        window, node = self._window, obs.node
        if len(window) >= self._size:
            del window[0]
        window.append(node)
        limit = self._limits.get(node, _UNSET)
        if limit is _UNSET:
            limit = self._limit(node)
        if limit is None:
            return None
        count = 0  # window.count(node), compiled: each name compared as a str
        for name in window:
            if name == node:
                count += 1
        if count != limit + 1:
            return None
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=node,
                count=count,
                detail={"window": self._size, "limit": limit},
            )
        ]

    def _limit(self, node: str) -> int | None:
        limits = self._limits
        limit = limits[node] = self._policy.revisit_limit(node)
        if len(limits) > _MAX_CACHED:  # unbounded node names: keep the cache bounded
            limits.clear()
        return limit

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        return [pack(node) for node in self._window]

    def restore(self, data: Any, unpack: Unpack) -> None:
        window = self._window
        window.clear()
        for packed in data:
            if len(window) >= self._size:  # a narrower window than the saved one
                del window[0]
            window.append(unpack(packed))
