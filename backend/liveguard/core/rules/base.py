"""The one contract every rule honours.

A rule is a small object with ``observe(obs) -> list[Violation] | None``,
``finish() -> list[Violation] | None`` and, for thread-level liveness, ``snapshot(pack)``
/ ``restore(data, unpack)`` of its bounded state as plain JSON-able lists (strings
are interned by the Monitor: ``pack(text) -> int``, ``unpack(int) -> text``). The
Monitor computes one :class:`Observation` per step (digests included) and hands it to
each rule in turn: a trivial loop, like a structlog processor chain. Rules keep only
bounded windows of digests.

Memory per guarded thread is what rules keep, so they keep it compactly: digests as the
observation's raw 16 bytes (never the hex text), each window as one flat list of plain
fields (never a tuple or a ``deque`` per step: a ``deque`` takes a 64-slot block whatever
its length), state in ``__slots__``. A rule that counts in a window first asks a C-level
``list.count`` of the digest whether the count can reach its threshold at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

from liveguard.core.model import Step, Violation

__all__ = [
    "CONTENTLESS",
    "MESSAGE",
    "OBSERVATION_KINDS",
    "REQUEST",
    "TOOL",
    "Observation",
    "Pack",
    "Rule",
    "RuleBase",
    "StatefulRule",
    "Unpack",
    "agent_of",
    "count_digest",
    "digest_prefix",
    "has_digest",
    "prefix",
    "unhex",
]

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

OBSERVATION_KINDS: Final = (MESSAGE, TOOL, REQUEST, CONTENTLESS)
"""Every kind (each is its own position here). A rule class may declare ``kinds``, the kinds
it reads, as a class attribute; the Monitor then hands it only those observations (a rule
without ``kinds`` sees every one). A rule declares it only when it returns None, and
changes nothing, for every other kind."""

DIGEST_PREFIX: Final = 12
"""Hex characters of a digest that go into evidence."""
_PREFIX_BYTES: Final = DIGEST_PREFIX // 2


def agent_of(node: str) -> str:
    """The agent a node speaks for: ``"Orchestrator"`` for ``"Orchestrator (-> WebSurfer)"``
    and ``"Orchestrator (thought)"`` (a recorded multi-agent run names an agent's channels
    so); any other node is its own agent. An agent's own messages are never news to it."""
    if node.endswith(")"):
        cut = node.find(" (")
        if cut > 0:
            return node[:cut]
    return node


def prefix(digest: str) -> str:
    """The digest prefix that goes into evidence (never the content itself)."""
    return digest[:DIGEST_PREFIX]


def digest_prefix(digest: bytes) -> str:
    """:func:`prefix` of a raw digest: ``prefix(digest.hex())``, without the whole hex text."""
    return digest[:_PREFIX_BYTES].hex()


def unhex(text: str) -> bytes:
    """A raw digest from its hex text in a snapshot (``""`` for a step with no content)."""
    return bytes.fromhex(text)


def count_digest(items: list[Any], digest: bytes, start: int, stride: int) -> int:
    """``items[start::stride].count(digest)`` for a flat window whose every ``stride``-th field
    from ``start`` is a raw digest (one slice and a C-level count)."""
    return items[start::stride].count(digest)


def has_digest(items: list[Any], digest: bytes, start: int, stride: int) -> bool:
    """``digest in items[start::stride]``."""
    return digest in items[start::stride]


class Observation:
    """What the rules see of one step: its index, node, kind and content digest.

    ``digest`` is the raw 16-byte xxh3-128 digest of the step's canonical form (``b""``
    for a contentless step): the rules keep and compare these bytes (49 B each in memory,
    where the 32-hex text takes 81 B); ``key`` is its hex text, the digest that
    :meth:`~liveguard.core._monitor.Monitor.digest` returns and whose prefix goes into evidence
    (:func:`digest_prefix`). Snapshots hold the hex text, so their format is unchanged.

    ``content`` (message steps only) is the summary or output itself: only the semantic
    layer reads it, to embed it; no rule puts it in evidence. ``step`` is the step itself,
    for the step-text rule (``evaluator_injection_suspected``), which reads its text once;
    no rule keeps it beyond the call. ``calls`` (tool-call requests only) is how many calls
    the request makes: the size of the turn it opens. ``failed`` (tool steps only) is True
    when the call failed (an error, or ``"retryable": false``): an identical failing call
    counts towards ``tool_no_progress`` whatever else its turn did. ``user`` is True for a
    user's input; ``digest`` of every other step is keyed on what it answers (see
    :class:`~liveguard.core._monitor.Monitor`, "Replies and requests").
    """

    __slots__ = ("calls", "content", "digest", "failed", "index", "kind", "last", "node",
                 "nonretryable", "step", "tool", "user")

    def __init__(
        self,
        index: int,
        node: str,
        kind: int,
        digest: bytes,
        *,
        tool: str | None = None,
        nonretryable: bool = False,
        content: Any = None,
        step: Step | None = None,
        last: bool = True,
        calls: int = 0,
        failed: bool = False,
    ) -> None:
        self.index = index
        self.node = node
        self.kind = kind
        self.digest = digest
        self.tool = tool
        self.nonretryable = nonretryable
        self.content = content  # a message step's content, for the semantic layer only
        self.step = step  # the step, for the step-text rule only
        self.last = last
        """False for a tool step followed by more steps of the same parallel turn."""
        self.calls = calls
        self.failed = failed or nonretryable
        """A tool step that failed: an error, or a result saying ``"retryable": false``."""
        self.user = False
        """A user's input (:func:`liveguard.core.messages.is_user_input`): a request, not a reply."""

    @property
    def key(self) -> str:
        """The digest as 32 hex characters (``""`` for a contentless step)."""
        return self.digest.hex()

    def pack(self, pack: Pack) -> list[Any]:
        """This observation as plain data (for a pending turn in a snapshot)."""
        tool = -1 if self.tool is None else pack(self.tool)
        # flags: 1 non-retryable (so failed), 2 failed otherwise, 0 neither (as before ``failed``)
        flags = 1 if self.nonretryable else 2 if self.failed else 0
        return [self.index, pack(self.node), self.kind, pack(self.digest.hex()), tool, flags]

    @classmethod
    def unpack(cls, data: list[Any], unpack: Unpack) -> Observation:
        index, node, kind, key, tool, flags = data
        flags = int(flags)
        return cls(index, unpack(node), kind, unhex(unpack(key)),
                   tool=None if tool < 0 else unpack(tool), nonretryable=flags == 1, failed=flags != 0)


class Rule(Protocol):
    """A liveness rule: sees each observation once, keeps bounded state."""

    def observe(self, obs: Observation) -> list[Violation] | None: ...

    def finish(self) -> list[Violation] | None: ...


class RuleBase:
    """A convenience base class: a :class:`Rule` that finds nothing unless it says otherwise.

    A rule need not derive from it (any :class:`Rule` will do: the semantic layer's do not);
    the Monitor calls every rule the same way, in the order ``build`` gives them.
    """

    __slots__ = ()

    def observe(self, obs: Observation) -> list[Violation] | None:
        return None

    def finish(self) -> list[Violation] | None:
        return None


class StatefulRule(Rule, Protocol):
    """A rule whose bounded state survives a thread's resume: every loop-guard rule.

    The Monitor saves the rules that have ``snapshot`` (the semantic layer's
    ``semantic_repeat`` among them: hashed features and float16 vectors, never text); the
    others (``role_drift``, whole-run) start afresh after a restore.
    """

    def snapshot(self, pack: Pack) -> Any: ...

    def restore(self, data: Any, unpack: Unpack) -> None: ...
