"""Does a message carry new information? The check that cosine similarity cannot make.

A reworded loop and a progressing look-alike embed alike (MiniLM gives both 0.8–0.95).
What differs is information: a debug round reports new test counts, a rollout names a
new region, a draft grows. :func:`facts` pulls out the tokens that carry such
information, and :func:`is_novel` says whether a message adds any to what its node said
in the window:

* **new facts**: numbers (``42``, ``3.5``, ``v2``), identifiers (``eu-west-1``,
  ``test_auth``, ``api/v2/users``, ``HTTP``, ``OrderService``; a plain hyphenated word
  like ``per-region`` is not one), quoted strings and capitalised words inside a
  sentence (not after a colon), that none of the earlier messages had;
* **growth**: more content words than the most similar earlier message, by at least
  ``min_growth_words`` and 20 %, of which ``min_growth_words`` are words no earlier
  message used (a draft that gained a paragraph; a longer paraphrase reuses its words).

Rewording changes the words, not the facts: paraphrases keep their numbers and names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["Info", "content_words", "facts", "is_novel"]

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,:]\d+)*%?")
_IDENT = re.compile(
    r"\b(?:[A-Za-z][\w-]*[_./][\w./-]*\w|[A-Za-z-]*\d[\w-]*|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}\w*)\b"
)
_QUOTED = re.compile(r"[\"'`“‘]([^\"'`”’\n]{2,60})[\"'`”’]")
_PROPER = re.compile(r"(?<=[a-z,] )[A-Z][a-z]{2,}\b")  # mid-sentence; not after a colon
_WORD = re.compile(r"[a-z][a-z']+")
_STOPWORDS = (
    "a an the and or but if then else of to in on at by for with from as is are was were be been being "
    "it its this that these those there here i you he she we they me him her us them my your our their "
    "do does did done have has had not no yes so too very can could would should will shall may might "
    "must just also again still please what which who whom whose when where why how all any each some "
    "more most other such only own same than into over under about after before up down out off once "
    "let us let's i'm i'll we'll you're it's that's don't can't won't"
)
_STOP: Final = frozenset(_STOPWORDS.split())
_IGNORED_FACTS: Final = frozenset({"i", "ok", "a"})


def facts(text: str) -> frozenset[str]:
    """The information-carrying tokens of ``text`` (case-folded)."""
    found = {m.group(0).rstrip(".").lower() for m in _NUMBER.finditer(text)}
    found.update(m.group(0).lower() for m in _IDENT.finditer(text))
    found.update(m.group(1).strip().lower() for m in _QUOTED.finditer(text))
    found.update(m.group(0).lower() for m in _PROPER.finditer(text))
    return frozenset(found - _IGNORED_FACTS)


def content_words(text: str) -> int:
    """How many content (non-stop) words ``text`` has: its size, for the growth test."""
    return sum(1 for w in _WORD.findall(text.lower()) if w not in _STOP)


class Info:
    """What the novelty test needs of one message: its facts, its size and its vocabulary."""

    __slots__ = ("facts", "vocab", "words")

    def __init__(self, text: str) -> None:
        self.facts = facts(text)
        words = [w for w in _WORD.findall(text.lower()) if w not in _STOP]
        self.words = len(words)
        self.vocab = frozenset(words)


def is_novel(
    new: Info,
    earlier: Iterable[Info],
    nearest: Info,
    *,
    growth: float = 0.2,
    min_growth_words: int = 8,
) -> tuple[bool, str]:
    """(novel, why): why is ``new_facts``, ``growth`` or ``none``.

    ``earlier`` is every message of the node in the window; ``nearest`` the most
    similar of them. Growth: at least ``max(min_growth_words, growth * nearest.words)``
    more content words than ``nearest``, and at least ``min_growth_words`` words that
    no earlier message used.
    """
    seen: set[str] = set()
    vocab: set[str] = set()
    for other in earlier:
        seen |= other.facts
        vocab |= other.vocab
    if new.facts - seen:
        return True, "new_facts"
    added = new.words - nearest.words
    if added >= max(min_growth_words, growth * nearest.words) and len(new.vocab - vocab) >= min_growth_words:
        return True, "growth"
    return False, "none"
