"""The volatile masks: the matcher-pre-filtered mask equals each pattern's ``re.sub`` in turn.

``VolatileMask.reference_bytes`` (each built-in pattern's ``re.sub`` in turn) is the definition;
``VolatileMask.bytes`` skips the patterns the RE2 pre-filter (``liveguard.core._matcher.PatternSet``)
rules out, and asks it again after a mask changed the bytes. Compared on text made of the
patterns' own pieces, random bytes and non-ASCII text, on text drawn from each pattern, and on
every payload of the recorded runs committed under ``benchmarks/detection/data`` and
``golden_datasets``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from liveguard.core.fingerprint import DEFAULT_VOLATILE, VOLATILE_PATTERNS, Fingerprinter, VolatileMask
from liveguard.core.model import Trajectory

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "detection" / "data"
GOLDEN = Path(__file__).resolve().parents[1] / "golden_datasets"
MASK = VolatileMask(DEFAULT_VOLATILE)

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
    """The patterns' definition: each one's ``re.sub`` in turn, no pre-filter."""
    for name in DEFAULT_VOLATILE:
        data = re.sub(VOLATILE_PATTERNS[name].encode(), b"\x00~", data)
    return data


def _same(data: bytes) -> None:
    assert MASK.bytes(data) == MASK.reference_bytes(data) == _plain(data), data


@pytest.mark.parametrize(
    "text",
    [
        "IN 1.0 Seconds",
        "done in\t1.5s",
        "done in\x0b1.5s",  # Python's \s holds the vertical tab, RE2's does not: widened
        "In 2.25 sec",
        "abcdefab-abcd-abcd-abcd-abcdefabcdef",
        "2026-12-01T13:56:16ZIN 1.0 Seconds",  # the first mask puts a word boundary before "IN"
        "12:30in 1.5s",
        "at 1:05\x0bpm",
    ],
)
def test_cases_a_prefilter_could_miss(text: str) -> None:
    """``in`` in capitals or after a vertical tab, a uuid without digits, and a match that exists
    only once an earlier pattern has masked: each masked as the definition masks it."""
    data = text.encode()
    assert _plain(data) != data
    _same(data)


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(_TEXT)
def test_mask_equals_the_patterns_on_text(text: str) -> None:
    _same(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.binary(max_size=80)
    | st.lists(st.sampled_from([p.encode() for p in _PIECES]) | st.binary(max_size=4), max_size=10).map(
        b"".join
    )
)
def test_mask_equals_the_patterns_on_bytes(data: bytes) -> None:
    _same(data)


@pytest.mark.parametrize("name", DEFAULT_VOLATILE)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mask_equals_each_pattern_on_its_matches(name: str, data: st.DataObject) -> None:
    """Text drawn from each pattern itself, alone and in context, each pattern on its own."""
    one = VolatileMask([name])
    # hypothesis cannot draw from lookaheads: hex_id's candidates are runs of hex digits
    source = r"[0-9a-fA-F]{31,33}" if name == "hex_id" else VOLATILE_PATTERNS[name]
    match = data.draw(st.from_regex(re.compile(source.encode())))
    around = data.draw(
        st.sampled_from([b"", b" ", b"a", b"1", b":", b"-", b".", b"_", b"\xc3\xa9", b"s ago", b"\x0b"])
    )
    for sample in (match, around + match, match + around, around + match + around + match):
        assert one.bytes(sample) == one.reference_bytes(sample), sample


def test_mask_on_edge_cases() -> None:
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


def test_custom_patterns_always_run_in_order() -> None:
    """A ``re:`` pattern has no pre-filter (RE2 may read a Python pattern otherwise): it always
    runs, in its place among the built-in ones."""
    custom = VolatileMask(["re:ab+", "clock_time", r"re:(?<=x)\d$"])
    assert custom.bytes(b"abb at 12:34") == b"\x00~ at \x00~"
    assert custom.bytes(b"x1") == custom.reference_bytes(b"x1") == b"x\x00~"


def _recorded_runs() -> Iterator[tuple[Path, Trajectory]]:
    """Every committed recorded run with its file: ``benchmarks/detection/data`` and
    ``golden_datasets`` (JSONL and the LangSmith exports)."""
    from liveguard.readers.langsmith import load_export

    for path in [*sorted(DATA.glob("*.jsonl")), *sorted(GOLDEN.glob("*.jsonl"))]:
        with path.open("rb") as f:
            for line in f:
                yield path, Trajectory.model_validate(orjson.loads(line))
    for path in sorted((GOLDEN / "langsmith").glob("*.json")):
        for run in load_export(path):
            yield path, run


def test_mask_equals_the_patterns_on_recorded_runs() -> None:
    """Every step payload of the committed recorded runs (tool outputs with dates, ids, times)."""
    canonical = Fingerprinter().canonical_bytes
    checked = changed = 0
    files = set()
    for path, run in _recorded_runs():
        files.add(path.parent.name)
        for step in run.steps:
            for value in (step.summary, step.output, [step.tool, step.args, step.result, step.error]):
                if value is None:
                    continue
                data = canonical(value)
                expected = MASK.reference_bytes(data)
                assert MASK.bytes(data) == expected, (path.name, data[:200])
                checked += 1
                changed += expected != data
    assert files == {"data", "golden_datasets", "langsmith"}
    assert checked > 10_000
    assert changed > 100
