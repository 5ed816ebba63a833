"""Canonical fingerprints: one digest for payloads that mean the same.

The canonical form is compact, key-sorted JSON of a *normalised* value:

* dict key order never matters; tuples are lists; sets and frozensets are
  order-free (elements sorted by their own canonical bytes);
* strings are Unicode NFC; JSON text in an ``args``/``arguments`` field is parsed;
* numbers compare by value: ``1 == 1.0``, ``-0.0 == 0.0``, integral ``Decimal``
  values are ints; NaN, +Inf, -Inf and integers outside the 64-bit range
  get distinct tags, so none of them collides with ``null`` or with each other;
* aware datetimes are converted to UTC (same instant, same digest);
* bytes, Enum, dataclasses and pydantic models (LangChain messages included)
  are converted to plain data first;
* volatile keys never enter the digest: ``id``, ``tool_call_id``,
  ``response_metadata``, ``usage_metadata`` and ``additional_kwargs`` inside
  message-shaped and tool-call-shaped dicts, plus the policy's ``ignore_keys``
  (see :data:`DEFAULT_IGNORE_KEYS`) at any depth.

Speed: the definition is the pure-Python walker (:meth:`Fingerprinter.normalize`
followed by compact, key-sorted ``json.dumps``). :meth:`Fingerprinter.python_bytes` makes the
same bytes faster (a pre-pass plus ``orjson``), handing anything it does not write exactly to
the walker (which also reports errors with their location); hypothesis holds the two equal.

Volatile text: a Fingerprinter built with ``volatile=`` names (see :data:`VOLATILE_PATTERNS`)
masks, in the canonical bytes, the text fragments that change without meaning progress
(times, elapsed durations, request and trace ids inside text) before digesting. Each pattern's
``re`` definition does the masking; a multi-pattern matcher (:mod:`liveguard.core._matcher`) only
tells which patterns may match, so the others are skipped (docs/matcher.md). Bytes with no
volatile fragment are digested unchanged, so their digests are byte-identical to an unmasked
Fingerprinter's. :func:`fingerprint` and
the default Fingerprinter mask nothing; the Monitor masks ``Policy.volatile``.

Nesting deeper than :data:`MAX_DEPTH`, cycles and unsupported types raise
:class:`~liveguard.errors.FingerprintError` with the location of the problem.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

import orjson
import xxhash

from liveguard.core._matcher import PatternSet
from liveguard.core.messages import is_message_shaped
from liveguard.errors import FingerprintError, safe_key

__all__ = [
    "DEFAULT_IGNORE_KEYS",
    "DEFAULT_VOLATILE",
    "MAX_DEPTH",
    "MESSAGE_VOLATILE_KEYS",
    "VOLATILE_PATTERNS",
    "Fingerprinter",
    "VolatileMask",
    "canonical_bytes",
    "fingerprint",
    "volatile_mask",
]

MAX_DEPTH: Final = 100
"""Deepest nesting of containers accepted; deeper payloads raise FingerprintError."""

DEFAULT_IGNORE_KEYS: Final[frozenset[str]] = frozenset(
    {"request_id", "trace_id", "span_id", "timestamp", "elapsed_ms", "latency_ms", "duration_ms",
     # loop counters: a state that differs from the last one only by its counter is the same state
     "attempt", "attempts", "retry", "retries", "retry_count", "num_retries", "tries",
     "iteration", "iterations", "round", "rounds", "loop_count"}
)
"""Keys dropped at any depth by default: per-request noise inside tool results, and loop
counters (``rounds``, ``attempt``, ...), which change on every pass of a loop without being
progress."""

MESSAGE_VOLATILE_KEYS: Final[frozenset[str]] = frozenset(
    {"id", "tool_call_id", "response_metadata", "usage_metadata", "additional_kwargs"}
)
"""Keys dropped from message-shaped and tool-call-shaped dicts (ids, provider metadata)."""

_UNIT_S = r"(?:ms|msec|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|days?)"
VOLATILE_PATTERNS: Final[Mapping[str, str]] = {
    # 2026-12-01T13:56:16Z, 2026-12-01 13:56:16.123+02:00, 2026/12/01 13:56
    "iso_datetime": r"\b\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    # 13:56:16, 1:05 pm, 13:56:16.123 (two-digit minutes: "3:2" is not a time)
    "clock_time": r"\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?[AaPp]\.?[Mm]\b\.?)?(?![\d:])",
    # "9 seconds ago", "2 hours ago", "1.5 min ago"
    "relative_time": r"\b\d+(?:[.,]\d+)?\s?" + _UNIT_S + r"\s+ago\b",
    # "took 1.23s", "elapsed: 340 ms", "duration=2.5 seconds", "passed in 0.53s"
    "elapsed": (r"(?i:\b(?:took|elapsed|duration|latency|runtime|time taken|wall time)\b\s*[:=]?\s*"
                r"\d+(?:[.,]\d+)?\s?" + _UNIT_S + r"\b|\bin\s\d+\.\d+\s?(?:s|secs?|seconds?)\b)"),
    # 123e4567-e89b-12d3-a456-426614174000
    "uuid": r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
    # "request id: 7f3a9c2e", "trace_id=abc123def", "X-Request-ID: req_8f2k1"
    "keyed_id": (r"(?i:\b(?:x-)?(?:request|req|trace|span|correlation|session|run)[-_ ]?id\b)"
                 r"[\"']?\s*[:=#]?\s*[\"']?[\w-]{6,}"),
    # a 32-hex-digit id (a W3C trace id, a request hash) mixing digits and letters; a 40-digit
    # git commit id is not one (a new commit is progress)
    "hex_id": r"\b(?=[0-9a-fA-F]{0,31}[0-9])(?=[0-9a-fA-F]{0,31}[a-fA-F])[0-9a-fA-F]{32}\b",
}
"""The built-in volatile-text patterns, by name: fragments that change without meaning
progress. A count that carries progress ("page 3 of 10", "5 passed") matches none of them."""

DEFAULT_VOLATILE: Final[tuple[str, ...]] = tuple(VOLATILE_PATTERNS)
"""The volatile patterns the default :class:`~liveguard.core.policy.Policy` masks: all built-ins."""

_CUSTOM = "re:"
_MASK_TOKEN: Final = "\x00~"
_MASKS: dict[tuple[str, ...], VolatileMask | None] = {}


class VolatileMask:
    """The compiled volatile patterns, for canonical bytes and for plain text.

    ``names`` are keys of :data:`VOLATILE_PATTERNS`, or ``"re:<regex>"`` for a pattern of
    one's own. Each match is replaced by one fixed token, so "9 seconds ago" and
    "14 seconds ago" mask alike. Raises ``ValueError`` naming an unknown name or a bad regex.
    On bytes, each pattern's ``re.sub`` runs in turn (the definition), skipped only when the
    multi-pattern matcher (:class:`liveguard.core._matcher.PatternSet`, one pass for all the
    built-in patterns) says it cannot match; a ``re:`` pattern always runs.
    """

    __slots__ = ("_bytes", "_prefilter", "_text", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)
        parts: list[str] = []
        steps: list[re.Pattern[bytes]] = []
        prefilter: list[str | None] = []
        for name in self.names:
            if name.startswith(_CUSTOM):
                source = name[len(_CUSTOM):]
                if not source:
                    raise ValueError("volatile pattern 're:' is empty")
                try:
                    re.compile(source)
                except re.error as exc:
                    raise ValueError(f"volatile pattern {name!r}: {exc}") from None
                prefilter.append(None)
            elif name in VOLATILE_PATTERNS:
                source = VOLATILE_PATTERNS[name]
                prefilter.append(source)
            else:
                known = ", ".join(VOLATILE_PATTERNS)
                raise ValueError(f"unknown volatile pattern {name!r} (known: {known}; or re:<regex>)")
            parts.append(f"(?:{source})")
            steps.append(re.compile(source.encode("utf-8")))
        self._text = re.compile("|".join(parts))
        self._bytes = tuple(steps)
        self._prefilter = PatternSet(prefilter)

    def text(self, text: str) -> str:
        """``text`` with every volatile fragment replaced by one token."""
        return self._text.sub(_MASK_TOKEN, text)

    def reference_bytes(self, data: bytes) -> bytes:
        """The definition of :meth:`bytes`: each pattern's ``re.sub`` in turn, none skipped."""
        for pattern in self._bytes:
            data = pattern.sub(b"\x00~", data)
        return data

    def bytes(self, data: bytes) -> bytes:
        """Canonical bytes with every volatile fragment replaced (unchanged when none):
        :meth:`reference_bytes`, skipping the patterns the matcher rules out. A mask can make
        a later pattern match (it puts a word boundary where there was none), so after a change
        the matcher reads the new bytes for the patterns still to come."""
        may = self._prefilter.may_match(data)
        if not may:
            return data
        for n, pattern in enumerate(self._bytes):
            if may >> n & 1:
                masked = pattern.sub(b"\x00~", data)
                if masked != data:
                    data = masked
                    may = self._prefilter.may_match(data) >> (n + 1) << (n + 1)
                    if not may:
                        break
        return data


def volatile_mask(names: Iterable[str]) -> VolatileMask | None:
    """The (cached) mask for ``names``; None when ``names`` is empty (mask nothing)."""
    key = tuple(names)
    if not key:
        return None
    found = _MASKS.get(key)
    if found is None:
        found = VolatileMask(key)
        if len(_MASKS) < 64:
            _MASKS[key] = found
    return found


_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1  # larger magnitudes are tagged, in hex (no str() digit limit)
_ARG_KEYS: Final = frozenset({"args", "arguments"})

# Tags for values JSON cannot express. The NUL prefix keeps them out of the way of real keys.
_TAG_FLOAT: Final = "\x00float"
_TAG_INT: Final = "\x00int"
_TAG_DECIMAL: Final = "\x00decimal"
_TAG_SET: Final = "\x00set"
_TAG_BYTES: Final = "\x00bytes"
_TAG_DATETIME: Final = "\x00datetime"
_TAG_NAIVE_DATETIME: Final = "\x00naive-datetime"
_TAG_DATE: Final = "\x00date"
_TAG_TIME: Final = "\x00time"
_TAG_KEY: Final = "\x00key:"


class _Unsupported(Exception):
    """Raised by :func:`_convert` for a type it does not know."""


class _Declined(Exception):
    """The fast pure-Python path's own decline signal: the walker decides instead."""



_IS_MESSAGE: dict[type, bool] = {}


def _is_base_message(obj: object) -> bool:
    """A LangChain message, recognised by name so the core never imports langchain."""
    kind = type(obj)
    known = _IS_MESSAGE.get(kind)
    if known is None:
        known = _IS_MESSAGE[kind] = any(c.__name__ == "BaseMessage" for c in kind.__mro__)
    return known


def _message_to_dict(msg: Any) -> dict[str, Any]:
    """Shallow, id-free view of a LangChain message object."""
    out: dict[str, Any] = {}
    for key, value in msg:  # pydantic models iterate as (field, value) pairs
        if key in MESSAGE_VOLATILE_KEYS:
            continue
        if key in ("tool_calls", "invalid_tool_calls") and value:
            out[key] = [
                {k: v for k, v in call.items() if k not in MESSAGE_VOLATILE_KEYS} for call in value
            ]
        else:
            out[key] = value
    return out


def _decimal(value: Decimal) -> Any:
    if value.is_nan():
        return {_TAG_FLOAT: "nan"}
    if value.is_infinite():
        return {_TAG_FLOAT: "-inf" if value < 0 else "inf"}
    if value == value.to_integral_value():
        return int(value)
    as_float = float(value)
    if Decimal(as_float) == value:
        return as_float
    return {_TAG_DECIMAL: str(value.normalize())}


def _convert(obj: Any) -> Any:
    """Plain-data form of a non-JSON object, one level deep (never recursive).

    Shared by the walker and the fast pre-pass, so both see the same structure.
    Raises ``_Unsupported``.
    """
    if _is_base_message(obj):  # the most frequent case on the hot path: check it first
        return _message_to_dict(obj)
    if isinstance(obj, _dt.datetime):
        if obj.tzinfo is not None and obj.utcoffset() is not None:
            return {_TAG_DATETIME: obj.astimezone(_dt.UTC).isoformat()}
        return {_TAG_NAIVE_DATETIME: obj.isoformat()}
    if isinstance(obj, _dt.date):
        return {_TAG_DATE: obj.isoformat()}
    if isinstance(obj, _dt.time):
        return {_TAG_TIME: obj.isoformat()}
    if isinstance(obj, Decimal):
        return _decimal(obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return {_TAG_BYTES: bytes(obj).hex()}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        return dict(obj)  # pydantic v2 model: shallow field mapping
    raise _Unsupported(type(obj).__name__)


class Fingerprinter:
    """Canonicalises and digests payloads; holds the ignore-key configuration.

    ``Fingerprinter(ignore_keys=...)`` is cheap to keep and reuse; the module
    function :func:`fingerprint` uses one with :data:`DEFAULT_IGNORE_KEYS`.
    """

    __slots__ = ("_hash", "_ignore", "_ignore_msg", "_mask")

    def __init__(
        self,
        ignore_keys: Iterable[str] = DEFAULT_IGNORE_KEYS,
        *,
        hasher: Callable[[bytes], str] = xxhash.xxh3_128_hexdigest,
        volatile: Iterable[str] = (),
    ) -> None:
        self._ignore = frozenset(ignore_keys)
        self._ignore_msg = self._ignore | MESSAGE_VOLATILE_KEYS
        self._hash = hasher
        self._mask = volatile_mask(volatile)

    @property
    def volatile(self) -> tuple[str, ...]:
        """The volatile patterns this Fingerprinter masks (empty: none)."""
        return () if self._mask is None else self._mask.names

    @property
    def ignore_keys(self) -> frozenset[str]:
        return self._ignore

    def canonical_bytes(self, obj: Any) -> bytes:
        """Canonical JSON bytes of ``obj`` (the digest's input), volatile text masked."""
        if self._mask is not None:
            return self._mask.bytes(self.python_bytes(obj))
        return self.python_bytes(obj)

    def python_bytes(self, obj: Any) -> bytes:
        """The canonical bytes (unmasked): a fast pre-pass plus ``orjson``.

        Byte-identical to :meth:`reference_bytes` (hypothesis and the benchmark corpus check
        it). Whatever the pre-pass or orjson does not handle exactly (sets, floats that
        ``repr`` writes with an exponent, lone surrogates, too deep or cyclic data,
        unsupported types) goes to the walker, which also reports errors with their location.
        """
        try:
            return orjson.dumps(self._fast(obj, 0), option=orjson.OPT_SORT_KEYS)
        except (_Declined, orjson.JSONEncodeError):
            return self.reference_bytes(obj)

    def __call__(self, obj: Any) -> str:
        """Hex digest of the canonical form of ``obj``."""
        return self._hash(self.canonical_bytes(obj))

    def raw_digest(self, obj: Any) -> bytes:
        """The 16 bytes of the xxh3-128 digest of ``obj``'s canonical form, whatever ``hasher``:
        ``bytes.fromhex(fingerprint(obj))`` with these ignore keys, without the hex text (the rules
        keep these bytes). The Monitor's digest."""
        if self._mask is not None:
            return _xxh3_raw(self._mask.bytes(self.python_bytes(obj)))
        return _xxh3_raw(self.python_bytes(obj))

    def reference_bytes(self, obj: Any) -> bytes:
        """The definition of the canonical bytes, in pure Python."""
        return _dumps(self.normalize(obj))

    def normalize(self, obj: Any) -> Any:
        """The normalised plain-data value whose sorted JSON is the canonical form."""
        return self._walk(obj, 0, set())

    def _walk(self, x: Any, depth: int, active: set[int]) -> Any:
        t = type(x)
        if t is str:
            return x if x.isascii() else unicodedata.normalize("NFC", x)
        if x is None or t is bool:
            return x
        if t is int:
            return x if _INT_MIN <= x <= _INT_MAX else {_TAG_INT: hex(x)}
        if t is float:
            return _float(x)
        if isinstance(x, Mapping | list | tuple | set | frozenset):
            if depth >= MAX_DEPTH:
                raise FingerprintError(f"nesting deeper than {MAX_DEPTH} levels")
            if isinstance(x, Mapping):
                return self._walk_dict(x, depth, active)
            if isinstance(x, list | tuple):
                return self._walk_seq(x, depth, active)
            return self._walk_set(x, depth, active)
        if isinstance(x, str):  # str subclasses (StrEnum included) hash as their text
            return self._walk(str.__str__(x), depth, active)
        if isinstance(x, int) and not isinstance(x, enum.Enum):
            return self._walk(int(x), depth, active)
        if isinstance(x, float):
            return _float(float(x))
        try:
            converted = _convert(x)
        except _Unsupported:
            raise FingerprintError(f"unsupported type {t.__qualname__}") from None
        # Conversion adds no nesting of its own; tags are dicts and count when walked.
        return self._walk(converted, depth, active)

    # -- the fast pre-pass: the walker's rules for orjson, declining what orjson writes otherwise --
    def _fast(self, x: Any, depth: int) -> Any:
        t = type(x)
        if t is str:
            return x if x.isascii() else unicodedata.normalize("NFC", x)
        if t is dict:
            return self._fast_dict(x, depth)
        if t is list or t is tuple:
            if depth >= MAX_DEPTH:  # also where a cycle ends up; the walker names which
                raise _Declined
            return [self._fast(i, depth + 1) for i in x]
        if t is int:
            return x if _INT_MIN <= x <= _INT_MAX else {_TAG_INT: hex(x)}
        if t is float:
            return _fast_float(x)
        if x is None or t is bool:
            return x
        # The walker's order for everything else.
        if isinstance(x, Mapping):
            return self._fast_dict(x, depth)
        if isinstance(x, list | tuple):
            return self._fast(list(x), depth)
        if isinstance(x, set | frozenset):
            raise _Declined  # order-free: the walker sorts by canonical bytes
        if isinstance(x, str):
            return self._fast(str.__str__(x), depth)
        if isinstance(x, int) and not isinstance(x, enum.Enum):
            return self._fast(int(x), depth)
        if isinstance(x, float):
            return _fast_float(float(x))
        try:
            converted = _convert(x)
        except _Unsupported:
            raise _Declined from None
        return self._fast(converted, depth)

    def _fast_dict(self, d: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        if depth >= MAX_DEPTH:
            raise _Declined
        drop = self._ignore_msg if is_message_shaped(d) else self._ignore
        out: dict[str, Any] = {}
        origins: dict[str, str] | None = None
        for key, value in d.items():
            if type(key) is str:
                name = key
            elif isinstance(key, str):
                name = str.__str__(key)
            else:
                raise _Declined  # tagged keys: the walker writes their canonical bytes
            if name in drop:
                continue
            if not name.isascii():
                original, name = name, unicodedata.normalize("NFC", name)
                origins = {} if origins is None else origins
                if name in origins and origins[name] > original:
                    continue
                origins[name] = original
            item = _maybe_json(value) if name in _ARG_KEYS and isinstance(value, str) else value
            kind = type(item)  # the frequent leaves inline: a call per leaf is the main cost
            if (
                (kind is str and item.isascii())
                or (kind is int and _INT_MIN <= item <= _INT_MAX)
                or item is None
                or kind is bool
            ):
                out[name] = item
            else:
                out[name] = self._fast(item, depth + 1)
        return out

    def _enter(self, x: object, active: set[int]) -> int:
        ident = id(x)
        if ident in active:
            raise FingerprintError("cyclic structure")
        active.add(ident)
        return ident

    def _walk_dict(self, d: Mapping[Any, Any], depth: int, active: set[int]) -> dict[str, Any]:
        ident = self._enter(d, active)
        drop = self._ignore
        if is_message_shaped(d):
            drop = drop | MESSAGE_VOLATILE_KEYS
        out: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for key, value in d.items():
            if isinstance(key, str):
                name = str.__str__(key)
                if name in drop:
                    continue
                if not name.isascii():
                    original, name = name, unicodedata.normalize("NFC", name)
                    # Two keys equal after NFC: keep the one whose original spelling sorts
                    # last, so the result never depends on the dict's insertion order.
                    if name in origins and origins[name] > original:
                        continue
                    origins[name] = original
            else:
                name = _TAG_KEY + self.reference_bytes(key).decode("utf-8", "surrogatepass")
            item = _maybe_json(value) if name in _ARG_KEYS and isinstance(value, str) else value
            try:
                out[name] = self._walk(item, depth + 1, active)
            except FingerprintError as exc:
                raise exc.at(f".{safe_key(name)}") from None  # never the key's text
        active.discard(ident)
        return out

    def _walk_seq(self, seq: Iterable[Any], depth: int, active: set[int]) -> list[Any]:
        ident = self._enter(seq, active)
        out = []
        for i, item in enumerate(seq):
            try:
                out.append(self._walk(item, depth + 1, active))
            except FingerprintError as exc:
                raise exc.at(f"[{i}]") from None
        active.discard(ident)
        return out

    def _walk_set(self, s: Iterable[Any], depth: int, active: set[int]) -> dict[str, Any]:
        items = self._walk_seq(list(s), depth, active)
        keyed = sorted((_dumps(i), i) for i in items)
        return {_TAG_SET: [item for _, item in keyed]}


def _float(x: float) -> Any:
    if math.isnan(x):
        return {_TAG_FLOAT: "nan"}
    if math.isinf(x):
        return {_TAG_FLOAT: "inf" if x > 0 else "-inf"}
    if x.is_integer():
        as_int = int(x)
        return as_int if _INT_MIN <= as_int <= _INT_MAX else {_TAG_INT: hex(as_int)}
    return x


def _fast_float(x: float) -> Any:
    """:func:`_float`, declining what orjson writes unlike ``repr`` (exponents below 1e-4)."""
    value = _float(x)
    if type(value) is float and -1e-4 < value < 1e-4:
        raise _Declined
    return value


def _dumps(value: Any) -> bytes:
    """Compact, key-sorted JSON of an already normalised value (NaN never reaches here)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def _maybe_json(text: str) -> Any:
    """Parse JSON object/array text (tool-call arguments); other strings stay strings."""
    head = text[:1]
    if head.isspace():  # exactly the characters lstrip() strips
        head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return text


_DEFAULT = Fingerprinter()


def canonical_bytes(obj: Any) -> bytes:
    """Canonical JSON bytes of ``obj`` with the default ignore keys."""
    return _DEFAULT.canonical_bytes(obj)


def fingerprint(obj: Any) -> str:
    """Canonical digest of ``obj`` (32 hex chars, xxh3-128) with the default ignore keys.

    Equal for payloads that mean the same; see the module docstring for the rules.
    Raises :class:`~liveguard.errors.FingerprintError` for unsupported types, cycles
    and nesting deeper than :data:`MAX_DEPTH`.
    """
    return _xxh3_hex(_DEFAULT.canonical_bytes(obj))


_xxh3_hex: Callable[[bytes], str] = xxhash.xxh3_128_hexdigest
_xxh3_raw: Callable[[bytes], bytes] = xxhash.xxh3_128_digest
