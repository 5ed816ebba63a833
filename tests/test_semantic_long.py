"""The semantic layer on long and many steps (issue 21, item 2): the cut before
tokenisation, forward passes bounded by padded tokens, and a run longer than the cache.

Speed is measured in ``benchmarks/semantic_long.py``, never here.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from tokenizers import Tokenizer
from xxhash import xxh3_128_digest

from liveguard import Policy
from liveguard.core.model import Violation
from liveguard.core.rules.base import MESSAGE, Observation
from liveguard.core.rules.semantic import SemanticRepeat
from liveguard.core.semantic import EmbeddingCache, cache_for
from liveguard.core.semantic.minilm import (
    MAX_CHARS,
    MAX_CUT,
    MAX_TOKENS,
    MiniLMEmbedder,
    batches,
    cut,
    model_dir,
)

WORDS = ("report", "review", "check", "plan", "draft", "update", "status", "summary", "result",
         "answer", "order", "reply", "message", "search", "fetch", "compare", "decide", "write",
         "build", "send", "read", "open", "close", "start", "finish", "retry", "wait", "customer",
         "account", "invoice", "payment", "refund", "shipping", "delivery", "product", "price",
         "support")


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def reference_ids(text: str) -> list[int]:
    """The model's input ids as sentence-transformers gets them: the whole text tokenised, then
    truncated to 128 tokens."""
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return list(tokenizer.encode(text).ids)


class Recording:
    """Wraps a tokenizer: records the length of every text it is asked to tokenise."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lengths: list[int] = []

    def encode_batch(self, texts: list[str]) -> Any:
        self.lengths += [len(t) for t in texts]
        return self.inner.encode_batch(texts)


# -- the cut before tokenisation --------------------------------------------------------------
def test_a_1mb_message_is_cut_before_tokenisation_to_the_same_tokens() -> None:
    """A 1 MB message is tokenised as at most MAX_CHARS characters (not 1 MB: the tokenizer's
    cost and memory grow with the text, for tokens truncation then drops), and the model gets
    the very ids it got from the whole text."""
    rng = random.Random(7)
    message = prose(rng, 170_000)  # about 1 MB
    assert len(message) > 1_000_000
    embedder = MiniLMEmbedder(runtime="numpy")
    recording = embedder._tokenizer = Recording(embedder._tokenizer)
    vector = embedder.embed([message])
    assert recording.lengths
    assert max(recording.lengths) <= MAX_CHARS
    assert embedder.token_ids([message]) == [reference_ids(message)]
    head = message[: len(cut(message))]
    assert np.abs(vector - embedder.embed([head])).max() < 1e-6


def test_the_cut_falls_where_the_pre_tokeniser_splits_and_lengthens_only_when_needed() -> None:
    rng = random.Random(3)
    local = cache_for("local").embedder
    assert isinstance(local, MiniLMEmbedder)
    cases = {
        "prose": prose(rng, 3000),
        "punctuation and accents": "Zürich, café; naïve (résumé) — 東京 [x]. " * 400,
        "a cut inside a word": "a" * (MAX_CHARS - 2) + " interoperability " + prose(rng, 400),
        "a long whitespace run": " " * (3 * MAX_CHARS) + prose(rng, 400),
        "words over 100 characters": " ".join("x" * 150 for _ in range(200)) + " " + prose(rng, 200),
        "one endless word": "y" * 500_000,
    }
    for name, text in cases.items():
        piece = cut(text)
        assert len(piece) <= MAX_CHARS, name
        assert text.startswith(piece), name
        if piece != text[:MAX_CHARS]:  # cut before a break, so no word is split
            assert not text[len(piece)].isalnum(), name
        assert local.token_ids([text])[0] == reference_ids(text), name
    # The documented bound: past MAX_CUT characters of whitespace nothing more is tokenised.
    blank = " " * (MAX_CUT + 10) + prose(rng, 200)
    assert len(cut(blank, MAX_CUT)) <= MAX_CUT
    assert local.token_ids([blank]) == [[101, 102]]  # [CLS] [SEP]


# -- forward passes ------------------------------------------------------------------------------
def test_forward_passes_hold_at_most_1024_padded_tokens_and_match_one_by_one() -> None:
    rng = random.Random(11)
    texts = [prose(rng, n) for n in (3, 8, 20, 60, *[140] * 10)]
    texts.append(prose(rng, 200_000))
    embedder = cache_for("local").embedder
    assert isinstance(embedder, MiniLMEmbedder)
    lengths = [len(ids) for ids in embedder.token_ids(texts)]
    assert lengths.count(MAX_TOKENS) == 11
    plan = batches(lengths)
    assert sorted(i for chunk in plan for i in chunk) == list(range(len(texts)))
    assert all(len(c) * max(lengths[i] for i in c) <= 1024 for c in plan)
    assert len(batches([MAX_TOKENS] * 20)) == 3  # 8 + 8 + 4
    assert len(batches([10] * 200)) == 4  # at most 64 texts a pass
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.abs(together - alone).max() < 1e-5


# -- a run longer than the cache -----------------------------------------------------------------
class Counting:
    name = "counting-long"

    def __init__(self) -> None:
        self.inner = cache_for("local").embedder
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += texts
        return self.inner.embed(texts)


def _run(steps: int) -> list[Observation]:
    rng = random.Random(5)
    out = []
    for i in range(steps):
        text = prose(rng, 12)
        out.append(Observation(i, ("writer", "reviewer")[i % 2], MESSAGE, xxh3_128_digest(text.encode()),
                               content=text))
    return out


def test_a_run_longer_than_the_cache_embeds_each_text_once_within_the_cap() -> None:
    """Offline, the rule embeds ahead what the run will need: half the cache at once, the
    rest as the run reaches it. A run needing 5x the cache never has its own vectors evicted
    before use (each text embedded once), the cache never holds more than its cap, and the
    findings are those of the live path (one step at a time, a cache of the default size)."""
    policy = Policy(semantic=True)
    run = _run(80)
    counting = Counting()
    cache = EmbeddingCache(counting, size=16)
    offline = SemanticRepeat(policy, cache)
    offline.prefetch(run)
    assert len(cache) <= 16
    found: list[Violation] = []
    for obs in run:
        found += offline.observe(obs) or []
        assert len(cache) <= 16
    assert len(counting.texts) == len(set(counting.texts)) == len(run)
    live = SemanticRepeat(policy, EmbeddingCache(Counting()))
    expected = [v for obs in run for v in live.observe(obs) or []]
    assert found == expected
    assert any(v.code == "semantic_repeat" for v in found)
