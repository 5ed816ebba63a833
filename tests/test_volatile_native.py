"""The C accelerator's volatile-text masking and gate-word scan equal their pure-Python definitions.

``_canon.mask`` implements the built-in patterns of ``fingerprint.VOLATILE_PATTERNS`` by hand
(``VolatileMask.python_bytes``, each pattern's ``re.sub`` in turn, is the definition);
``_canon.Words`` tells which words of the step-text rule's gates a text holds (``_present`` of
``_lowered`` text, plain and letter-spaced). Both are compared on generated text made of the
patterns' own pieces, random bytes and non-ASCII text, and on every recorded run committed
under ``benchmarks/detection/data``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from liveguard.fingerprint import (
    DEFAULT_VOLATILE,
    NATIVE_DISABLED,
    NO_CANON_ENV,
    VOLATILE_PATTERNS,
    Fingerprinter,
)
from liveguard.model import Trajectory
from liveguard.rules import injection
from prereq import missing

if NATIVE_DISABLED:
    pytest.skip(
        f"the C accelerator is switched off ({NO_CANON_ENV}=1) for the pure-Python pass",
        allow_module_level=True,
    )
fingerprint = importlib.import_module("liveguard.fingerprint")
if getattr(fingerprint._native, "mask", None) is None:
    missing("the C accelerator liveguard._canon", "`make install` found no C compiler")

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "detection" / "data"
MASK = fingerprint.VolatileMask(DEFAULT_VOLATILE)

_PIECES = [
    # times and dates
    "2026-12-01T13:56:16Z",
    "2026/12/01 13:56",
    "2026-12-01 13:56:16.123+02:00",
    "2026-12-01T13:56:16,5-0530",
    "1999-01-01T00:00+01",
    "13:56:16",
    "1:05 pm",
    "1:05 P.M.",
    "12:30am",
    "9:07",
    "3:2",
    "12:345",
    "1:23:45.678",
    "10:10:10:10",
    "7:45PM.",
    "7:45 Pmx",
    "11:59:60,",
    "2026-12-01T13:56Zz",
    # durations
    "9 seconds ago",
    "2 hours ago",
    "1.5 min ago",
    "5msec ago",
    "3 days  ago",
    "4 s ago",
    "1,5 hrs ago",
    "took 1.23s",
    "Took: 340 ms",
    "elapsed=2.5 seconds",
    "duration 12 minutes",
    "latency:5ms",
    "RUNTIME 3h",
    "time taken 4.5 secs",
    "wall time: 2 days",
    "passed in 0.53s",
    "IN 1.0 Seconds",
    "in 3.14sec",
    "in 1.5 sx",
    "took 5 msx",
    "took  =  7 s",
    "elapsed\t9 mins",
    "took 1 millisecond",
    "took 2 milliseconds",
    # ids
    "123e4567-e89b-12d3-a456-426614174000",
    "123E4567-E89B-12D3-A456-426614174000x",
    "0123456789abcdef0123456789abcdef",
    "0123456789ABCDEF0123456789ABCDEF",
    "abcdefabcdefabcdefabcdefabcdefab",
    "01234567890123456789012345678901",
    "0123456789abcdef0123456789abcdef0",
    "request id: 7f3a9c2e",
    "trace_id=abc123def",
    "X-Request-ID: req_8f2k1x",
    "session-id 'abcdef'",
    'runid="-----z"',
    "correlation id #  abc-def-ghi",
    "span_id:  ab",
    "reqid=abcdef",
    "x-trace-id: 000000",
    "Request ID:\n  'abc_12'",
    "run_id = 12345",
    # joints and noise
    " ",
    "  ",
    "\t",
    "\n",
    "\\n",
    '"',
    "'",
    ":",
    "=",
    "#",
    "-",
    "_",
    ".",
    ",",
    "/",
    "+",
    "x",
    "Z",
    "a",
    "0",
    "9",
    "\x00~",
    "Zürich",
    "東京",
    "é",
    "\u212a",
    "ſ",
    "İ",
]
_TEXT = st.lists(
    st.sampled_from(_PIECES)
    | st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=6)
    | st.text(max_size=4),
    max_size=12,
).map("".join)


def _plain(data: bytes) -> bytes:
    """The patterns' definition: each one's ``re.sub`` in turn, no guard."""
    for name in DEFAULT_VOLATILE:
        data = re.sub(VOLATILE_PATTERNS[name].encode(), b"\x00~", data)
    return data


def _same(data: bytes) -> None:
    assert MASK.bytes(data) == MASK.python_bytes(data) == _plain(data), data


@pytest.mark.parametrize(
    "text",
    [
        "IN 1.0 Seconds",
        "done in\t1.5s",
        "In 2.25 sec",
        "abcdefab-abcd-abcd-abcd-abcdefabcdef",
        "2026-12-01T13:56:16ZIN 1.0 Seconds",
    ],
)
def test_the_python_guards_skip_no_match(text: str) -> None:
    """Cases the Python guards used to skip: ``in`` in capitals or before a tab (the pattern is
    case-insensitive, ``\\s`` any space), and a uuid without digits."""
    data = text.encode()
    assert _plain(data) != data
    assert MASK.python_bytes(data) == _plain(data)


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(_TEXT)
def test_native_mask_equals_the_patterns_on_text(text: str) -> None:
    _same(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.binary(max_size=80)
    | st.lists(st.sampled_from([p.encode() for p in _PIECES]) | st.binary(max_size=4), max_size=10).map(
        b"".join
    )
)
def test_native_mask_equals_the_patterns_on_bytes(data: bytes) -> None:
    _same(data)


@pytest.mark.parametrize("name", DEFAULT_VOLATILE)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_native_mask_equals_each_pattern_on_its_matches(name: str, data: st.DataObject) -> None:
    """Text drawn from each pattern itself, alone and in context, each pattern on its own."""
    one = fingerprint.VolatileMask([name])
    # hypothesis cannot draw from lookaheads: hex_id's candidates are runs of hex digits
    source = r"[0-9a-fA-F]{31,33}" if name == "hex_id" else VOLATILE_PATTERNS[name]
    match = data.draw(st.from_regex(re.compile(source.encode())))
    around = data.draw(
        st.sampled_from([b"", b" ", b"a", b"1", b":", b"-", b".", b"_", b"\xc3\xa9", b"s ago"])
    )
    for sample in (match, around + match, match + around, around + match + around + match):
        assert one.bytes(sample) == one.python_bytes(sample), sample


def test_native_mask_on_edge_cases() -> None:
    for sample in (
        b"",
        b"1",
        b"1:",
        b"1:2",
        b"12:34",
        b"a12:34",
        b"_12:34",
        b"12:34" * 50,
        b"9" * 5000 + b" s ago",
        b"took " + b" " * 300 + b"5 s",
        b"run_id" + b"=" * 3 + b"abcdef",
        b"\x00~12:34\x00~",
        b"2026-12-01T13:56:16Zdeadbeefdeadbeefdeadbeefdeadbeef1",
    ):
        _same(sample)
    assert MASK.bytes(b"at 13:56:16 today") == b"at \x00~ today"
    assert MASK.bytes(b"nothing volatile here") == b"nothing volatile here"


def test_native_mask_equals_the_patterns_on_recorded_runs() -> None:
    """Every step payload of the committed recorded runs (tool outputs with dates, ids, times)."""
    canonical = Fingerprinter().canonical_bytes
    checked = changed = 0
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open("rb") as f:
            for line in f:
                run = Trajectory.model_validate(orjson.loads(line))
                for step in run.steps:
                    for value in (step.summary, step.output, [step.tool, step.args, step.result, step.error]):
                        if value is None:
                            continue
                        data = canonical(value)
                        masked = MASK.bytes(data)
                        assert masked == MASK.python_bytes(data)
                        checked += 1
                        changed += masked != data
    assert checked > 10_000
    assert changed > 100


def test_custom_patterns_take_the_python_path() -> None:
    """A ``re:`` pattern is not the accelerator's: the whole mask runs in Python, in order."""
    custom = fingerprint.VolatileMask(["re:ab+", "clock_time"])
    assert custom._native_kinds is None
    assert custom.bytes(b"abb at 12:34") == b"\x00~ at \x00~"


_WORD_TEXT = st.lists(
    st.sampled_from(
        [
            *injection._GATE_WORDS,
            *(w.upper() for w in injection._GATE_WORDS[:40]),
            "ſcore",
            "İgnore",
            "\u212aeep",
            "a",
            "b c",
            "x-",
            "y/",
            "ſ.",
            "\u212a",
            "İ",
            "ı",
            " ",
            "\u2003",
            "\x85",
            ".",
            "-",
            "_",
            "*",
            "|",
            "+",
            "~",
            "/",
            "é",
            "東京",
            "i g n o r e",
        ]
    )
    | st.text(max_size=5),
    max_size=12,
).map("".join)


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(_WORD_TEXT)
def test_native_words_equal_the_substring_tests(text: str) -> None:
    assert injection._WORDS is not None
    plain, flat, spaced = injection._WORDS.present(text)
    assert spaced == (injection._SPACED.search(text) is not None)
    assert plain == injection._present(injection._lowered(text))
    assert flat == injection._present(injection._lowered(injection._SQUASH.sub("", text)))
    assert injection._field_codes(injection.normalise(text)) == injection._codes(injection.normalise(text))


def test_native_words_on_recorded_runs() -> None:
    assert injection._WORDS is not None
    checked = 0
    for path in sorted(DATA.glob("*.jsonl")):
        with path.open("rb") as f:
            for line in list(f)[::3]:
                run = Trajectory.model_validate(orjson.loads(line))
                for step in run.steps:
                    for name in injection._FIELDS:
                        value = getattr(step, name)
                        if value is None:
                            continue
                        text = injection.normalise(injection._text_of(value))
                        plain, flat, spaced = injection._WORDS.present(text)
                        assert spaced == (injection._SPACED.search(text) is not None)
                        assert plain == injection._present(injection._lowered(text))
                        assert flat == injection._present(injection._lowered(injection._SQUASH.sub("", text)))
                        assert injection._field_codes(text) == injection._codes(text)
                        checked += 1
    assert checked > 1000


def test_native_words_find_every_variant_and_no_look_alike() -> None:
    """The native gates on the rule's own injection variants (each found, with its code) and
    healthy look-alikes (none found): the gated scan is the definition's answer."""
    from test_injection_variants import LOOK_ALIKES, VARIANTS

    for _, code, raw in VARIANTS:
        text = injection.normalise(raw)
        assert code in injection._field_codes(text), raw
        assert injection._field_codes(text) == injection._codes(text)
    for raw in LOOK_ALIKES:
        text = injection.normalise(raw)
        assert injection._field_codes(text) == injection._codes(text) == [], raw
