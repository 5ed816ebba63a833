"""The C accelerator ``liveguard._canon`` writes exactly the bytes of the pure-Python walker."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import importlib.util
import math
import unicodedata
import uuid
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from fp_strategies import ignore_sets, values
from liveguard.errors import FingerprintError
from liveguard.fingerprint import (
    DEFAULT_IGNORE_KEYS,
    DEFAULT_VOLATILE,
    MAX_DEPTH,
    MESSAGE_VOLATILE_KEYS,
    NATIVE_DISABLED,
    NO_CANON_ENV,
    Fingerprinter,
    _convert,
    _maybe_json,
    fingerprint,
)
from prereq import missing

if NATIVE_DISABLED:
    pytest.skip(f"the C accelerator is switched off ({NO_CANON_ENV}=1) for the pure-Python pass",
                allow_module_level=True)
if importlib.util.find_spec("liveguard._canon") is None:
    missing("the C accelerator liveguard._canon",
            "`make install` found no C compiler; the pure-Python path is tested without it",
            module=True)

from liveguard import _canon

DEFAULT = Fingerprinter()


def native(obj: Any, ignore: frozenset[str] = DEFAULT_IGNORE_KEYS) -> bytes:
    """Call the extension exactly as Fingerprinter.canonical_bytes does."""
    out: bytes = _canon.dumps(obj, ignore, MESSAGE_VOLATILE_KEYS, _convert, _maybe_json, MAX_DEPTH)
    return out


def agrees(obj: Any, ignore: frozenset[str] = DEFAULT_IGNORE_KEYS) -> bool:
    """True when the extension declines ``obj`` (its own Decline only) or writes the reference bytes.

    Any other exception is a bug in the extension and fails the test.
    """
    try:
        out = native(obj, ignore)
    except _canon.Decline:
        return True
    return out == Fingerprinter(ignore).reference_bytes(obj)


def _nfc_collision(value: Any) -> bool:
    """True when some dict (after ``args`` parsing) has two keys equal after NFC."""
    if isinstance(value, dict):
        names = [unicodedata.normalize("NFC", k) for k in value]
        if len(set(names)) != len(names):
            return True
        for name, item in zip(names, value.values(), strict=True):
            parsed = _maybe_json(item) if name in ("args", "arguments") and isinstance(
                item, str) else item
            if _nfc_collision(parsed):
                return True
        return False
    if isinstance(value, list | tuple):
        return any(_nfc_collision(v) for v in value)
    return False


# -- (1) random JSON-like values ------------------------------------------------------------
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, ignore_sets)
def test_native_matches_reference_or_declines(value: Any, ignore: frozenset[str]) -> None:
    """Random JSON-like values: the extension declines or writes the reference bytes."""
    assert agrees(value, ignore)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, ignore_sets)
def test_native_never_declines_plain_json(value: Any, ignore: frozenset[str]) -> None:
    """Plain JSON data within the depth limit is always handled natively."""
    assume(not _nfc_collision(value))
    assert native(value, ignore) == Fingerprinter(ignore).reference_bytes(value)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(), max_size=6), max_size=4))
def test_lone_surrogates_decline_or_agree(strings: list[str]) -> None:
    """Strings with lone surrogates are declined (or, if handled, exact)."""
    assert agrees({s: s for s in strings})
    assert agrees(strings)


short_decimals = st.builds(
    lambda m, k, up: math.nextafter(m / 10**k, math.inf) if up else m / 10**k,
    st.integers(-(10**16), 10**16),
    st.integers(0, 22),
    st.booleans(),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(short_decimals | st.floats(allow_nan=False), min_size=1, max_size=50))
def test_floats_are_written_like_repr(numbers: list[float]) -> None:
    """Non-integral floats are written as repr() (short decimals take a native fast path)."""
    assert native(numbers) == DEFAULT.reference_bytes(numbers)


@pytest.mark.parametrize(
    "value",
    [
        None, True, False, 0, -1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1,
        2**5000, -(2**5000), 0.1, -0.0, 1.0, 1e20, 1e-7, 1.5e300, 5e-324, float("nan"),
        1234.5, -0.05, 1e-4, 1e-5, 0.30000000000000004, 99999999999999.9, 123456789012345.6,
        float("inf"), float("-inf"), "", 'a"b\\c/\n\r\t\b\f\x00\x1f\x7f\u2028', "é", "e\u0301",
        "\u212b", "😀", "\u1100\u1161\u11a8", {}, [], (), {"b": 1, "a": 2, "": 3, "é": 4, "z": 5},
        {"role": "user", "id": "m1", "content": "hi", "timestamp": 1},
        {"type": "text", "text": "x", "id": 3}, {"function": {}, "type": None, "id": 1},
        {"name": "f", "args": '{"b": 1, "a": [1, 2]}', "id": "c1"},
        {"name": "f", "arguments": " [1,", "tool_call_id": "c"},
        {"args": "  {\"x\": 1}"}, {"arguments": "not json"}, {"id": 1, "x": 2},
        {"cafe\u0301": "cafe\u0301", "caf\u00e9s": 1}, [[[["deep"]]]], list(range(40)),
        {f"k{i}": i for i in range(40)}, {"\u00ff": 1, "\u0100": 2, "\U0001f600": 3, "~": 4},
        "\u00e9" + "\x01" * 5000, "\u0100\n" * 3000, "😀\t" * 3000, '"' * 5000, "x" * 100_000,
        {f"k{i}": {f"j{j}": [j, "\u00e9"] for j in range(70)} for i in range(70)},
    ],
)
def test_native_handles_edge_values_exactly(value: Any) -> None:
    """Edge scalars and containers are written natively, byte for byte."""
    assert native(value) == DEFAULT.reference_bytes(value)


# -- (2) objects converted through the shared _convert callback -------------------------------
class Color(enum.Enum):
    """A plain Enum."""

    RED = "red"


class Level(enum.IntEnum):
    """An IntEnum: converted to its value, like any Enum."""

    HIGH = 3


class Mode(enum.StrEnum):
    """A StrEnum: hashed as its text."""

    FAST = "fa\u0301st"


class Tag(str):
    """A str subclass."""


class Count(int):
    """An int subclass."""


class Ratio(float):
    """A float subclass."""


@dataclasses.dataclass
class Point:
    """A dataclass with a nested container."""

    x: int
    y: float
    tags: list[str]


class Row(BaseModel):
    """A pydantic model."""

    name: str
    score: float


def _messages() -> list[Any]:
    return [
        AIMessage(
            "",
            tool_calls=[
                {"name": "run_sql", "args": {"query": "SELECT 1", "limit": 5}, "id": "call_1"},
                {"name": "search", "args": {"q": "caf\u00e9"}, "id": "call_2"},
            ],
            id="m1",
            response_metadata={"model": "x"},
            usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
        ),
        ToolMessage('{"rows": [[1, "a"]], "request_id": "r"}', tool_call_id="call_1", id="t1"),
        ToolMessage([{"type": "text", "text": "ok", "id": "b1"}], tool_call_id="call_2"),
        HumanMessage("hi", id="h1"),
    ]


@pytest.mark.parametrize(
    "value",
    [
        *_messages(),
        {"messages": _messages()},
        dt.datetime(2026, 1, 1, 12, 30, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        dt.datetime(2026, 1, 1, 12, 30, 1, 5),
        dt.date(2026, 1, 2),
        dt.time(7, 8, 9),
        Decimal("2.50"), Decimal("7"), Decimal("0.1"), Decimal("1e30"), Decimal("NaN"),
        Decimal("-Infinity"), Decimal("-0"),
        b"\x00\xff", bytearray(b"ab"), memoryview(b"xyz"),
        Color.RED, Level.HIGH, Mode.FAST, Tag("t\u00e9"), Count(2**70), Count(5), Ratio(2.0),
        Ratio(0.25), uuid.UUID(int=7), Point(1, 2.0, ["a"]), Row(name="r", score=1.5),
        {"at": dt.datetime(2026, 1, 1), "rows": [Row(name="a", score=0.5), Point(0, 0.5, [])]},
        {"k": Level.HIGH, "type": Tag("text"), "content": "c", "id": 1},
        {"args": Tag('{"a": 1}'), "name": "f"},
    ],
)
def test_native_converts_objects_exactly(value: Any) -> None:
    """Messages, datetimes, Decimal, bytes, Enum, UUID, dataclasses, models and subclasses."""
    reference = DEFAULT.reference_bytes(value)
    try:
        out = native(value)
    except _canon.Decline:
        pytest.fail(f"declined {value!r}")
    assert out == reference
    assert DEFAULT.canonical_bytes(value) == reference


@pytest.mark.parametrize(
    "value",
    [
        {1: "a"}, {"a": {(1, 2): 3}}, {3, 1, 2}, frozenset({"x"}), OrderedDict(a=1),
        [1, {2}], {Tag("k"): 1}, "\ud800", {"k": "x\udfff"}, {"cafe\u0301": 1, "caf\u00e9": 2},
    ],
)
def test_declined_values_still_fingerprint_like_the_walker(value: Any) -> None:
    """What the extension declines is fingerprinted by the walker instead."""
    with pytest.raises(_canon.Decline):
        native(value)
    assert DEFAULT.canonical_bytes(value) == DEFAULT.reference_bytes(value)


class Pretender:
    """Claims to be a str through ``__class__``, which isinstance() honours."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


def test_isinstance_look_alikes_are_declined() -> None:
    """Objects that only claim to be a str are left to the walker, which sees the claim."""
    for value in (Pretender(), {"type": Pretender(), "content": "c"}, [Pretender()]):
        with pytest.raises(_canon.Decline):
            native(value)


def test_decline_is_a_value_error_and_callback_errors_propagate() -> None:
    """Decline is a ValueError; a converter's exception reaches the caller."""
    assert issubclass(_canon.Decline, ValueError)

    def boom(_: Any) -> Any:
        raise KeyError("nope")

    with pytest.raises(KeyError):
        _canon.dumps([object()], DEFAULT_IGNORE_KEYS, MESSAGE_VOLATILE_KEYS, boom, _maybe_json, 5)
    with pytest.raises(FingerprintError, match="unsupported type object"):
        fingerprint({"a": [object()]})


# -- (3) depth and cycles ------------------------------------------------------------------
def _nested_lists(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _nested_dicts(levels: int) -> Any:
    value: Any = {}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


@pytest.mark.parametrize("nest", [_nested_lists, _nested_dicts])
def test_depth_limit_matches_the_walker(nest: Any) -> None:
    """MAX_DEPTH nested containers pass; one more is declined natively and rejected."""
    ok = nest(MAX_DEPTH)
    assert native(ok) == DEFAULT.reference_bytes(ok)
    too_deep = nest(MAX_DEPTH + 1)
    with pytest.raises(_canon.Decline):
        native(too_deep)
    with pytest.raises(FingerprintError, match="nesting"):
        fingerprint(too_deep)


def test_converted_objects_add_no_depth() -> None:
    """A datetime (a tag dict once converted) at the deepest level counts as a container."""
    at_limit: Any = dt.date(2026, 1, 1)
    for _ in range(MAX_DEPTH - 1):
        at_limit = [at_limit]
    assert native(at_limit) == DEFAULT.reference_bytes(at_limit)
    with pytest.raises(_canon.Decline):
        native([at_limit])
    with pytest.raises(FingerprintError, match="nesting"):
        fingerprint([at_limit])


def test_cycles_are_declined_and_rejected_quickly() -> None:
    """A cyclic list is declined by C and rejected by fingerprint() with FingerprintError."""
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    cyclic_dict: dict[str, Any] = {"role": "user"}
    cyclic_dict["self"] = [cyclic_dict]
    for value in (cyclic, cyclic_dict):
        with pytest.raises(_canon.Decline):
            native(value)
        with pytest.raises(FingerprintError, match="cyclic"):
            fingerprint(value)


# -- (4) ignore keys ------------------------------------------------------------------------
def test_custom_ignore_keys_are_honoured() -> None:
    """A custom ignore set drops its keys at any depth and stops dropping the defaults."""
    custom = frozenset({"fetched_at", "caf\u00e9"})
    value = {
        "fetched_at": 1, "request_id": "r", "rows": [{"fetched_at": 2, "v": 1}],
        "caf\u00e9": 1, "cafe\u0301": 2,  # only the exact (raw) key is dropped, as in the walker
    }
    out = native(value, custom)
    assert out == Fingerprinter(custom).reference_bytes(value)
    assert out == '{"café":2,"request_id":"r","rows":[{"v":1}]}'.encode()
    assert Fingerprinter(custom)(value) == Fingerprinter(custom)({**value, "fetched_at": 9})


def test_escapes_at_every_offset_of_a_block() -> None:
    """ASCII strings are read 16 bytes at a time to the next byte to escape: each escape is written
    whatever its offset, next to others, at either end, and in strings shorter than a block."""
    for escaped in ("\n", '"', "\\", "\x00", "\x01", "\x1f", "\t", "\x7f", " "):
        for size in (0, 1, 15, 16, 17, 31, 33, 48):
            for at in range(size + 1):
                text = "a" * at + escaped + "b" * (size - at)
                for value in (text, [text, text * 2], {text: text[::-1]}):
                    assert native(value) == DEFAULT.reference_bytes(value), repr(text)
    text = "".join(chr(c) for c in range(128)) * 3
    assert native(text) == DEFAULT.reference_bytes(text)


# -- the Monitor's digest: canonical JSON and masking in one call ----------------------------
_VOLATILE_VALUES = st.recursive(
    st.sampled_from(["took 1.5s", "at 12:30:01", "id 123e4567-e89b-12d3-a456-426614174000", "x", 3, None]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "id"]), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values | _VOLATILE_VALUES, ignore_sets, st.sampled_from([(), DEFAULT_VOLATILE, ("uuid", "elapsed")]))
def test_native_canonical_is_canonical_bytes_or_declines(
    value: Any, ignore: frozenset[str], volatile: tuple[str, ...]
) -> None:
    """``Fingerprinter.native_canonical`` (one call: canonical JSON, then the built-in volatile
    patterns) gives ``canonical_bytes``, or declines what the walker then decides."""
    if not hasattr(_canon, "canonical"):
        pytest.skip("this liveguard._canon predates canonical(): rebuild it (make install)")
    fingerprinter = Fingerprinter(ignore, volatile=volatile)
    assert fingerprinter.native_canonical is not None
    try:
        out = fingerprinter.native_canonical(value)
    except _canon.Decline:
        return
    assert out == fingerprinter.canonical_bytes(value)


def test_the_monitor_digests_like_raw_digest() -> None:
    """The Monitor digests through ``native_canonical`` and falls back to ``raw_digest`` for what
    it declines (a set, a dict with a non-string key); a ``re:`` pattern has no native form."""
    from liveguard import Monitor, Policy, Step

    assert Fingerprinter(volatile=("re:abc",)).native_canonical is None
    payloads = [{"out": "took 1.5s at 12:30"}, {3, 1}, {1: "a"}, "plain", ["\ud800"], {"v": 10**30}]
    for volatile in ((), DEFAULT_VOLATILE, ("re:[0-9]+",)):
        monitor = Monitor(Policy(volatile=volatile))
        fingerprinter = Fingerprinter(Policy().ignore_keys, volatile=volatile)
        for payload in payloads:
            assert monitor._digest(payload) == fingerprinter.raw_digest(payload), (volatile, payload)
        step = Step(node="n", summary="done at 12:30")
        assert monitor.digest(step) == fingerprinter.raw_digest("done at 12:30").hex()
