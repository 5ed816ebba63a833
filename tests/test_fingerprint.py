"""Canonical fingerprints: equal for payloads that mean the same, different otherwise."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import unicodedata
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from fp_strategies import ignore_sets as fp_ignore_sets
from fp_strategies import values as fp_values
from liveguard.core.fingerprint import MAX_DEPTH, Fingerprinter, canonical_bytes, fingerprint
from liveguard.errors import FingerprintError, safe_key


def test_key_order_never_matters() -> None:
    assert fingerprint({"a": 1, "b": {"x": 1, "y": 2}}) == fingerprint({"b": {"y": 2, "x": 1}, "a": 1})


def test_tool_call_arguments_json_text_is_parsed() -> None:
    """OpenAI sends arguments as JSON text; whitespace and key order must not hide a repeat."""
    a = {"name": "run_sql", "arguments": '{"q": "SELECT 1", "n": 2}'}
    b = {"name": "run_sql", "arguments": '{"n":2,"q":"SELECT 1"}'}
    c = {"name": "run_sql", "args": {"q": "SELECT 1", "n": 2}}
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint({"name": "run_sql", "args": '{"q":"SELECT 1","n":2}'}) == fingerprint(c)
    assert fingerprint(a) != fingerprint({"name": "run_sql", "arguments": '{"q": "SELECT 2", "n": 2}'})


def test_unicode_nfc_and_nfd_are_equal() -> None:
    nfc = "café résumé"
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd
    assert fingerprint({nfd: nfd}) == fingerprint({nfc: nfc})


@pytest.mark.parametrize(
    ("left", "right"),
    [(1, 1.0), (-0.0, 0.0), (0, -0.0), ((1, 2), [1, 2]), ({3, 1, 2}, frozenset({2, 3, 1})),
     (Decimal("2.50"), 2.5), (Decimal("7"), 7), (10**20, 1e20)],
)
def test_numbers_and_collections_compare_by_value(left: Any, right: Any) -> None:
    assert fingerprint(left) == fingerprint(right)


def test_datetimes_equal_when_same_instant() -> None:
    utc = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    paris = utc.astimezone(dt.timezone(dt.timedelta(hours=1)))
    assert fingerprint({"at": utc}) == fingerprint({"at": paris})
    assert fingerprint(utc) != fingerprint(utc.replace(tzinfo=None))
    assert fingerprint(utc) != fingerprint(utc + dt.timedelta(seconds=1))


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


class Model(BaseModel):
    name: str
    tags: list[str]


def test_other_types_are_handled() -> None:
    assert fingerprint(b"\x00\x01") != fingerprint("\x00\x01")
    assert fingerprint(Color.RED) == fingerprint("red")
    assert fingerprint(Point(1, 2.0)) == fingerprint({"x": 1, "y": 2})
    assert fingerprint(Model(name="a", tags=["x"])) == fingerprint({"name": "a", "tags": ["x"]})
    u = uuid.UUID(int=7)
    assert fingerprint(u) == fingerprint(str(u))
    assert fingerprint(Decimal("0.1")) != fingerprint(Decimal("0.10000000000000000001"))


def test_langchain_messages_ignore_ids_and_metadata() -> None:
    """Two identical tool calls with different call ids are the same call."""
    a = AIMessage("", tool_calls=[{"name": "q", "args": {"a": 1, "b": 2}, "id": "call_1"}], id="m1",
                  response_metadata={"model": "x"}, usage_metadata={"input_tokens": 1,
                  "output_tokens": 2, "total_tokens": 3})
    b = AIMessage("", tool_calls=[{"name": "q", "args": {"b": 2, "a": 1}, "id": "call_2"}], id="m2")
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(ToolMessage("boom", tool_call_id="c1")) == fingerprint(
        ToolMessage("boom", tool_call_id="c2")
    )
    assert fingerprint(ToolMessage("boom", tool_call_id="c1")) != fingerprint(
        ToolMessage("fine", tool_call_id="c1")
    )
    assert fingerprint(HumanMessage("hi", id="1")) == fingerprint(HumanMessage("hi", id="2"))


def test_openai_message_dicts_ignore_ids() -> None:
    def call(call_id: str, arguments: str) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "run_sql", "arguments": arguments}}]}

    assert fingerprint(call("call_a", '{"q": 1}')) == fingerprint(call("call_b", '{"q":1}'))
    assert fingerprint({"role": "tool", "tool_call_id": "x", "content": "e"}) == fingerprint(
        {"role": "tool", "tool_call_id": "y", "content": "e"}
    )


def test_ids_in_plain_data_are_data() -> None:
    """Only message-shaped dicts lose their ids: two different rows stay different."""
    assert fingerprint({"id": 1, "name": "a"}) != fingerprint({"id": 2, "name": "a"})


def test_ignore_keys_are_configurable() -> None:
    assert fingerprint({"rows": 3, "request_id": "r1"}) == fingerprint({"rows": 3, "request_id": "r2"})
    custom = Fingerprinter(ignore_keys={"fetched_at"})
    assert custom({"r": 1, "fetched_at": "t1"}) == custom({"r": 1, "fetched_at": "t2"})
    assert custom({"r": 1, "request_id": "a"}) != custom({"r": 1, "request_id": "b"})


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), 2**64, 2**200, -(2**70), None]
)
def test_special_numbers_hash_without_collisions(value: Any) -> None:
    others = [float("nan"), float("inf"), float("-inf"), 2**64, 2**200, -(2**70), None, 0, "nan"]
    digest = fingerprint(value)
    assert [fingerprint(o) == digest for o in others].count(True) == 1


def test_int_boundaries() -> None:
    for edge in (2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1):
        assert fingerprint(int(float(edge))) == fingerprint(float(edge))
        assert fingerprint(edge) != fingerprint(edge + 1)


class Opaque:
    pass


def test_unserializable_object_raises_typed_error_with_location() -> None:
    with pytest.raises(FingerprintError) as info:
        fingerprint({"args": {"rows": [1, Opaque()]}})
    assert isinstance(info.value, ValueError)
    assert info.value.path == f"$.args.{safe_key('rows')}[1]"  # a user key is shown as a digest
    assert info.value.path.startswith("$.args.#")
    assert "rows" not in str(info.value)
    assert "0x" not in str(info.value)  # no repr with a memory address


def test_cycles_and_deep_nesting_raise_quickly() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    deep: Any = []
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    very_deep: Any = {}
    for _ in range(100_000):
        very_deep = {"k": very_deep}
    with pytest.raises(FingerprintError, match="cyclic"):
        fingerprint(cyclic)
    with pytest.raises(FingerprintError, match="nesting"):
        fingerprint(deep)
    with pytest.raises(FingerprintError, match="nesting"):
        fingerprint(very_deep)
    # "Quickly" is structural: the walk stops at MAX_DEPTH, so 100,000 levels cost 100.


def test_max_depth_is_accepted() -> None:
    ok: Any = []
    for _ in range(MAX_DEPTH - 1):
        ok = [ok]
    assert len(fingerprint(ok)) == 32


def test_canonical_bytes_are_compact_sorted_json() -> None:
    assert canonical_bytes({"b": [1.0, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}'.encode()


# -- properties -----------------------------------------------------------------------------
json_leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.floats(
    allow_nan=False, allow_infinity=False
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def _permute(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _permute(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_permute(v) for v in value]
    return value


def _nfd(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, dict):
        return {_nfd(k): _nfd(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nfd(v) for v in value]
    return value


def _floats(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) < 2**53:
        return float(value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_digest_is_invariant_under_key_permutation_nfd_and_int_float(value: Any) -> None:
    digest = fingerprint(value)
    assert fingerprint(_permute(value)) == digest
    assert fingerprint(_nfd(value)) == digest
    assert fingerprint(_floats(value)) == digest


@settings(max_examples=200, deadline=None)
@given(json_values, json_values)
def test_different_payloads_get_different_digests(a: Any, b: Any) -> None:
    if Fingerprinter().normalize(a) != Fingerprinter().normalize(b):
        assert fingerprint(a) != fingerprint(b)


def test_keys_equal_after_nfc_do_not_depend_on_insertion_order() -> None:
    nfc, nfd = "café", unicodedata.normalize("NFD", "café")
    assert fingerprint({nfc: 1, nfd: 2}) == fingerprint({nfd: 2, nfc: 1})


def test_str_subclass_keys_hash_as_their_text() -> None:
    class Key(str, enum.Enum):  # noqa: UP042 - the mixin form is the case str() gets wrong
        X = "x"

    assert fingerprint({Key.X: 1}) == fingerprint({"x": 1})


@settings(max_examples=200, deadline=None)
@given(value=fp_values, ignore=fp_ignore_sets)
def test_raw_digest_is_the_hex_digest_as_bytes(value: Any, ignore: frozenset[str]) -> None:
    """The Monitor keeps ``raw_digest`` bytes; evidence and snapshots carry ``fingerprint`` hex."""
    fp = Fingerprinter(ignore)
    assert fp.raw_digest(value) == bytes.fromhex(fp(value))
    assert len(fp.raw_digest(value)) == 16


def test_raw_digest_raises_like_fingerprint() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    fp = Fingerprinter()
    for bad in (cyclic, {"args": {"rows": [1, Opaque()]}}):
        with pytest.raises(FingerprintError) as raw:
            fp.raw_digest(bad)
        with pytest.raises(FingerprintError) as hexed:
            fp(bad)
        assert (raw.value.path, str(raw.value)) == (hexed.value.path, str(hexed.value))
