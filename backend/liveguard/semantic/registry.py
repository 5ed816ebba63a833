"""Which embedder a policy asks for, loaded once per process and only when the layer is on.

``policy.semantic_embedder`` names it: ``"local"`` (all-MiniLM-L6-v2 in numpy, the
default) or ``"openai"`` (an OpenAI-compatible endpoint, configured like the judges).
``register_embedder(name, factory)`` adds another (e.g. a test's or a company's own).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from liveguard.semantic.base import Embedder, EmbeddingCache, SemanticUnavailable

__all__ = ["cache_for", "register_embedder"]

_FACTORIES: dict[str, Callable[[], Embedder]] = {}
_CACHES: dict[str, EmbeddingCache] = {}
_LOCK = threading.Lock()


_EXTRA = "the semantic layer needs the extra: pip install 'liveguard[semantic]'"


def _local() -> Embedder:
    try:
        from liveguard.semantic.minilm import MiniLMEmbedder
    except ImportError as exc:
        raise SemanticUnavailable(f"{_EXTRA} ({exc.name} is missing)") from None
    return MiniLMEmbedder()


def _openai() -> Embedder:
    try:
        from liveguard.semantic.remote import OpenAIEmbedder
    except ImportError as exc:
        raise SemanticUnavailable(f"{_EXTRA} ({exc.name} is missing)") from None
    from liveguard.settings import Settings

    # The process-wide embedder is built once, on first use: the environment is read here,
    # through Settings, as at any other edge.
    return OpenAIEmbedder.from_settings(Settings.from_env())


def register_embedder(name: str, factory: Callable[[], Embedder]) -> None:
    """Make ``policy.semantic_embedder=name`` use ``factory()`` (replaces a cached one)."""
    with _LOCK:
        _FACTORIES[name] = factory
        _CACHES.pop(name, None)


_FACTORIES.update({"local": _local, "openai": _openai})


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
