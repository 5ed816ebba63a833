"""The multi-pattern matcher (``liveguard.core._matcher``, RE2's ``Set``) never answers less than the
definitions it stands in front of: ``WordSet`` is ``word in text`` for each word, exactly;
``PatternSet`` finds every pattern ``re.search`` finds (a superset: RE2 reads each pattern with its
lookarounds dropped and ``\\s`` widened to Python's)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from liveguard.core._matcher import SHORT, PatternSet, WordSet, prefilter_source
from liveguard.core.fingerprint import DEFAULT_VOLATILE, VOLATILE_PATTERNS
from liveguard.core.rules import injection

WORDS = injection._JSON_WORDS
WORD_SET = WordSet(WORDS)
PATTERNS = PatternSet([VOLATILE_PATTERNS[name] for name in DEFAULT_VOLATILE])


def test_prefilter_source_drops_lookarounds_and_widens_whitespace() -> None:
    assert prefilter_source(r"a(?=b)c(?!d)e") == "ace"
    assert prefilter_source(r"(?<=x)y(?<!z)") == "y"
    assert prefilter_source(r"\d(?![\d:])") == r"\d"
    assert prefilter_source(r"a\sb") == r"a[\s\v]b"
    assert prefilter_source(r"[\s.]") == r"[\s\v.]"
    assert prefilter_source(r"[^\s]") == r"[^\s\v]"  # never narrower: RE2 excludes the vertical tab too
    assert prefilter_source(r"[]\s]") == r"[\]\s\v]"
    assert prefilter_source(r"\\s") == r"\\s"  # an escaped backslash, then a letter


def test_a_pattern_re2_cannot_read_always_may_match() -> None:
    both = PatternSet([r"(a)\1", None, "b"])
    assert both.may_match(b"") == 0b011
    assert both.may_match(b"b") == 0b111


_WORD_TEXT = st.lists(
    st.sampled_from([*WORDS, *(w.upper() for w in WORDS[:30]), "\u017f", "\u212a", "\u0130", "é", "東",
                     " ", "-", '"', "\\n"])
    | st.text(max_size=5),
    max_size=10,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_WORD_TEXT)
def test_word_set_is_the_substring_tests(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    expected = sum(1 << i for i, word in enumerate(WORDS) if word.encode() in data)
    assert WORD_SET.mask(data) == expected
    assert WORD_SET.any(data) is (expected != 0)
    if text.isascii():  # str text is searched as UTF-8
        low = text.lower()
        assert WORD_SET.mask(low) == sum(1 << i for i, word in enumerate(WORDS) if word in low)


@pytest.mark.parametrize("name", DEFAULT_VOLATILE)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_pattern_set_finds_what_re_finds(name: str, data: st.DataObject) -> None:
    """Text drawn from each volatile pattern, in any context: whenever ``re`` finds the pattern,
    the matcher says it may match."""
    n = DEFAULT_VOLATILE.index(name)
    source = r"[0-9a-fA-F]{31,33}" if name == "hex_id" else VOLATILE_PATTERNS[name]
    match = data.draw(st.from_regex(re.compile(source.encode())))
    around = data.draw(st.binary(max_size=6) | st.sampled_from([b"\x0b", b" ", b"\xc3\xa9", b"in ", b"IN\t"]))
    for sample in (match, around + match, match + around):
        if re.search(VOLATILE_PATTERNS[name].encode(), sample):
            assert PATTERNS.may_match(sample) >> n & 1, sample


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=60) | st.text(max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_pattern_set_finds_what_re_finds_on_any_bytes(data: bytes) -> None:
    may = PATTERNS.may_match(data)
    for n, name in enumerate(DEFAULT_VOLATILE):
        if re.search(VOLATILE_PATTERNS[name].encode(), data):
            assert may >> n & 1, (name, data)


RE2_ONLY = PatternSet([VOLATILE_PATTERNS[name] for name in DEFAULT_VOLATILE], short=-1)
"""The same set with every input read by RE2 (no short path), so RE2's superset stays tested."""


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=60) | st.text(max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_re2_alone_finds_what_re_finds_on_any_bytes(data: bytes) -> None:
    may = RE2_ONLY.may_match(data)
    for n, name in enumerate(DEFAULT_VOLATILE):
        if re.search(VOLATILE_PATTERNS[name].encode(), data):
            assert may >> n & 1, (name, data)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=140) | st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_short_bytes_are_read_by_the_definitions_exactly(data: bytes) -> None:
    """Up to ``SHORT`` bytes the answer is exactly the patterns ``re.search`` finds (the GIL is
    never released for them); longer, RE2's superset."""
    exact = sum(1 << n for n, name in enumerate(DEFAULT_VOLATILE)
                if re.search(VOLATILE_PATTERNS[name].encode(), data))
    if len(data) <= SHORT:
        assert PATTERNS.may_match(data) == exact
    else:
        assert PATTERNS.may_match(data) == RE2_ONLY.may_match(data)
    assert PatternSet([r"(a)\1", "b"]).may_match(b"b" * (SHORT + 1)) == 0b11  # unreadable: always
