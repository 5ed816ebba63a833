"""semantic_repeat: the same message in other words, by embeddings (layer 2).

Each message step is compared with the last ``semantic_window`` message steps of the
same node. It *matches* when an earlier one against which it carries no new information
(:mod:`liveguard.semantic.novelty`: no new number, identifier or name, no growth) has
cosine similarity at or above ``semantic_threshold``; the nearest such one is reported.
The first match in the window is a soft finding; the ``semantic_hard_matches``-th is
hard (a liveness code: it vetoes and rolls back).

Cost: a step whose digest already appears in the node's window is *settled by the
hash layer* (the content rules judge it) and is never embedded. The novelty test runs
first, on words alone: a step that brings a new fact (a number, identifier or name the
window lacks), grows every earlier message, or is the first message of its node, cannot
match whatever its cosine, so it is not embedded either. Otherwise the step is embedded
with only those window messages it could repeat (the candidates) that still lack a
vector. Vectors
are cached by digest, so an identical text is embedded once per process. Offline,
:meth:`SemanticRepeat.prefetch` embeds what a run will need in batches first.

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
from liveguard.semantic.novelty import Info, candidates
from liveguard.semantic.text import text_of

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["SemanticRepeat", "SemanticStats", "semantic_rules"]


class SemanticStats:
    """Counts for the benchmark and the logs: how each message step was settled."""

    __slots__ = ("embedded", "matched", "messages", "novel", "settled")

    def __init__(self) -> None:
        self.messages = 0  # message steps with text
        self.settled = 0  # exact digest already in the node's window: the hash layer's
        self.novel = 0  # new information against every earlier message, or none to compare: not embedded
        self.embedded = 0  # texts this rule had embedded (cache misses)
        self.matched = 0


class _Entry:
    __slots__ = ("index", "info", "key", "text", "vector")

    def __init__(self, index: int, key: str, text: str, info: Info) -> None:
        self.index = index
        self.key = key
        self.text = text  # kept in memory for a lazy embedding; never in evidence
        self.info = info
        self.vector: NDArray[np.float32] | None = None


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
        """Fill the cache, in batches, with every text :meth:`observe` will need (same logic)."""
        if self._down:
            return
        recent: dict[str, deque[tuple[str, str, Info]]] = {}
        todo: list[tuple[str, str]] = []
        for obs in observations:
            text = _message_text(obs)
            if text is None:
                continue
            window = recent.setdefault(obs.node, deque(maxlen=self._window))
            if any(key == obs.key for key, _, _ in window):
                window.append((obs.key, text, next(i for k, _, i in window if k == obs.key)))
                continue
            info = Info(text)
            members = list(window)
            picked = candidates(info, [i for _, _, i in members]) if members else []
            if picked:
                todo.append((obs.key, text))
                todo += [(members[i][0], members[i][1]) for i in picked]
            window.append((obs.key, text, info))
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
                same = _Entry(obs.index, obs.key, entry.text, entry.info)
                same.vector = entry.vector
                history.append(same)
                return None
        info = Info(text)
        current = _Entry(obs.index, obs.key, text, info)
        members = list(history)
        picked = [members[i] for i in candidates(info, [e.info for e in members])] if members else []
        history.append(current)
        if not picked:
            stats.novel += 1  # new information against every earlier message: nothing to embed
            return None
        try:
            self._embed([current, *picked])
        except (EmbeddingError, SemanticUnavailable) as exc:
            self._down = True
            reason = exc.code if isinstance(exc, EmbeddingError) else "unavailable"
            return [
                Violation(
                    code="semantic_unavailable", severity="soft", step=obs.index, node=node, count=0,
                    detail={"reason": reason, "embedder": self._cache.embedder.name},
                )
            ]
        vector = current.vector
        assert vector is not None
        best = picked[0]
        best_sim = -1.0
        for entry in picked:
            assert entry.vector is not None
            sim = float(entry.vector @ vector)
            if sim > best_sim:
                best, best_sim = entry, sim
        if best_sim < self._threshold:
            return None
        stats.matched += 1
        return self._match(obs, position, best, best_sim)

    def _match(self, obs: Observation, position: int, best: _Entry, sim: float) -> list[Violation] | None:
        """Count a match in the node's window: soft on the first, hard on the ``hard``-th."""
        matches = self._matches.get(obs.node)
        if matches is None:
            matches = self._matches[obs.node] = deque()
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
                code=self.code, severity=severity, step=obs.index, node=obs.node, count=count,
                detail={
                    "similarity": round(sim, 3),
                    "matched_step": best.index,
                    "digest": prefix(obs.key),
                    "matched_digest": prefix(best.key),
                    "threshold": self._threshold,
                    "window": self._window,
                    "embedder": self._cache.embedder.name,
                },
            )
        ]

    def _embed(self, entries: Sequence[_Entry]) -> None:
        """Give every entry its vector: cached ones free, the rest in one embed() call."""
        cache = self._cache
        missing = [e for e in entries if e.vector is None and cache.get(e.key) is None]
        if missing:
            self.stats.embedded += cache.fill([(e.key, e.text) for e in missing])
        for entry in entries:
            if entry.vector is None:
                entry.vector = cache.vector(entry.key, entry.text)

    def finish(self) -> list[Violation] | None:
        return None


def _message_text(obs: Observation) -> str | None:
    if obs.kind != MESSAGE:
        return None
    content: Any = obs.content
    return text_of(content) if content is not None else None


def semantic_rules(policy: Policy, allow_set: Any = None) -> list[Any]:
    """The semantic layer's rules for one run (called by ``rules.build``)."""
    from liveguard.semantic.registry import cache_for

    cache = cache_for(policy.semantic_embedder)  # loads the model, or raises SemanticUnavailable
    rules: list[Any] = []
    if policy.enabled:
        rules.append(SemanticRepeat(policy, cache))
    roles = getattr(allow_set, "roles", None)
    if roles:
        from liveguard.rules.roles import RoleDrift

        rules.append(RoleDrift(policy, roles, cache))
    return rules
