"""role_drift (soft): a node whose outputs leave its declared role.

An allow-set may declare one line per node (``roles:``). With the semantic layer on, at
the end of the run, the mean embedding of a node's last ``recent`` outputs is compared
with the role lines. Only the outputs the measure reads are embedded (a node's first
and last ``recent``, at most ``2 * recent``), in one batch at ``finish()``, through the
digest cache (free when ``semantic_repeat`` already embedded them); the outputs in
between are never embedded.

* **away**: similarity to its own role fell by ``role_drift_drop`` or more from the
  mean of its first ``recent`` outputs (needs ``2 * recent`` outputs);
* **toward**: similarity to another node's role exceeds similarity to its own by more
  than ``role_drift_margin`` (e.g. a reviewer that started writing the code).

Whole-run, so it reports from ``finish()`` like ``tool_entropy_collapse``. Evidence:
similarities (3 decimals), node names and counts, never text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from liveguard.core.fingerprint import fingerprint
from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import MESSAGE, Observation
from liveguard.core.semantic.base import EmbeddingCache, EmbeddingError, SemanticUnavailable
from liveguard.core.semantic.text import text_of

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["RoleDrift"]


class RoleDrift:
    """Soft: recent outputs of a node moved away from its role, or toward another node's."""

    code = "role_drift"

    def __init__(
        self, policy: Policy, roles: Mapping[str, str], cache: EmbeddingCache, *, recent: int = 4
    ) -> None:
        if recent < 1:
            raise ValueError("recent must be >= 1")
        self._roles = dict(roles)
        self._cache = cache
        self._drop = policy.role_drift_drop
        self._margin = policy.role_drift_margin
        self._recent = recent
        # (digest, text) of each node's first and last ``recent`` outputs: embedded at finish()
        self._start: dict[str, list[tuple[str, str]]] = {}
        self._tail: dict[str, deque[tuple[str, str]]] = {}
        self._counts: dict[str, int] = {}
        self._last: dict[str, int] = {}

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != MESSAGE or obs.node not in self._roles:
            return None
        text = text_of(obs.content) if obs.content is not None else None
        if text is None:
            return None
        node = obs.node
        start = self._start.setdefault(node, [])
        if len(start) < self._recent:
            start.append((obs.key, text))
        self._tail.setdefault(node, deque(maxlen=self._recent)).append((obs.key, text))
        self._counts[node] = self._counts.get(node, 0) + 1
        self._last[node] = obs.index
        return None

    def finish(self) -> list[Violation] | None:
        judged = [n for n, c in self._counts.items() if c >= self._recent]
        if not judged:
            return None
        names = sorted(self._roles)
        try:
            roles = self._role_vectors(names)
            # Only the outputs the measure reads are embedded, all in one batch (cached by digest).
            needed = [item for node in judged for item in (*self._start[node], *self._tail[node])]
            self._cache.fill(needed)
            start = {node: [self._cache.vector(k, t) for k, t in self._start[node]] for node in judged}
            tail = {node: [self._cache.vector(k, t) for k, t in self._tail[node]] for node in judged}
        except (EmbeddingError, SemanticUnavailable) as exc:
            code = exc.code if isinstance(exc, EmbeddingError) else "unavailable"
            return [_unavailable(code, self._last[judged[0]], judged[0], self._cache)]
        found: list[Violation] = []
        for node in sorted(judged):
            own_index = names.index(node)
            recent = _mean(tail[node])
            sims = roles @ recent
            own = float(sims[own_index])
            detail: dict[str, Any] = {"own_recent": round(own, 3), "outputs": self._counts[node]}
            kinds: list[str] = []
            if self._counts[node] >= 2 * self._recent:
                before = float(roles[own_index] @ _mean(start[node]))
                detail["own_start"] = round(before, 3)
                if before - own >= self._drop:
                    kinds.append("away")
            others = [(float(sims[i]), name) for i, name in enumerate(names) if name != node]
            if others:
                best, other = max(others)
                if best > own + self._margin:
                    kinds.append("toward")
                    detail.update(toward=other, toward_similarity=round(best, 3))
            if kinds:
                detail["kind"] = "+".join(kinds)
                found.append(
                    Violation(code=self.code, severity="soft", step=self._last[node], node=node,
                              count=self._recent, detail=detail)
                )
        return found or None

    def _role_vectors(self, names: list[str]) -> NDArray[np.float32]:
        items = [(fingerprint(("liveguard.role", self._roles[n])), self._roles[n]) for n in names]
        return np.stack([self._cache.vector(digest, text) for digest, text in items])


def _mean(vectors: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    total = np.sum(vectors, axis=0)
    norm = float(np.linalg.norm(total))
    result: NDArray[np.float32] = total / max(norm, 1e-12)
    return result


def _unavailable(code: str, step: int, node: str, cache: EmbeddingCache) -> Violation:
    return Violation(code="semantic_unavailable", severity="soft", step=step, node=node, count=0,
                     detail={"reason": code, "embedder": cache.embedder.name, "rule": "role_drift"})
