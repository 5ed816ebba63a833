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
* **growth**, measured on sentences, not on vocabulary: the message *keeps* the most
  similar earlier message (its sentences are found again, by their adjacent
  content-word pairs) and *adds* sentences that no earlier message of the window has
  (a draft that gained a paragraph, even one that reuses earlier words).

Rewording changes the words, not the facts: paraphrases keep their numbers and names.
And a rewording *replaces* sentences, it does not add them: it keeps few of the earlier
message's word pairs, so it is never growth however many new words it uses.

Against one earlier message (:func:`candidates`), two more kinds of progress:

* **other facts**: the message names a fact (an id, a number, a name) that *this* earlier
  message lacks, even when another message of the window had it: a reply about
  reservation ``#R2`` is not a repeat of the one about ``#R1`` because ``#R2`` came up
  before;
* **a shrinking list**: the earlier message enumerates items ("check A, B, C, D", bullet
  lines, or a short "refunds and payouts") and this one keeps a strict, non-empty part of
  them ("check C, D") and adds no new word: a to-do list being worked off; likewise a
  message that names a strict part of the earlier one's facts (one reservation of the
  three listed).

Languages: the patterns are written for English and measured on English runs. Words are
Unicode letters; a capitalised word inside a sentence is a name in English, but every noun
is capitalised in German, so in a message that reads as German (more German than English
function words) capitalisation is not a fact. Other languages: numbers, identifiers and
quoted strings only count as facts when they are written as such.

Everything an :class:`Info` keeps is hashed (64-bit ints), so an Info can be saved in a
thread snapshot without the message text (:meth:`Info.pack` / :meth:`Info.unpack`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any, Final

from xxhash import xxh3_64_intdigest

__all__ = [
    "Info", "Sentence", "Sketch", "candidates", "content_words", "facts", "hard_facts", "is_novel",
    "list_items", "reads_german", "same_page", "shrinks",
]

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,:]\d+)*%?")
_IDENT = re.compile(
    r"\b(?:[A-Za-z][\w-]*[_./][\w./-]*\w|[A-Za-z-]*\d[\w-]*|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}\w*)\b"
)
_QUOTED = re.compile(r"[\"'`“‘]([^\"'`”’\n]{2,60})[\"'`”’]")
_PROPER = re.compile(r"(?<=[a-z,] )[A-Z][a-z]{2,}\b")  # mid-sentence; not after a colon
_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|')+")  # Unicode letters: "für", "naïve"
_TOKEN = re.compile(r"[^\W_]+")
_GERMAN_WORDS = (
    "der die das den dem des und ist sind nicht ich wir sie ein eine einen einem einer mit für "
    "auf noch bitte zu von bei aus nach wird werden wurde habe haben hat kann können"
)
_GERMAN = frozenset(_GERMAN_WORDS.split())
_ENGLISH_WORDS = "the and is are not we you a an with for on to of at from will was have has can please"
_ENGLISH = frozenset(_ENGLISH_WORDS.split())
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\[[ xX]\])\s+(.+)$", re.MULTILINE)
_SHORT_LIST = 6
"""A clause of at most this many tokens joined by "and"/"or" is a list without commas."""
_PARTS = re.compile(r",|\band\b|\bor\b|&|\bund\b|\boder\b")
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
_SENTENCE = re.compile(r"[.!?;:]+(?:\s+|$)|\n+")  # sentence and clause ends

# The growth test's defaults, tuned on the benchmark's development split.
KEEP: Final = 0.8
OVERLAP: Final = 1 / 3
MIN_ADDED_WORDS: Final = 4


def reads_german(text: str) -> bool:
    """More German than English function words (at least two): capitalisation is no name."""
    words = _WORD.findall(text.lower())
    german = sum(1 for w in words if w in _GERMAN)
    return german >= 2 and german > sum(1 for w in words if w in _ENGLISH)


def facts(text: str) -> frozenset[str]:
    """The information-carrying tokens of ``text`` (case-folded)."""
    found, names = _facts(text)
    return found | names


def _facts(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(numbers, identifiers and quoted strings; capitalised words that are nothing else)."""
    found = {m.group(0).rstrip(".").lower() for m in _NUMBER.finditer(text)}
    found.update(m.group(0).lower() for m in _IDENT.finditer(text))
    found.update(m.group(1).strip().lower() for m in _QUOTED.finditer(text))
    names: set[str] = set()
    if not reads_german(text):  # every German noun is capitalised: not a name
        names.update(m.group(0).lower() for m in _PROPER.finditer(text))
    return frozenset(found - _IGNORED_FACTS), frozenset(names - found - _IGNORED_FACTS)


def hard_facts(text: str) -> frozenset[str]:
    """The numbers and identifiers of ``text`` (case-folded): the facts that tell one record,
    page or id from another (no names or quoted strings: a re-rendered page recases and
    requotes its own words)."""
    found = {m.group(0).rstrip(".").lower() for m in _NUMBER.finditer(text)}
    found.update(m.group(0).lower() for m in _IDENT.finditer(text))
    return frozenset(found - _IGNORED_FACTS)


def _caps(fact: str) -> bool:
    """An identifier that is only an upper-case word ("SEARCH", "LAX"): a fact only when the
    other text lacks the word in any case (a re-rendered page shouts its own headings)."""
    return fact.isalpha()


def _h(text: str) -> int:
    return xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


def list_items(text: str) -> frozenset[str]:
    """The items a message enumerates: bullet lines, or the parts of a clause that lists
    at least two things with commas ("check A, B, C, D"); each item is its last token."""
    items: set[str] = set()
    lower = text.lower()
    bullets = [m.group(1) for m in _BULLET.finditer(lower)]
    if len(bullets) >= 2:
        for line in bullets:
            tokens = _TOKEN.findall(line)
            if tokens:
                items.add(tokens[-1])
    for clause in re.split(r"[.!?;:\n]+", lower):
        # a comma list, or a short "x and y" clause ("refunds and payouts")
        if "," not in clause and len(_TOKEN.findall(clause)) > _SHORT_LIST:
            continue
        parts = [_TOKEN.findall(part) for part in _PARTS.split(clause)]
        parts = [p for p in parts if p]
        if len(parts) >= 2:
            items.update(p[-1] for p in parts)
    return frozenset(items)


def content_words(text: str) -> int:
    """How many content (non-stop) words ``text`` has: its size."""
    return sum(1 for w in _WORD.findall(text.lower()) if w not in _STOP)


def _stem(word: str) -> str:
    """A light suffix strip, so that ``renewed``/``renewal``/``renews`` meet (not a linguist's stemmer)."""
    for suffix in ("ing", "ed", "es", "s", "al", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _shingles(stems: list[str]) -> frozenset[tuple[str, ...]]:
    """Adjacent content-word pairs (a one-word sentence: the word): a sentence's wording."""
    if len(stems) < 2:
        return frozenset((w,) for w in stems)
    return frozenset(pairwise(stems))


def _hashed_shingles(stems: list[str]) -> frozenset[int]:
    return frozenset(_h("\x1f".join(shingle)) for shingle in _shingles(stems))


class Sentence:
    """One sentence or clause of a message: its content-word count and its (hashed) shingles."""

    __slots__ = ("shingles", "words")

    def __init__(self, stems: list[str], *, words: int | None = None,
                 shingles: frozenset[int] | None = None) -> None:
        self.words = len(stems) if words is None else words
        self.shingles = _hashed_shingles(stems) if shingles is None else shingles

    def found_in(self, shingles: frozenset[int] | set[int]) -> float:
        """The share of this sentence's shingles that ``shingles`` holds (its wording kept)."""
        if not self.shingles:
            return 1.0
        return len(self.shingles & shingles) / len(self.shingles)


class Info:
    """What the novelty test needs of one message: facts, size, vocabulary, sentences, list
    items and tokens, every one hashed (no text is kept)."""

    __slots__ = ("facts", "items", "names", "page", "sentences", "shingles", "tokens", "vocab", "words")

    def __init__(self, text: str) -> None:
        found, names = _facts(text)
        lower = text.lower()
        tokens = _TOKEN.findall(lower)
        # Kept only for a long message: a page (same_page), the only use (and snapshot size).
        page = Sketch.page(tokens, lower) if len(tokens) >= LONG + SHINGLE - 1 else None
        self.page: Sketch | None = page if page is not None and len(page.hashes) >= LONG else None
        self.facts = frozenset(map(_h, found | names))
        # A capitalised word is a name only if it is not a plain word of the message it is
        # compared with: "a Single Family house" after "a single-family house" names nothing
        # new. Kept as (fact hash, stem hash) pairs, the stem as ``vocab`` holds it.
        self.names = {_h(name): _h(_stem(name)) for name in names}
        self.items = frozenset(map(_h, list_items(text)))
        self.tokens = frozenset(map(_h, tokens))
        self.sentences: list[Sentence] = []
        shingles: set[int] = set()
        vocab: set[str] = set()
        words = 0
        for part in _SENTENCE.split(lower):
            stems = [_stem(w) for w in _WORD.findall(part) if w not in _STOP]
            if not stems:
                continue
            sentence = Sentence(stems)
            self.sentences.append(sentence)
            shingles |= sentence.shingles
            vocab.update(stems)
            words += len(stems)
        self.words = words
        self.vocab = frozenset(map(_h, vocab))
        self.shingles = frozenset(shingles)

    def pack(self) -> list[Any]:
        """Plain, text-free data for a snapshot (``tokens`` are not kept: only a new
        message's tokens are ever read, and a saved Info is always an earlier one)."""
        return [sorted(self.facts), sorted(self.items), sorted(self.vocab), self.words,
                [[s.words, sorted(s.shingles)] for s in self.sentences],
                sorted([fact, stem] for fact, stem in self.names.items()),
                None if self.page is None else self.page.pack()]

    @classmethod
    def unpack(cls, data: list[Any]) -> Info:
        info = cls.__new__(cls)
        found, items, vocab, words, sentences = data[:5]
        info.names = {int(fact): int(stem) for fact, stem in data[5]} if len(data) > 5 else {}
        info.facts = frozenset(int(x) for x in found)
        info.items = frozenset(int(x) for x in items)
        info.vocab = frozenset(int(x) for x in vocab)
        info.tokens = frozenset()
        info.page = Sketch.unpack(data[6]) if len(data) > 6 and data[6] is not None else None
        info.words = int(words)
        info.sentences = [Sentence([], words=int(w), shingles=frozenset(int(x) for x in sh))
                          for w, sh in sentences]
        shingles: set[int] = set()
        for sentence in info.sentences:
            shingles |= sentence.shingles
        info.shingles = frozenset(shingles)
        return info


def is_novel(
    new: Info,
    earlier: Sequence[Info],
    nearest: Info,
    *,
    keep: float = KEEP,
    min_added_words: int = MIN_ADDED_WORDS,
    overlap: float = OVERLAP,
) -> tuple[bool, str]:
    """(novel, why): why is ``new_facts``, ``growth`` or ``none``.

    ``earlier`` is every message of the node in the window; ``nearest`` the one it is
    compared with. **Growth** is a message that *keeps* ``nearest`` and *adds* to it:

    * kept: at least ``keep`` of ``nearest``'s word pairs (adjacent content words) are
      found again in ``new``;
    * added: ``new``'s sentences that no earlier message has (under ``overlap`` of their
      word pairs found in the window) hold at least ``min_added_words`` content words.

    A rewording replaces sentences (it keeps few of their word pairs), so it is not
    growth however many new words it uses; a draft that gained a paragraph is growth even
    when the paragraph reuses earlier words, because its word pairs are new.
    """
    seen, window = _window(earlier)
    if _new_facts(new, seen, _vocab(earlier)):
        return True, "new_facts"
    if _grows(new, nearest, _added(new, window, overlap), keep, min_added_words):
        return True, "growth"
    return False, "none"


def candidates(new: Info, earlier: Sequence[Info]) -> list[int]:
    """The indices of the ``earlier`` messages that ``new`` could repeat: those against which
    it carries no new information (:func:`is_novel` with each as ``nearest``, no fact the
    earlier one lacks, not a shrinking list of it). Empty when ``new`` has a new fact: then
    no cosine can make it a repeat, and nothing is embedded.

    **The same page again** (:func:`same_page`): when ``new`` reads back an earlier long
    message (a browser agent's page, transcribed again from a new screenshot), a fact that
    this one lacks but the window had, or fewer of its facts, is the transcription's noise,
    not other facts or a list worked off: only a fact that no message of the window had
    (tested first) makes it new."""
    seen, window = _window(earlier)
    if _new_facts(new, seen, _vocab(earlier)):
        return []
    added = _added(new, window, OVERLAP)
    return [i for i, other in enumerate(earlier)
            if not (((_new_facts(new, other.facts, other.vocab) or shrinks(new, other))
                     and not same_page(new, other))
                    or _grows(new, other, added, KEEP, MIN_ADDED_WORDS))]


def same_page(new: Info, other: Info) -> bool:
    """``new`` reads ``other`` back: both long (:data:`LONG` word 3-shingles or more), word
    3-shingle resemblance at least :data:`NEAR`, and not a list worked off or a log that
    grew (their lines are not a strict part of one another): the same state, whatever the
    transcription did to its numbers (:meth:`Sketch.resemblance`). Set on the benchmark's
    development split (``NEAR``, the re-read bar, reused; no new threshold)."""
    a, b = new.page, other.page
    if a is None or b is None:
        return False
    if a.lines != b.lines and (a.lines <= b.lines or b.lines <= a.lines):
        return False
    return a.resemblance(b) >= NEAR


def _new_facts(new: Info, known: frozenset[int] | set[int], vocab: frozenset[int] | set[int]) -> bool:
    """Does ``new`` name a fact outside ``known``? A capitalised word whose stem is a plain
    word of ``vocab`` is not one (a recased word names nothing new)."""
    names = new.names
    return any(fact not in known and (fact not in names or names[fact] not in vocab) for fact in new.facts)


def _vocab(earlier: Iterable[Info]) -> set[int]:
    vocab: set[int] = set()
    for other in earlier:
        vocab |= other.vocab
    return vocab


def shrinks(new: Info, nearest: Info) -> bool:
    """``new`` works off ``nearest``'s list: it keeps a strict, non-empty part of its items
    (at least two) and adds no content word and no fact; or it names a strict, non-empty
    part of ``nearest``'s facts (one reservation out of the three listed)."""
    if new.facts and new.facts < nearest.facts:
        return True
    items = nearest.items
    if len(items) < 2:
        return False
    kept = items & new.tokens
    return bool(kept) and kept != items and new.vocab <= nearest.vocab and new.facts <= nearest.facts


def _window(earlier: Iterable[Info]) -> tuple[set[int], set[int]]:
    seen: set[int] = set()
    window: set[int] = set()
    for other in earlier:
        seen |= other.facts
        window |= other.shingles
    return seen, window


def _added(new: Info, window: set[int], overlap: float) -> int:
    """Content words in ``new``'s sentences that the window does not have (by word pairs)."""
    return sum(s.words for s in new.sentences if s.found_in(window) < overlap)


def _grows(new: Info, nearest: Info, added: int, keep: float, min_added_words: int) -> bool:
    if added < min_added_words or not nearest.words or new.words <= nearest.words:
        return False
    # Kept: a rewording replaces the earlier wording, so it keeps few of its word pairs.
    return len(nearest.shingles & new.shingles) >= keep * len(nearest.shingles)


# -- near-duplicate observations ---------------------------------------------------------------
SHINGLE: Final = 3
"""Words per shingle of a :class:`Sketch`."""
SKETCH: Final = 256
"""Shingle hashes a :class:`Sketch` keeps (the smallest: a bottom-k sketch)."""
NEAR: Final = 0.7
"""Resemblance at or above which an observation re-reads an earlier one (tuned on the
benchmark's development split)."""
WEAK: Final = 0.5
"""Resemblance at or above which a long observation only *weakly* re-reads an earlier one
(:meth:`Sketch.weakly_rereads`; tuned on the benchmark's development split)."""
LONG: Final = 64
"""Distinct shingles from which an observation is long enough for a weak re-read (a short
text's resemblance swings with a word or two)."""


class Sketch:
    """A text-free summary of one observation (a tool result, a page another agent read back,
    a user's message) to tell a re-read of something already seen from something new.

    **Resemblance** is the Jaccard similarity of the two texts' sets of word 3-shingles
    (three consecutive words, case-folded, punctuation and layout dropped), estimated from
    bottom-k sketches: each text keeps the :data:`SKETCH` smallest hashes of its shingles
    (exact for texts of up to :data:`SKETCH` shingles; Broder's estimator beyond). A page
    re-rendered with other line breaks, bullets and headings keeps most of its word
    triples; a page scrolled on, a new search's results or another record keeps few.

    An observation **re-reads** an earlier one when their resemblance is at least
    :data:`NEAR` and it is not progress by either of two cheap tests:

    * it names a number or identifier (:func:`hard_facts`) that the earlier one lacks: the
      same record with another id, the same page with a new count (an upper-case word,
      "LAX", counts unless the node's recent observations have the word in any case: a
      re-rendered page shouts its own headings);
    * its lines (case-folded, list markers dropped) are a strict part of the earlier one's,
      or hold all of them and more: a list being worked off, a log that grew.

    An observation **weakly re-reads** an earlier one (:meth:`weakly_rereads`) on the same
    two tests with the lower bar :data:`WEAK`, when both are long (:data:`LONG` shingles or
    more): the same page read again from a new screenshot, more of it changed. The semantic
    rule counts that as weak novelty: progress against a request asked once, not against one
    that keeps coming back (``rules/semantic.py``, graded confirmation).

    Deterministic and cheap (one hash per shingle and per line, no model), so it is the same
    offline and live; only hashes are kept, so it goes into a thread snapshot without text.
    """

    __slots__ = ("caps", "facts", "hashes", "lines", "words")

    def __init__(self, text: str) -> None:
        lower = text.lower()
        words = _TOKEN.findall(lower)
        self.hashes: tuple[int, ...] = _bottom(words)
        found = hard_facts(text)
        self.facts = frozenset(_h32(fact) for fact in found if not _caps(fact))
        self.caps = frozenset(_h32(fact) for fact in found if _caps(fact))
        self.words = frozenset(map(_h32, words))
        self.lines = _lines(lower)

    @classmethod
    def page(cls, words: list[str], lower: str) -> Sketch:
        """The part :func:`same_page` reads (shingle hashes and lines) of a text already
        split into ``words`` (``lower``: the text case-folded), for :class:`Info`; no facts
        or words, so :meth:`rereads` is not for it."""
        sketch = cls.__new__(cls)
        sketch.hashes = _bottom(words)
        sketch.facts = sketch.caps = sketch.words = frozenset()
        sketch.lines = _lines(lower)
        return sketch

    def resemblance(self, other: Sketch) -> float:
        """The estimated Jaccard similarity of the two shingle sets (0.0 to 1.0)."""
        mine, theirs = set(self.hashes), set(other.hashes)
        if not mine or not theirs:
            return 1.0 if mine == theirs else 0.0
        union = sorted(mine | theirs)[:SKETCH]  # the bottom-k of the union
        both = mine & theirs
        return sum(1 for h in union if h in both) / len(union)

    def rereads(self, other: Sketch, words: frozenset[int] | set[int] | None = None,
                near: float = NEAR) -> bool:
        """True when this observation brings nothing ``other`` did not (class docstring).
        ``words``: the words an upper-case word may be found among (default ``other``'s; the
        rule passes those of the node's recent observations)."""
        if not (self.facts <= other.facts and self.caps <= (other.words if words is None else words)):
            return False
        if self.lines != other.lines and (self.lines <= other.lines or other.lines <= self.lines):
            return False  # a list worked off, or a log that grew
        return self.resemblance(other) >= near

    def weakly_rereads(self, other: Sketch, words: frozenset[int] | set[int] | None = None) -> bool:
        """True when this observation, long (:data:`LONG` shingles or more, both), re-reads
        ``other`` at the lower bar :data:`WEAK`: the same page transcribed again with more
        changed, still no new number or identifier, not a list worked off. Weak novelty: not
        nothing new, but not enough against a request that keeps coming back."""
        if len(self.hashes) < LONG or len(other.hashes) < LONG:
            return False
        return self.rereads(other, words, near=WEAK)

    def pack(self) -> list[Any]:
        """Plain, text-free data for a snapshot."""
        return [list(self.hashes), sorted(self.facts), sorted(self.caps), sorted(self.lines),
                sorted(self.words)]

    @classmethod
    def unpack(cls, data: list[Any]) -> Sketch:
        sketch = cls.__new__(cls)
        hashes, found, caps, lines, words = data
        sketch.hashes = tuple(int(x) for x in hashes)
        sketch.facts = frozenset(int(x) for x in found)
        sketch.caps = frozenset(int(x) for x in caps)
        sketch.lines = frozenset(int(x) for x in lines)
        sketch.words = frozenset(int(x) for x in words)
        return sketch


def _bottom(words: list[str]) -> tuple[int, ...]:
    """The bottom-k sketch of the word 3-shingles of ``words``."""
    if len(words) <= SHINGLE:
        shingles = {" ".join(words)}
    else:
        shingles = {" ".join(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}
    return tuple(sorted({_h32(shingle) for shingle in shingles})[:SKETCH])


def _lines(lower: str) -> frozenset[int]:
    """The hashed lines of a case-folded text, list markers dropped."""
    return frozenset(_h32(" ".join(line)) for line in map(_line_words, lower.splitlines()) if line)


_MARKER = re.compile(r"^\s*(?:[-*•>#]+|\d+[.)]|\[[ xX]\])\s+")


def _line_words(line: str) -> list[str]:
    """A line's words without its list marker ("- ", "3. ", "[x] "): renumbering is no change."""
    return _TOKEN.findall(_MARKER.sub("", line))


def _h32(text: str) -> int:
    """A 32-bit hash: a sketch's members (half the snapshot size of 64 bits; a collision
    between two sketches of 256 members is about one in 65,000)."""
    return xxh3_64_intdigest(text.encode("utf-8", "surrogatepass")) & 0xFFFFFFFF
