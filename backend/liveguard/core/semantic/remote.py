"""An embedder for any OpenAI-compatible ``/embeddings`` endpoint, through the real ``openai`` client.

Configuration and key rules are the judges' (:class:`~liveguard.evaluate.judges.JudgeConfig`:
``AGENT_EVAL_BASE_URL``, ``AGENT_EVAL_API_KEY`` / ``DEEPSEEK_API_KEY`` /
``OPENAI_API_KEY``, ``AGENT_EVAL_TIMEOUT``, ``AGENT_EVAL_MAX_RETRIES``,
``LLM_KILL_SWITCH``), plus ``AGENT_EVAL_EMBEDDING_MODEL`` (default
``text-embedding-3-small``). With the kill switch on or no key, :meth:`embed` raises
:class:`~liveguard.core.semantic.base.EmbeddingError` (``kill_switch`` / ``no_api_key``) and
makes no request; a failed request raises it with an HTTP-style code. The rule that
asked records that as missing evidence, never as "no repeat".
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from liveguard.core._endpoint import JudgeConfig
from liveguard.core.semantic.base import EmbeddingError

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from openai import OpenAI

    from liveguard.settings import Settings

__all__ = ["DEFAULT_EMBEDDING_MODEL", "OpenAIEmbedder"]

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"


class OpenAIEmbedder:
    """Texts in, unit vectors out, from a remote embeddings endpoint (one request per batch)."""

    def __init__(self, config: JudgeConfig, *, model: str | None = None) -> None:
        self.config = config
        self.model = model or DEFAULT_EMBEDDING_MODEL
        self.name = f"openai:{self.model}"
        self._client: OpenAI | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbedder:
        """The judges' configuration and ``AGENT_EVAL_EMBEDDING_MODEL`` from ``settings``."""
        return cls(JudgeConfig.from_settings(settings), model=settings.embedding_model)

    def _bound(self) -> OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.config.base_url, timeout=self.config.timeout,
                    max_retries=self.config.max_retries, **self.config.client_options(),
                )
            return self._client

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        skip = self.config.skip_reason()
        if skip is not None:
            raise EmbeddingError(skip)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        import openai

        try:
            response = self._bound().embeddings.create(model=self.model, input=list(texts))
        except openai.APITimeoutError:
            raise EmbeddingError("timeout") from None
        except openai.APIConnectionError:
            raise EmbeddingError("connection") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            code = "http_429" if status == 429 else "http_5xx" if status >= 500 else "http_4xx"
            raise EmbeddingError(code) from None
        rows: list[Any] = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise EmbeddingError("bad_shape")
        try:
            vectors = np.asarray([row.embedding for row in rows], dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbeddingError("bad_shape") from None
        if vectors.ndim != 2 or not np.isfinite(vectors).all():
            raise EmbeddingError("bad_shape")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingError("zero_vector")
        if len(set(texts)) > 1 and float(np.abs(vectors / norms - vectors[0] / norms[0]).max()) < 1e-6:
            raise EmbeddingError("constant_vector")  # distinct texts, one vector: a broken model
        result: NDArray[np.float32] = (vectors / norms).astype(np.float32)
        return result
