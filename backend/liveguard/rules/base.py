"""The one contract every rule honours.

A rule is a small object with ``observe(obs) -> list[Violation] | None``,
``finish() -> list[Violation] | None`` and, for thread-level liveness, ``snapshot(pack)``
/ ``restore(data, unpack)`` of its bounded state as plain JSON-able lists (strings
are interned by the Monitor: ``pack(text) -> int``, ``unpack(int) -> text``). The
Monitor computes one :class:`Observation` per step (digests included) and hands it to
each rule in turn: a trivial loop, like a structlog processor chain. Rules keep only
bounded windows of digests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol, TypeVar

from mypy_extensions import mypyc_attr

from liveguard.model import Step, Violation

__all__ = [
    "CONTENTLESS", "KINDS", "MESSAGE", "REQUEST", "TOOL", "Observation", "Pack", "Rule",
    "StatefulRule", "Unpack", "Window", "prefix",
]

_T = TypeVar("_T")


@mypyc_attr(native_class=False)  # mypyc: a list subclass stays a Python class
class Window(list[_T]):
    """A bounded FIFO window: a list that drops its oldest item when full.

    Rules' windows are short (6 to 24 items); a list this size takes a few hundred bytes
    where a ``deque`` takes a 64-slot block (~760 B) whatever its length, which is most of
    a Monitor's memory.
    """

    __slots__ = ("maxlen",)

    def __init__(self, maxlen: int, items: Iterable[_T] = ()) -> None:
        super().__init__()
        self.maxlen = maxlen
        for item in items:
            self.append(item)

    def append(self, item: _T) -> None:
        if len(self) >= self.maxlen:
            del self[0]
        list.append(self, item)

    def popleft(self) -> _T:
        return self.pop(0)


Pack = Callable[[str], int]
"""Interns a string for a snapshot: the same text always gets the same small int."""
Unpack = Callable[[int], str]
"""The string an interned int stands for."""

MESSAGE: Final = 0
"""A message step: judged by stall, repeat and cycle rules."""
TOOL: Final = 1
"""A tool step (tool, args, result): judged by the tool rule and, as a block member, cycles."""
REQUEST: Final = 2
"""A model step whose output requests tool calls: tool-ish, never a stall or a repeat."""
CONTENTLESS: Final = 3
"""A step with nothing to compare (no summary, output, tool or error): revisits only."""

KINDS: Final = (MESSAGE, TOOL, REQUEST, CONTENTLESS)
"""Every kind. A rule may declare ``kinds``, the kinds it reads; the Monitor then hands it
only those observations (a rule without ``kinds`` sees every one). A rule declares it only
when it returns None, and changes nothing, for every other kind."""

DIGEST_PREFIX: Final = 12


def prefix(digest: str) -> str:
    """The digest prefix that goes into evidence (never the content itself)."""
    return digest[:DIGEST_PREFIX]


class Observation:
    """What the rules see of one step: its index, node, kind and content digest.

    ``content`` (message steps only) is the summary or output itself: only the semantic
    layer reads it, to embed it; no rule puts it in evidence. ``step`` is the step itself,
    for the step-text rule (``evaluator_injection_suspected``), which reads its text once;
    no rule keeps it beyond the call. ``calls`` (tool-call requests only) is how many calls
    the request makes: the size of the turn it opens.
    """

    __slots__ = ("calls", "content", "index", "key", "kind", "last", "node", "nonretryable",
                 "step", "tool")

    def __init__(  # noqa: PLR0917 - built once per step on the hot path; keywords cost time
        self,
        index: int,
        node: str,
        kind: int,
        key: str,
        tool: str | None = None,
        nonretryable: bool = False,
        content: Any = None,
        step: Step | None = None,
        last: bool = True,
        calls: int = 0,
    ) -> None:
        self.index = index
        self.node = node
        self.kind = kind
        self.key = key
        self.tool = tool
        self.nonretryable = nonretryable
        self.content = content  # a message step's content, for the semantic layer only
        self.step = step  # the step, for the step-text rule only
        self.last = last
        """False for a tool step followed by more steps of the same parallel turn."""
        self.calls = calls

    def pack(self, pack: Pack) -> list[Any]:
        """This observation as plain data (for a pending turn in a snapshot)."""
        tool = -1 if self.tool is None else pack(self.tool)
        return [self.index, pack(self.node), self.kind, pack(self.key), tool, int(self.nonretryable)]

    @classmethod
    def unpack(cls, data: list[Any], unpack: Unpack) -> Observation:
        index, node, kind, key, tool, nonretryable = data
        return cls(index, unpack(node), kind, unpack(key),
                   None if tool < 0 else unpack(tool), bool(nonretryable))


class Rule(Protocol):
    """A liveness rule: sees each observation once, keeps bounded state."""

    def observe(self, obs: Observation) -> list[Violation] | None: ...

    def finish(self) -> list[Violation] | None: ...


class StatefulRule(Rule, Protocol):
    """A rule whose bounded state survives a thread's resume: every loop-guard rule.

    The Monitor saves the rules that have ``snapshot``; the others (the semantic layer,
    whose state is embeddings) start afresh after a restore.
    """

    def snapshot(self, pack: Pack) -> Any: ...

    def restore(self, data: Any, unpack: Unpack) -> None: ...
