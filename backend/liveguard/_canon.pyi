"""Type stub for the optional C accelerator (see fingerprint.py)."""

from collections.abc import Callable
from typing import Any

def dumps(
    obj: Any,
    ignore_keys: frozenset[str],
    volatile_keys: frozenset[str],
    convert: Callable[[Any], Any],
    maybe_json: Callable[[str], Any],
    max_depth: int,
    /,
) -> bytes: ...

def canonical(
    ignore_keys: frozenset[str],
    volatile_keys: frozenset[str],
    convert: Callable[[Any], Any],
    maybe_json: Callable[[str], Any],
    max_depth: int,
    kinds: bytes,
    obj: Any,
    /,
) -> bytes:
    """mask(dumps(obj, ...), kinds) in one call (dumps alone when kinds is empty)."""

class Decline(ValueError): ...

class Scanner:
    """The step-text pre-filter's DFA (built by liveguard.rules.injection._scan_tables)."""

    def __new__(cls, cmap: bytes, table: bytes, nclasses: int, start: int, /) -> Scanner: ...
    def may_match(self, raw: bytes, /) -> bool | None:
        """injection._json_may_match(raw), or None (declined: a fold letter is in raw)."""
    def may_match_normalised(self, raw: bytes, latin1_table: bytes, /) -> bool | None:
        """injection._may_normalise(raw) and the core on injection._normalise_json(raw), or None
        (declined: raw holds a character beyond Latin-1 that normalising may make ASCII)."""

def mask(data: bytes, kinds: bytes, /) -> bytes:
    """fingerprint.VolatileMask.python_bytes of data for the built-in patterns numbered kinds."""

def _mask_isas() -> tuple[str, ...]:
    """The versions of mask's block scan this CPU runs, the widest first (the one chosen at load)."""

def _mask_isa(name: str | None = None, /) -> str:
    """The version of mask's block scan in use; with name, use that one from now on (for tests) and
    return the one used before."""

class Words:
    """Which of a set of ASCII words a text holds (built by liveguard.rules.injection._words_tables)."""

    def __new__(
        cls, cmap: bytes, table: bytes, nclasses: int, masks: bytes, nwords64: int, gates: bytes = ..., /
    ) -> Words: ...
    def present(self, text: str, /) -> tuple[int, int, bool]:
        """The presence masks of the words in injection._lowered(text), plain and with every
        spacing mark removed, and whether injection._SPACED finds a letter-spaced word."""
    def fields(self, values: tuple[object, ...], max_chars: int, max_depth: int, /) -> tuple[int | None, ...]:
        """For each value, the alternatives whose gate passes on injection.normalise of
        injection._text_of(value) (bit i: plain alternative i, bit 16 + j: letter-spaced
        alternative j; 0 for None), or None (the value holds a non-ASCII character not learned,
        or is not plain data: Python decides); () when every item would be 0. Needs the gates
        (injection._native_gates)."""
    def learn(self, code: int, reading: bytes | None, /) -> bool:
        """Read the non-ASCII code point ``code`` as ``reading`` in fields() (injection._reading);
        None: refused. False once 65,536 code points are learned."""
    def unknown(self, text: str, /) -> str:
        """The non-ASCII characters of ``text`` neither learned nor refused, each once, at most 64."""
