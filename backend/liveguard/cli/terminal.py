"""Run data made visible before it reaches a terminal.

Drafts, run ids, graph names, error texts and file names come from runs and from users; printed
raw, an escape sequence in them can hide text (``\\x1b[8m``), move the cursor and overwrite an
earlier line (``\\r``, ``\\x1b[1A``), or reorder what is shown (bidi overrides such as
``\\u202e``). Every human-readable output of the CLI passes what it prints through
:func:`visible`, which writes such characters as escapes instead: ``\\x1b``, ``\\r``,
``\\u202e``. JSON output passes through :func:`visible_json`, which escapes the same characters
the JSON way (``\\u001b``), so the data is unchanged for a parser and inert on a terminal.
The CLI writes all its standard output through :class:`VisibleWriter`, which does the latter
to everything written (valid in JSON, visible on a terminal); line breaks and tabs pass.

XML and HTML files (the JUnit file, the HTML report) pass run data through :func:`visible_xml`,
which writes every character XML 1.0 forbids (C0 controls but tab, line feed and carriage
return; lone surrogates; ``\ufffe`` and ``\uffff``), DEL and the C1 controls the same visible
way (``\x00``, ``\x1b``, ``\ud800``): the file stays well-formed and nothing raw reaches a
reader.

What is escaped: C0 controls (except a line break and a tab in multi-line text), DEL, C1
controls (``\\x80``-``\\x9f``: ``\\x9b`` starts a sequence on some terminals), line and
paragraph separators, bidi marks, embeddings, overrides and isolates, zero-width spaces and
joiners, the BOM and the interlinear annotation characters.
"""

from __future__ import annotations

import io
import re
from typing import Final, TextIO

__all__ = ["VisibleWriter", "visible", "visible_json", "visible_xml"]

_UNSAFE_CHARS: Final = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb"
)
_UNSAFE: Final = re.compile(f"[{_UNSAFE_CHARS}\t\n]")
_UNSAFE_MULTILINE: Final = re.compile(f"[{_UNSAFE_CHARS}]")
_UNSAFE_JSON: Final = re.compile(
    "[\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)
_UNSAFE_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, *, multiline: bool = False) -> str:
    """``str(text)`` with control, bidi and invisible characters written as escapes.

    One line (the default): line breaks and tabs are escaped too, so a value cannot start
    a line of its own. ``multiline=True`` (a draft's body) keeps line breaks and tabs.
    """
    value = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE
    return pattern.sub(_escape, value)


def visible_xml(text: object) -> str:
    """``str(text)`` with every character XML 1.0 forbids (and DEL, C1) written as an escape."""
    value = text if isinstance(text, str) else str(text)
    return _UNSAFE_XML.sub(_escape, value)


def _escape_json(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible_json(text: str) -> str:
    """JSON text with the characters :func:`visible` escapes written as ``\\uXXXX``.

    JSON serialisers already escape C0 controls; DEL, C1 controls and the Unicode format
    characters they leave raw can only stand inside strings, where ``\\uXXXX`` means the same.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _UNSAFE_JSON.sub(_escape_json, text)


def _escape_stream(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


class VisibleWriter(io.TextIOBase):
    """A text stream that writes to ``inner`` with the characters :func:`visible` escapes (but
    line breaks and tabs) written as ``\\uXXXX``: valid inside JSON strings, where alone they
    can occur in JSON output, and visible on a terminal in human output. The CLI's standard
    output goes through one, so no command prints run data raw."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(_UNSAFE_MULTILINE.sub(_escape_stream, text))
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._inner.isatty()

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the inner stream's
        return str(getattr(self._inner, "encoding", "utf-8"))
