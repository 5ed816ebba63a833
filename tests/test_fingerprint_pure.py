"""The pure-Python path is first class: the fast pre-pass + orjson writes the walker's bytes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from benchmarks.corpus import CLASSES, build_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage

from fp_strategies import ignore_sets, keys, values
from liveguard.core.fingerprint import Fingerprinter, fingerprint
from liveguard.errors import FingerprintError, safe_key

DEFAULT = Fingerprinter()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values, ignore_sets)
def test_fast_path_matches_the_walker(value: Any, ignore: frozenset[str]) -> None:
    """Random JSON-like values (NFD keys, big ints, small floats, JSON-text args): same bytes."""
    fp = Fingerprinter(ignore)
    assert fp.python_bytes(value) == fp.reference_bytes(value)


objects = st.sampled_from([
    dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.date(2026, 1, 2), Decimal("2.5"), Decimal("1e-9"),
    b"\x00\xff", frozenset({1, "a"}), {3, 1}, (1, 2), 1e-5, -2.5e-300, 0.0001, 1e-4 + 1e-12,
    AIMessage("", tool_calls=[{"name": "f", "args": {"q": 1}, "id": "c1"}], id="m"),
    ToolMessage("ok", tool_call_id="c1"), "\ud800", {1: "int key"}, {(1, 2): "tuple key"},
])
mixed = st.recursive(
    values | objects,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed)
def test_fast_path_matches_the_walker_on_objects_sets_and_declines(value: Any) -> None:
    """Sets, non-str keys, lone surrogates and exponent floats go to the walker: same bytes."""
    try:
        expected = DEFAULT.reference_bytes(value)
    except FingerprintError:
        with pytest.raises(FingerprintError):
            DEFAULT.python_bytes(value)
        return
    assert DEFAULT.python_bytes(value) == expected


def test_every_benchmark_payload_matches() -> None:
    """All 2,400 payloads of benchmarks/corpus.py: byte-identical to the definition."""
    corpus = build_corpus()
    payloads = [p for cls in CLASSES for p in corpus.payloads[cls]]
    assert len(payloads) == 2400
    differing = [i for i, p in enumerate(payloads) if DEFAULT.python_bytes(p) != DEFAULT.reference_bytes(p)]
    assert differing == []


@pytest.mark.parametrize("value", [1e-5, [1.5e-7, 0.5], {"x": 5e-324}, 0.0001, 99999999999999.9])
def test_floats_written_like_repr(value: Any) -> None:
    """orjson writes 1e-5 as 0.00001; repr (the definition) as 1e-05: those go to the walker."""
    assert DEFAULT.python_bytes(value) == DEFAULT.reference_bytes(value)
    assert b"0.00001" not in DEFAULT.python_bytes(value)


def test_errors_keep_their_location_on_the_pure_path() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    with pytest.raises(FingerprintError, match="cyclic"):
        DEFAULT.python_bytes({"a": cyclic})
    with pytest.raises(FingerprintError, match=rf"\$\.{safe_key('a')}\[1\]"):  # keys as digests
        DEFAULT.python_bytes({"a": [1, object()]})


class Exploding:
    """Looks like a pydantic model; iterating it raises, and counts the attempts."""

    calls = 0

    def model_dump(self) -> dict[str, Any]:
        raise AssertionError("not called")

    def __iter__(self) -> Any:
        type(self).calls += 1
        raise RuntimeError("broken model")


def test_a_real_error_is_not_retried_as_a_decline() -> None:
    """Only the decline signal falls back: a converter's own error propagates after one attempt."""
    Exploding.calls = 0
    with pytest.raises(RuntimeError, match="broken model"):
        fingerprint({"row": Exploding()})
    assert Exploding.calls == 1
