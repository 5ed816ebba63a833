"""Hypothesis strategies for fingerprint tests (native agreement and the pure-Python fast path)."""

from __future__ import annotations

import json

from hypothesis import strategies as st

from liveguard.core.fingerprint import DEFAULT_IGNORE_KEYS

# -- strategies -----------------------------------------------------------------------------
NFD_WORDS = ["cafe\u0301", "re\u0301sume\u0301", "A\u030a", "\u212b", "n\u0303o", "\u1100\u1161"]
SPECIAL_KEYS = [
    "id", "role", "name", "args", "arguments", "type", "content", "text", "function",
    "tool_call_id", "response_metadata", "usage_metadata", "additional_kwargs",
    "timestamp", "request_id", "", "\x00int", "a", "b", "café", "é", "Z", "😀",
]
SPECIAL_CHARS = [
    *'"\\/\n\r\t\b\f\x00\x01\x1f\x7f\x80\u2028\u0301\u0308\u00e9\u212b\ufeff', "😀", "\U0010ffff"
]

chars = st.characters(exclude_categories=("Cs",)) | st.sampled_from(SPECIAL_CHARS)
texts = st.text(chars, max_size=12) | st.sampled_from(NFD_WORDS + SPECIAL_KEYS)
keys = st.sampled_from(SPECIAL_KEYS + NFD_WORDS) | texts
int_edges = [0, 1, -1, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 2**200]
ints = st.integers() | st.sampled_from(int_edges) | st.integers(-(2**80), 2**80)
float_edges = [0.0, -0.0, 1.0, -1.5, 1e-7, 1e16, 1e20, 2.0**63, 2.0**64, -(2.0**63), -(2.0**64)]
floats = (
    st.floats()
    | st.sampled_from([*float_edges, float("nan"), float("inf"), float("-inf")])
    | st.integers(-(2**70), 2**70).map(float)
)
json_scalars = st.none() | st.booleans() | ints | floats | texts
json_docs = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
json_texts = (
    json_docs.map(json.dumps)
    | json_docs.map(lambda v: "  " + json.dumps(v, ensure_ascii=False, indent=1))
    | st.sampled_from(["[1,", "{", "{}", " []", "[1, 2]", '{"b": 1, "a": 2}', "plain", ""])
)
leaves = json_scalars | json_texts
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=5).map(tuple)
        | st.dictionaries(keys, inner, max_size=6)
    ),
    max_leaves=40,
)
ignore_sets = st.just(DEFAULT_IGNORE_KEYS) | st.frozensets(keys, max_size=4)


