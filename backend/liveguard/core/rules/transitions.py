"""Allow-set rules: illegal_transition, excessive_loop (hard) and dead_end (soft).

Added to the Monitor only when an allow-set is given. A legal back-edge never
fires; only hops the set does not list, nodes it does not know, visits above a
node's ceiling, and runs that finish where no edge leads to ``__end__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import Observation, Pack, RuleBase, Unpack

if TYPE_CHECKING:
    from liveguard.core.allowset import AllowSet

__all__ = ["TransitionRules"]

_START = "__start__"
_END = "__end__"


class TransitionRules(RuleBase):
    """Checks each hop against the allow-set and counts total visits per node."""

    __slots__ = ("_allowed", "_known", "_last", "_policy", "_prev", "_visits")

    def __init__(self, allow_set: AllowSet, policy: Policy) -> None:
        self._allowed = {node: frozenset(t) for node, t in allow_set.transitions.items()}
        self._known = allow_set.nodes
        self._policy = policy
        self._visits: dict[str, int] = {}
        self._prev = _START
        self._last: Observation | None = None

    def observe(self, obs: Observation) -> list[Violation] | None:
        found: list[Violation] | None = None
        node, prev = obs.node, self._prev
        if node not in self._allowed.get(prev, ()):
            unknown = node not in self._known
            found = [
                Violation(
                    code="illegal_transition",
                    severity="hard",
                    step=obs.index,
                    node=node,
                    count=1,
                    detail={"from": prev, "to": node, "unknown_node": unknown},
                )
            ]
        self._prev = node
        self._last = obs
        if len(self._visits) > 4096 and node not in self._visits:
            return found  # unknown node names without end: illegal_transition already says so
        visits = self._visits[node] = self._visits.get(node, 0) + 1
        limit = self._policy.visit_limit(node)
        if visits == limit + 1:
            loop = Violation(
                code="excessive_loop",
                severity="hard",
                step=obs.index,
                node=node,
                count=visits,
                detail={"limit": limit},
            )
            found = [*found, loop] if found else [loop]
        return found

    def finish(self) -> list[Violation] | None:
        last = self._last
        if last is None or _END in self._allowed.get(last.node, ()):
            return None
        return [
            Violation(
                code="dead_end",
                severity="soft",
                step=last.index,
                node=last.node,
                count=1,
                detail={"exits": sorted(self._allowed.get(last.node, ()))},
            )
        ]

    def snapshot(self, pack: Pack) -> Any:
        last = self._last
        return [
            [[pack(node), visits] for node, visits in self._visits.items()],
            pack(self._prev),
            None if last is None else last.pack(pack),
        ]

    def restore(self, data: Any, unpack: Unpack) -> None:
        visits, prev, last = data
        self._visits = {unpack(node): count for node, count in visits}
        self._prev = unpack(prev)
        self._last = None if last is None else Observation.unpack(last, unpack)
