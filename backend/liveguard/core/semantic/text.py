"""The text of a message step's content, for embedding (never for evidence)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["text_of"]

_MAX_DEPTH = 4


def text_of(content: Any, _depth: int = 0) -> str | None:
    """A string; a message's ``content`` (object or dict) or text blocks; a state update's
    string values; else None."""
    if isinstance(content, str):
        return content if content.strip() else None
    if _depth >= _MAX_DEPTH or content is None:
        return None
    if isinstance(content, Mapping):
        if "content" in content:
            return text_of(content["content"], _depth + 1)
        if "text" in content:
            return text_of(content["text"], _depth + 1)
        # A graph node's state update, e.g. {"review": "...", "round": 3}: its text values.
        parts = [text_of(value, _depth + 1) for value in content.values() if isinstance(value, str)]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    if isinstance(content, list | tuple):
        parts = [text_of(part, _depth + 1) for part in content]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    inner = getattr(content, "content", None)
    return text_of(inner, _depth + 1) if inner is not None else None
