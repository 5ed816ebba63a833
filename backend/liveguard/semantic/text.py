"""The text of a message step's content, for embedding (never for evidence)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["text_of"]

_MAX_DEPTH = 4


def text_of(content: Any, _depth: int = 0) -> str | None:
    """A string, a message's ``content`` (object or dict), or its text blocks; else None."""
    if isinstance(content, str):
        return content if content.strip() else None
    if _depth >= _MAX_DEPTH or content is None:
        return None
    if isinstance(content, Mapping):
        if "content" in content:
            return text_of(content["content"], _depth + 1)
        text = content.get("text")
        return text if isinstance(text, str) and text.strip() else None
    if isinstance(content, list | tuple):
        parts = [text_of(part, _depth + 1) for part in content]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    inner = getattr(content, "content", None)
    return text_of(inner, _depth + 1) if inner is not None else None
