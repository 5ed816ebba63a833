"""Static token embeddings distilled lazily from our own all-MiniLM-L6-v2: an opt-in, cheap embedder.

The idea is model2vec's (Tulkens and van Dongen, 2024), without its up-front distillation
and without any new download: a token's vector is what the MiniLM encoder makes of that
token alone, and a text's vector is a weighted mean of its tokens' vectors.

* **A token's vector.** The encoder (the same weights, runtime and tokenizer as
  :class:`~liveguard.core.semantic.minilm.MiniLMEmbedder`) reads ``[CLS] token [SEP]``; the
  output is mean-pooled over the three positions. It is computed on first need, for the
  tokens a batch of texts lacks, in passes of :data:`BATCH` tokens, and kept for the life
  of the embedder (at most the vocabulary, 30,522 x 384 floats, 47 MB of address space,
  of which only the pages holding a computed row are ever touched: 2,843 tokens for the 161
  labelled detection runs). The encoder returns the same floats for a token
  whatever else is in its pass (``tests/test_semantic_static.py`` checks it), so the table
  filled lazily equals the table filled at once, and a text's vector does not depend on
  what was embedded before it.
* **Weights.** Zipf: ``log(1 + rank)``, the rank being the token's id among the
  WordPiece tokens (BERT's vocabulary lists them roughly from frequent to rare), so that
  ``the`` and ``,`` weigh less than ``payment``; the special, unused and single-character
  ids below :data:`FIRST_WORDPIECE` get the weight of the first WordPiece.
* **Centring.** Every token vector shares a large common part (two unrelated texts would
  have a cosine of 0.85); the mean vector of :data:`CENTRE_TOKENS` fixed tokens (every
  :data:`CENTRE_STEP`-th WordPiece id, computed with the first batch) is subtracted from a
  text's weighted mean before it is normalised.
* **The view.** The same first 128 tokens the model reads (:meth:`MiniLMEmbedder.token_ids`),
  without ``[CLS]`` and ``[SEP]``.

Its cosines are not MiniLM's: select it with its own threshold,
:data:`liveguard.core.semantic.registry.STATIC_THRESHOLD`
(tuned on the development halves of the benchmarks; ``docs/semantic.md``, "The static
embedder"); ``Settings.policy`` and ``liveguard score --embedder static`` set both.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from liveguard.core.semantic.base import EmbeddingError, SemanticUnavailable
from liveguard.core.semantic.minilm import MODEL_NAME, MiniLMEmbedder, check_vectors

if TYPE_CHECKING:
    from pathlib import Path

    from numpy.typing import NDArray

    from liveguard.core.semantic.minilm import Runtime

__all__ = ["BATCH", "CENTRE_STEP", "CENTRE_TOKENS", "FIRST_WORDPIECE", "StaticEmbedder"]

BATCH: Final = 64
"""Tokens per forward pass when filling the table (64 passes of 3 positions)."""
FIRST_WORDPIECE: Final = 1996
"""BERT's vocabulary: ids below are padding, ``[unused]``, special and single-character
tokens; from here on, WordPieces ("the" is 1996)."""
CENTRE_STEP: Final = 111
CENTRE_TOKENS: Final = tuple(range(FIRST_WORDPIECE, 30522, CENTRE_STEP))
"""The fixed tokens whose mean vector is the common part taken off every text (257 ids)."""


class StaticEmbedder:
    """Texts in, unit vectors (384 floats) out, from MiniLM's vectors of single tokens.

    ``model``: a loaded :class:`MiniLMEmbedder` to distil from (default: load one, with
    ``path``, ``runtime`` and ``threads`` as it takes them). Thread-safe.
    """

    name = f"{MODEL_NAME}-static"
    dim = 384

    def __init__(
        self, path: str | Path | None = None, *, runtime: Runtime = "auto", threads: int | None = 1,
        model: MiniLMEmbedder | None = None,
    ) -> None:
        self.model = model if model is not None else MiniLMEmbedder(path, runtime=runtime, threads=threads)
        tokenizer = self.model._tokenizer
        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        if cls is None or sep is None:
            raise SemanticUnavailable("the model's tokenizer has no [CLS] or [SEP] token")
        self._cls, self._sep = int(cls), int(sep)
        size = int(tokenizer.get_vocab_size())
        # Zero pages are not touched until a token's row is written: the table costs what it holds.
        self._table = np.zeros((size, self.dim), dtype=np.float32)
        self._known = np.zeros(size, dtype=bool)
        rank = np.maximum(np.arange(size, dtype=np.float64), FIRST_WORDPIECE) - FIRST_WORDPIECE + 1
        self._weight = np.log1p(rank).astype(np.float32)
        self._centre: NDArray[np.float32] | None = None
        self._lock = threading.Lock()
        self.computed = 0
        """Token vectors computed so far (each once)."""

    @property
    def fault(self) -> str | None:
        """The distilled model's fault found at load (its :attr:`MiniLMEmbedder.fault`), or None."""
        return self.model.fault

    def token_vectors(self, ids: Sequence[int]) -> NDArray[np.float32]:
        """The ``(len(ids), 384)`` vectors of these token ids, computing the missing ones."""
        wanted = np.asarray(ids, dtype=np.int64)
        self._fill(wanted)
        return self._table[wanted]

    def _fill(self, ids: NDArray[np.int64]) -> None:
        with self._lock:
            missing = np.unique(ids[~self._known[ids]]) if len(ids) else ids
            for start in range(0, len(missing), BATCH):
                chunk = missing[start : start + BATCH]
                batch = np.empty((len(chunk), 3), dtype=np.int64)
                batch[:, 0], batch[:, 1], batch[:, 2] = self._cls, chunk, self._sep
                self._table[chunk] = self._hidden(batch).mean(axis=1)
                self._known[chunk] = True
                self.computed += len(chunk)

    def _hidden(self, tokens: NDArray[np.int64]) -> NDArray[np.float32]:
        model: Any = self.model
        length = tokens.shape[1]
        if model._session is not None:
            feeds = {"ids": tokens, "pos_ids": np.arange(length, dtype=np.int64),
                     "maskbias": np.zeros((len(tokens), 1, 1, length), dtype=np.float32)}
            out: NDArray[np.float32] = model._session.run(["hidden"], feeds)[0]
            return out
        hidden: NDArray[np.float32] = model._numpy.hidden(tokens, np.ones(tokens.shape, dtype=np.float32))
        return hidden

    def centre(self) -> NDArray[np.float32]:
        """The common part taken off every text: the mean vector of :data:`CENTRE_TOKENS`."""
        if self._centre is None:
            self._centre = self.token_vectors(CENTRE_TOKENS).mean(axis=0)
        return self._centre

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """An (n, 384) float32 array of L2-normalised embeddings, in the order of ``texts``.

        Raises :class:`EmbeddingError` as :meth:`MiniLMEmbedder.embed` does (a model that
        failed its check at load, non-finite, zero or constant vectors)."""
        if self.model.fault is not None:
            raise EmbeddingError(self.model.fault)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        views = [[t for t in ids if t not in (self._cls, self._sep)] or [self._sep]
                 for ids in self.model.token_ids(texts)]
        self._fill(np.fromiter((t for ids in views for t in ids), dtype=np.int64))
        centre = self.centre()
        for row, ids in enumerate(views):
            weights = self._weight[ids]
            out[row] = weights @ self._table[ids] / weights.sum() - centre
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        fault = check_vectors(out, len({tuple(v) for v in views}))
        if fault is not None:
            raise EmbeddingError(fault)
        return out
