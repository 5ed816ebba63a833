"""Which embedder a policy asks for, loaded once per process and only when the layer is on.

``policy.semantic_embedder`` names it: ``"local"`` (all-MiniLM-L6-v2 in numpy, the
default), ``"static"`` (static token vectors distilled from it: faster, less accurate,
opt-in; :mod:`~liveguard.core.semantic.static`) or ``"openai"`` (an OpenAI-compatible endpoint,
configured like the judges). ``register_embedder(name, factory)`` adds another (e.g. a
test's or a company's own). :func:`threshold_for` gives the ``semantic_threshold`` tuned
for an embedder whose cosines are not MiniLM's (``Settings.policy`` applies it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from liveguard.core.semantic.base import EXTRA_MISSING, Embedder, EmbeddingCache, SemanticUnavailable

__all__ = ["STATIC_THRESHOLD", "cache_for", "register_embedder", "threshold_for"]

STATIC_THRESHOLD = 0.825
"""The static embedder's ``semantic_threshold`` (MiniLM's is the policy's default, 0.675),
chosen on the development halves only: ``benchmarks/semantic_static.py``."""

_FACTORIES: dict[str, Callable[[], Embedder]] = {}
_THRESHOLDS: dict[str, float] = {"static": STATIC_THRESHOLD}
_CACHES: dict[str, EmbeddingCache] = {}
_LOCK = threading.Lock()


_EXTRA = EXTRA_MISSING


def _local() -> Embedder:
    try:
        from liveguard.core.semantic.minilm import MiniLMEmbedder
    except ImportError as exc:
        raise SemanticUnavailable(f"{_EXTRA} ({exc.name} missing)") from None
    static = _CACHES.get("static")  # the static embedder's MiniLM, when it loaded one first
    model = getattr(static.embedder, "model", None) if static is not None else None
    return model if isinstance(model, MiniLMEmbedder) else MiniLMEmbedder()


def _static() -> Embedder:
    try:
        from liveguard.core.semantic.minilm import MiniLMEmbedder
        from liveguard.core.semantic.static import StaticEmbedder
    except ImportError as exc:
        raise SemanticUnavailable(f"{_EXTRA} ({exc.name} missing)") from None
    # Distilled from the process's "local" MiniLM when it is loaded already (one model in
    # memory, not two); cache_for() holds _LOCK while it calls a factory.
    local = _CACHES.get("local")
    model = local.embedder if local is not None else None
    return StaticEmbedder(model=model) if isinstance(model, MiniLMEmbedder) else StaticEmbedder()


def _openai() -> Embedder:
    try:
        from liveguard.core.semantic.remote import OpenAIEmbedder
    except ImportError as exc:
        raise SemanticUnavailable(f"{_EXTRA} ({exc.name} missing)") from None
    from liveguard.settings import Settings

    # The process-wide embedder is built once, on first use: the environment is read here,
    # through Settings, as at any other edge.
    return OpenAIEmbedder.from_settings(Settings.from_env())


def register_embedder(name: str, factory: Callable[[], Embedder], *, threshold: float | None = None) -> None:
    """Make ``policy.semantic_embedder=name`` use ``factory()`` (replaces a cached one);
    ``threshold``: the ``semantic_threshold`` tuned for it (:func:`threshold_for`)."""
    with _LOCK:
        _FACTORIES[name] = factory
        _CACHES.pop(name, None)
        if threshold is not None:
            _THRESHOLDS[name] = threshold
        else:
            _THRESHOLDS.pop(name, None)


def threshold_for(name: str) -> float | None:
    """The ``semantic_threshold`` tuned for embedder ``name``, or None (the policy's own,
    tuned for MiniLM)."""
    with _LOCK:
        return _THRESHOLDS.get(name)


_FACTORIES.update({"local": _local, "static": _static, "openai": _openai})


def cache_for(name: str) -> EmbeddingCache:
    """The process-wide cache (and embedder) for ``name``; the model loads on first call."""
    with _LOCK:
        cache = _CACHES.get(name)
        if cache is not None:
            return cache
        factory = _FACTORIES.get(name)
        if factory is None:
            raise SemanticUnavailable(f"unknown embedder {name!r} (known: {', '.join(sorted(_FACTORIES))})")
        cache = EmbeddingCache(factory())
        _CACHES[name] = cache
        return cache
