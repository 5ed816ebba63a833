"""One multi-pattern matcher (RE2's ``Set``, from ``google-re2``) for the pre-filters.

Two tables are searched in one pass each instead of one ``in`` test or one ``re`` search per
entry: the volatile patterns of :mod:`liveguard.core.fingerprint` and the words of the step-text
rule (:mod:`liveguard.core.rules.injection`). The matcher never decides what matches: the ``re``
definitions do. It only says which entries *may* be present, so the others are skipped, and a
test holds every answer a pre-filter gives to be a superset of the definition's
(docs/matcher.md has the choice and the measurements).

* :class:`WordSet`: which of a tuple of literal words occur in a text (exactly: ``word in
  text`` for each), as a bit mask (bit ``i``: word ``i``).
* :class:`PatternSet`: which of a tuple of Python ``re`` sources may match bytes; each source is
  translated to RE2 as a *superset* (lookarounds dropped, ``\\s`` widened to Python's vertical
  tab), searched in Latin-1 (one byte, one character: as Python's ``re`` reads bytes). A
  source RE2 cannot read is "always may match". Bytes no longer than :data:`SHORT` are read by
  the definitions themselves (Python's ``re``, exact): RE2's wrapper releases the GIL on every
  search, and on a live run whose checkpointer writes in a background thread each release
  hands the GIL over (a thread switch each step, dearer than the search it saves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import re2

__all__ = ["SHORT", "PatternSet", "WordSet", "prefilter_source"]

SHORT: Final = 128
"""Bytes up to this length: :meth:`PatternSet.may_match` runs the ``re`` definitions (exact, the
GIL held) instead of RE2's set (one pass, the GIL released)."""

_LOOKAROUND: Final = re.compile(r"\(\?<?[=!](?:[^()\\]|\\.|\((?:[^()\\]|\\.)*\))*\)")
"""A lookahead or lookbehind group (one level of nesting inside): dropped, a superset."""


def prefilter_source(source: str) -> str:
    """An RE2 pattern that matches (bytes, Latin-1) wherever Python's ``re`` source ``source``
    does: its lookarounds dropped, and ``\\s`` widened to Python's ``[ \\t\\n\\r\\f\\v]`` (RE2's
    ``\\s`` leaves out ``\\v``)."""
    source = _LOOKAROUND.sub("", source)
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source):
            pair = source[i : i + 2]
            if pair == r"\s":
                out.append(r"\s\v" if in_class else r"[\s\v]")
            else:
                out.append(pair)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            if source[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if source[i + 1 : i + 2] == "]":  # a literal ] first in a class
                out.append("\\]")
                i += 1
        elif ch == "]" and in_class:
            in_class = False
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _options(*, latin1: bool = False) -> Any:
    options = re2.Options()
    options.log_errors = False
    if latin1:
        options.encoding = re2.Options.Encoding.LATIN1
    return options


class WordSet:
    """The presence of each of ``words`` (literal, case-sensitive) in a text, in one pass.

    ``exact`` adds RE2 patterns after the words (bit ``len(words) + j``: ``exact[j]`` found); only
    patterns whose RE2 reading is Python's on the texts searched belong there (ASCII literals
    and classes of ASCII characters: a character beyond ASCII never matches either)."""

    __slots__ = ("_match", "_search", "words")

    def __init__(self, words: Sequence[str], exact: Sequence[str] = ()) -> None:
        self.words = tuple(words)
        sources = [*map(re2.escape, self.words), *exact]
        matcher = re2.Set.SearchSet(_options())
        for source in sources:
            matcher.Add(source)
        matcher.Compile()
        self._match = matcher.Match
        # "any of them": one search that stops at the first match (a Set reads the whole text)
        self._search = re2.compile("|".join(f"(?:{source})" for source in sources), _options()).search

    def mask(self, text: str | bytes) -> int:
        """Bit ``i`` set when ``words[i] in text`` (str text is searched as UTF-8, a lone
        surrogate as ``?``: no word holds either)."""
        if isinstance(text, str):  # bytes: RE2's wrapper maps str offsets, at a cost
            text = text.encode("utf-8", "replace")
        found = self._match(text)
        mask = 0
        if found:
            for i in found:
                mask |= 1 << i
        return mask

    def any(self, text: str | bytes) -> bool:
        """True when one of the words (or ``exact`` patterns) is in ``text``: :meth:`mask` is not
        0, found by one search that stops at the first match."""
        if isinstance(text, str):
            text = text.encode("utf-8", "replace")
        return self._search(text) is not None


def _found(data: bytes) -> object:
    """A stand-in for the search of a source Python cannot compile: found, always."""
    return data


class PatternSet:
    """Which of the Python ``re`` byte patterns ``sources`` may match, in one pass.

    ``None`` for an entry of ``sources`` leaves it out (it "may match" always), as does a
    source RE2 cannot read. :meth:`may_match` answers a superset of the patterns that
    ``re.search`` finds in the bytes (``tests/test_matcher.py``)."""

    __slots__ = ("_always", "_exact", "_ids", "_match", "_short")

    def __init__(self, sources: Sequence[str | None], *, short: int = SHORT) -> None:
        matcher = re2.Set.SearchSet(_options(latin1=True))
        always = 0
        ids: list[int] = []
        for n, source in enumerate(sources):
            if source is None:
                always |= 1 << n
                continue
            try:
                matcher.Add(prefilter_source(source).encode("latin-1"))
            except (re2.error, UnicodeEncodeError):  # RE2 cannot read it: that pattern always runs
                always |= 1 << n
                continue
            ids.append(n)
        self._always = always
        self._ids = tuple(ids)
        self._match = matcher.Match if ids else None
        if ids:
            matcher.Compile()
        self._short = short
        # the definitions, for short bytes: (bit, compiled source) of each entry RE2 reads
        exact: list[tuple[int, Callable[[bytes], object]]] = []
        for n in ids:
            try:
                exact.append((1 << n, re.compile(str(sources[n]).encode("utf-8")).search))
            except re.error:  # not a Python pattern: it may match, always, on short bytes
                exact.append((1 << n, _found))
        self._exact = tuple(exact)

    def may_match(self, data: bytes) -> int:
        """Bit ``n`` set when pattern ``n`` may match ``data``."""
        mask = self._always
        if len(data) <= self._short:  # exact: the bits of the patterns ``re.search`` finds
            for bit, search in self._exact:
                if search(data) is not None:
                    mask |= bit
            return mask
        if self._match is not None:
            found = self._match(data)
            if found:
                ids = self._ids
                for i in found:
                    mask |= 1 << ids[i]
        return mask
