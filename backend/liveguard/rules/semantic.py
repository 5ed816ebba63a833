"""semantic_repeat: the same message in other words, by embeddings (layer 2).

Each message step is compared with the last ``semantic_window`` message steps of the
same node. It *matches* when some earlier one has cosine similarity at or above
``semantic_threshold`` **and** the new message carries no new information
(:mod:`liveguard.semantic.novelty`: no new number, identifier or name, no growth). The
first match in the window is a soft finding; the ``semantic_hard_matches``-th is hard
(a liveness code: it vetoes and rolls back).

Cost: a step whose digest already appears in the node's window is *settled by the
hash layer* (the content rules judge it) and is never embedded; vectors are cached by
digest, so an identical text is embedded once per process. Offline,
:meth:`SemanticRepeat.prefetch` embeds every unsettled step of a run in batches first.

An embedder that fails is missing evidence: one soft ``semantic_unavailable``
finding (with the error code) and the rule stands down for the run.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import MESSAGE, Observation, prefix
from liveguard.semantic.base import EmbeddingCache, EmbeddingError, SemanticUnavailable
from liveguard.semantic.novelty import Info, is_novel
from liveguard.semantic.text import text_of

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["SemanticRepeat", "SemanticStats", "semantic_rules"]


class SemanticStats:
    """Counts for the benchmark and the logs: message steps embedded vs settled by hashes."""

    __slots__ = ("embedded", "matched", "messages", "settled")

    def __init__(self) -> None:
        self.messages = 0
        self.settled = 0
        self.embedded = 0
        self.matched = 0


class _Entry:
    __slots__ = ("index", "info", "key", "position", "vector")

    def __init__(self, index: int, position: int, key: str, vector: NDArray[np.float32], info: Info) -> None:
        self.index = index
        self.position = position
        self.key = key
        self.vector = vector
        self.info = info


class SemanticRepeat:
    """Soft on the first reworded repeat in the window, hard on the ``semantic_hard_matches``-th."""

    code = "semantic_repeat"

    def __init__(self, policy: Policy, cache: EmbeddingCache) -> None:
        self._cache = cache
        self._threshold = policy.semantic_threshold
        self._window = policy.semantic_window
        self._hard = policy.semantic_hard_matches
        self._history: dict[str, deque[_Entry]] = {}
        self._positions: dict[str, int] = {}
        self._matches: dict[str, deque[int]] = {}
        self._down = False
        self.stats = SemanticStats()

    # -- offline: embed a whole run's unsettled steps in batches ----------------------------
    def prefetch(self, observations: Sequence[Observation]) -> None:
        """Fill the cache for every step :meth:`observe` will embed (same settling logic)."""
        if self._down:
            return
        recent: dict[str, deque[str]] = {}
        todo: list[tuple[str, str]] = []
        for obs in observations:
            text = _message_text(obs)
            if text is None:
                continue
            keys = recent.setdefault(obs.node, deque(maxlen=self._window))
            if obs.key not in keys:
                todo.append((obs.key, text))
            keys.append(obs.key)
        # On failure, observe() meets the same error and reports it as missing evidence.
        with contextlib.suppress(EmbeddingError, SemanticUnavailable):
            self._cache.fill(todo)

    # -- the rule -------------------------------------------------------------------------
    def observe(self, obs: Observation) -> list[Violation] | None:
        if self._down:
            return None
        text = _message_text(obs)
        if text is None:
            return None
        stats = self.stats
        stats.messages += 1
        node = obs.node
        history = self._history.get(node)
        if history is None:
            history = self._history[node] = deque(maxlen=self._window)
        position = self._positions.get(node, 0)
        self._positions[node] = position + 1
        for entry in history:
            if entry.key == obs.key:  # settled by the hash layer: no embedding, no finding
                stats.settled += 1
                history.append(_Entry(obs.index, position, obs.key, entry.vector, entry.info))
                return None
        try:
            vector = self._cache.vector(obs.key, text)
        except (EmbeddingError, SemanticUnavailable) as exc:
            self._down = True
            reason = exc.code if isinstance(exc, EmbeddingError) else "unavailable"
            return [
                Violation(
                    code="semantic_unavailable", severity="soft", step=obs.index, node=node, count=0,
                    detail={"reason": reason, "embedder": self._cache.embedder.name},
                )
            ]
        stats.embedded += 1
        info = Info(text)
        best: _Entry | None = None
        best_sim = -1.0
        for entry in history:
            sim = float(entry.vector @ vector)
            if sim > best_sim:
                best, best_sim = entry, sim
        history.append(_Entry(obs.index, position, obs.key, vector, info))
        if best is None or best_sim < self._threshold:
            return None
        novel, _ = is_novel(info, (e.info for e in list(history)[:-1]), best.info)
        if novel:
            return None
        stats.matched += 1
        matches = self._matches.get(node)
        if matches is None:
            matches = self._matches[node] = deque()
        matches.append(position)
        while matches and matches[0] <= position - self._window:
            matches.popleft()
        count = len(matches)
        if count == 1:
            severity = "soft"
        elif count == self._hard:
            severity = "hard"
        else:
            return None
        return [
            Violation(
                code=self.code, severity=severity, step=obs.index, node=node, count=count,
                detail={
                    "similarity": round(best_sim, 3),
                    "matched_step": best.index,
                    "digest": prefix(obs.key),
                    "matched_digest": prefix(best.key),
                    "threshold": self._threshold,
                    "window": self._window,
                    "embedder": self._cache.embedder.name,
                },
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None


def _message_text(obs: Observation) -> str | None:
    if obs.kind != MESSAGE:
        return None
    content: Any = obs.content
    return text_of(content) if content is not None else None


def semantic_rules(policy: Policy, allow_set: Any = None) -> list[Any]:
    """The semantic layer's rules for one run (called by ``rules.build``)."""
    from liveguard.rules.roles import RoleDrift
    from liveguard.semantic.registry import cache_for

    cache = cache_for(policy.semantic_embedder)
    rules: list[Any] = []
    if policy.enabled:
        rules.append(SemanticRepeat(policy, cache))
    roles = getattr(allow_set, "roles", None)
    if roles:
        rules.append(RoleDrift(policy, roles, cache))
    return rules
