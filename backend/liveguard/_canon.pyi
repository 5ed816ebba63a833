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
