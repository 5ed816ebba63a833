"""What a stopped user reads: the rule in words, the two steps that repeat, the way out.

``NoProgressError``'s message and the middleware's stop message are built here::

    no_progress_stall at step 2 (node 'review:lint', count 2): node 'review:lint' gave the
    same output 2 times in a row, nothing new in between. Repeating: steps 1 and 2
    (digest 1495b4c3dd21). The thread stays stopped until it is cleared:
    liveguard.clear(graph, config), or `liveguard threads clear MODULE:ATTR --thread
    THREAD_ID`, or POST /liveguard/threads/THREAD_ID/clear on the LangGraph server.

The first part (``<code> at step <n> (node '<node>', count <k>)``) is the one clients
already parse. Privacy: only codes, node and tool names, counts, step indices and digest
prefixes, never a step's text (the violation holds nothing else).

Standard library only: ``liveguard.errors`` builds its message with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

__all__ = ["CLEAR_HOW", "repeated_steps", "rule_in_words", "stop_text"]


class _Stop(Protocol):
    """What the text reads of a :class:`~liveguard.core.model.Violation` (read-only)."""

    @property
    def code(self) -> str: ...
    @property
    def step(self) -> int: ...
    @property
    def node(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def detail(self) -> dict[str, Any]: ...


CLEAR_HOW: Final = (
    "The thread stays stopped until it is cleared: liveguard.clear(graph, config), or "
    "`liveguard threads clear MODULE:ATTR --thread THREAD_ID`, or "
    "POST /liveguard/threads/THREAD_ID/clear on the LangGraph server."
)
"""The three ways to clear a stopped thread (``liveguard.live.threads.clear``, the CLI, the
server route of docs/server.md)."""


def _stall(v: _Stop) -> str:
    return f"node {v.node!r} gave the same output {v.count} times in a row, nothing new in between"


def _repeat(v: _Stop) -> str:
    return (f"node {v.node!r} gave the same output {v.count} times within its last "
            f"{v.detail.get('window', '?')} steps, nothing new in between")


def _cycle(v: _Stop) -> str:
    nodes = v.detail.get("nodes")
    block = " -> ".join(str(n) for n in nodes) if isinstance(nodes, list) and nodes else "a block of steps"
    return f"the same {v.detail.get('period', '?')} steps ({block}) came back {v.count} times in a row"


def _tool(v: _Stop) -> str:
    tool = v.detail.get("tool")
    what = "the same non-retryable failure" if v.detail.get("nonretryable") else "the same result"
    return (f"tool {tool!r} was called with the same arguments and got {what} {v.count} times, "
            "nothing new in between")


def _revisits(v: _Stop) -> str:
    return (f"node {v.node!r} was visited {v.count} times within {v.detail.get('window', '?')} steps "
            f"(limit {v.detail.get('limit', '?')})")


def _visits(v: _Stop) -> str:
    return f"node {v.node!r} was visited more often than its limit ({v.detail.get('limit', '?')})"


def _hop(v: _Stop) -> str:
    return f"the hop {v.detail.get('from')!r} -> {v.detail.get('to')!r} is not in the graph's allow-set"


def _steps(v: _Stop) -> str:
    scope = v.detail.get("scope")
    where = "this thread" if scope == "thread" else "this run"
    return f"{where} took more than {v.detail.get('limit', '?')} steps"


def _semantic(v: _Stop) -> str:
    return f"node {v.node!r} said the same thing again in other words, nothing new in between"


def _debounce(v: _Stop) -> str:
    return (f"{v.count} repeated tool calls were answered without running "
            f"(ceiling {v.detail.get('ceiling', '?')})")


def _guard_error(v: _Stop) -> str:
    return "the guard could not read this thread's saved state"


_WORDS: Final[Mapping[str, Callable[[_Stop], str]]] = {
    "no_progress_stall": _stall,
    "repeated_content": _repeat,
    "content_cycle": _cycle,
    "tool_no_progress": _tool,
    "node_revisit_cycle": _revisits,
    "excessive_loop": _visits,
    "illegal_transition": _hop,
    "step_limit": _steps,
    "semantic_repeat": _semantic,
    "debounce_ceiling": _debounce,
    "guard_error": _guard_error,
}


def rule_in_words(violation: _Stop) -> str:
    """The rule that fired, said in words (codes, names and counts only)."""
    words = _WORDS.get(violation.code)
    if words is not None:
        try:
            return words(violation)
        except Exception:  # a malformed detail: the code's registered meaning instead
            pass
    from liveguard.core.codes import CODES

    known = CODES.get(violation.code)
    return known.meaning if known is not None and known.meaning else violation.code


def repeated_steps(violation: _Stop) -> tuple[int, int] | None:
    """The two steps that repeat (the earlier and the stopping one), when the rule names them."""
    detail, step = violation.detail, violation.step
    steps = detail.get("steps")
    if isinstance(steps, list) and len(steps) >= 2 and all(isinstance(s, int) for s in steps[-2:]):
        return steps[-2], steps[-1]
    if violation.code == "no_progress_stall" and step >= 1:
        return step - 1, step
    period = detail.get("period")
    if violation.code == "content_cycle" and isinstance(period, int) and step >= period:
        return step - period, step
    matched = detail.get("matched_step", detail.get("matched"))
    if isinstance(matched, int) and matched != step:
        return matched, step
    return None


def _digest(detail: Mapping[str, Any]) -> str | None:
    digest = detail.get("digest")
    if isinstance(digest, str) and digest:
        return digest[:12]
    digests = detail.get("digests")
    if isinstance(digests, list) and digests and isinstance(digests[-1], str):
        return digests[-1][:12]
    return None


def stop_text(violation: _Stop) -> str:
    """The whole stop message: where, the rule in words, what repeats, how to clear."""
    head = f"{violation.code} at step {violation.step} (node {violation.node!r}, count {violation.count})"
    parts = [f"{head}: {rule_in_words(violation)}."]
    pair = repeated_steps(violation)
    if pair is not None:
        digest = _digest(violation.detail)
        shown = f" (digest {digest})" if digest else ""
        parts.append(f"Repeating: steps {pair[0]} and {pair[1]}{shown}.")
    parts.append(CLEAR_HOW)
    return " ".join(parts)
