"""The tool-call ledger: what ``LivenessMiddleware`` remembers of each tool call it saw run.

One entry per executed (tool, arguments digest): the outcome flag (``ok``, ``failed``,
``nonretryable`` for ``"retryable": false``), how often, and whether the debounce blocked
it. The last ``size`` entries are kept with the thread (in the agent state) and shown to
the model (:attr:`Ledger.text`) in the part of its context that summarisation does not
rewrite. The debounce answers a blocked call with :func:`debounce_text` instead of running
it. Codes, digests and counts only: never arguments or results.

Framework-free: the middleware (:mod:`liveguard.integrations.langchain`) feeds it.
"""

from __future__ import annotations

from typing import Any

from liveguard.core.fingerprint import fingerprint

__all__ = ["Ledger", "args_digest", "debounce_text", "ledger_text"]

_OUTCOMES = {"ok": "ok", "failed": "failed", "nonretryable": "failed (retryable: false)"}
_SAME = {"ok": "the same result", "failed": "the same failure",
         "nonretryable": "the same failure (retryable: false)"}


def args_digest(args: Any) -> str:
    """The 16-hex-digit digest of a call's canonical arguments (the ledger's key)."""
    return fingerprint(args)[:16]


def ledger_text(entries: list[list[Any]]) -> str:
    """The ledger as the model sees it: tool, args digest, outcome, count, blocked."""
    lines = ["Tool-call ledger (liveguard): earlier tool calls in this thread, by tool and "
             "arguments digest. Do not repeat a call that failed; change its input or stop."]
    for tool, digest, flag, count, blocked in entries:
        lines.append(f"- {tool} args#{digest}: {_OUTCOMES.get(flag, flag)} x{count}"
                     + (" [blocked]" if blocked else ""))
    return "\n".join(lines)


def debounce_text(tool: str, digest: str, entry: list[Any]) -> str:
    """What a debounced call is answered with instead of running."""
    outcome = _SAME.get(entry[2], "the same result")
    return (f"Not run: this exact call ({tool}, args#{digest}) was already tried "
            f"{entry[3]} times with {outcome}. Change the input or stop.")


class Ledger:
    """The entries ``[tool, args digest, flag, count, blocked]``, most recent last.

    Built from the saved value (anything malformed is dropped, never raised on);
    :meth:`dump` is the value saved back.
    """

    __slots__ = ("_text", "entries")

    def __init__(self, saved: Any = None) -> None:
        self.entries: list[list[Any]] = [
            list(e) for e in (saved if isinstance(saved, list | tuple) else ())
            if isinstance(e, list | tuple) and len(e) == 5
        ]
        self._text: str | None = None  # the text the model sees, until the entries change

    def __bool__(self) -> bool:
        return bool(self.entries)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = ledger_text(self.entries)
        return self._text

    def dump(self) -> list[list[Any]]:
        return [list(entry) for entry in self.entries]

    def record(self, tool: str, digest: str, flag: str, size: int) -> None:
        """One execution of (tool, digest) with this outcome; keeps the last ``size`` entries."""
        self._text = None
        for i, (name, dig, _, count, blocked) in enumerate(self.entries):
            if name == tool and dig == digest:
                del self.entries[i]
                self.entries.append([tool, digest, flag, count + 1, blocked])
                return
        self.entries.append([tool, digest, flag, 1, False])
        del self.entries[:-size]

    def block(self, tool: str, digest: str) -> None:
        """The debounce answers (tool, digest) from now on instead of running it."""
        self._text = None
        for entry in self.entries:
            if entry[0] == tool and entry[1] == digest:
                entry[4] = True

    def blocked(self, tool: str, digest: str) -> list[Any] | None:
        """The entry of (tool, digest) when it is blocked, else None."""
        return next((e for e in self.entries if e[0] == tool and e[1] == digest and e[4]), None)
