"""What the parts of the approval step share: the interrupt kind, config keys, the claims won."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from liveguard.live import hitl

log = logging.getLogger("liveguard.approval")

KIND: Final = hitl.APPROVAL_KIND
UNATTRIBUTED: Final = "(unattributed)"
"""Who decided, in the claims table, when the answer named nobody (a review UI sends no ``by``)."""
CONF: Final = "configurable"
CHECKPOINTER_KEY: Final = "__pregel_checkpointer"
TASK_ID_KEY: Final = "__pregel_task_id"
TRIGGERS_KEY: Final = "langgraph_triggers"
PUSH_TRIGGER: Final = "__pregel_push"
"""The trigger of a task started by ``Send(node, input)`` (a client's ``goto`` with input)."""
NO_THREAD: Final = "<no thread>"
SENDS: Final = ("approve", "edit")
"""The decision types that send (and that :func:`approval_send` sends on)."""
GRANTS_MAX: Final = 4096
"""Decisions this process holds and has not sent on yet, at most (the oldest are dropped)."""


@dataclass(frozen=True)
class Grant:
    """A decision that sends, won by this process: what it lets :func:`approval_send` send.

    ``digest`` is :func:`bound_digest` of exactly the draft (and recipient) to send: the one
    the person was shown for an approve, the edited one for an edit. ``claimed``: the
    decision holds a claim row in the checkpointer's database (a person's or liveguard's own
    auto-approval), so the send takes its ``send:<key>`` row too; a scripted ``decide`` has none.
    """

    digest: str
    draft_key: str
    recipient_key: str | None
    claimed: bool
    by: str | None
    action: str


class _Grants:
    """The grants this process won, by ``(thread, key)``, each with a count; bounded, thread-safe.

    A key is a claim key (one decision), or, for a scripted ``decide``, ``scripted:<digest>``,
    which several runs of one process may hold at once (each sends once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: OrderedDict[tuple[str, str], tuple[Grant, int]] = OrderedDict()

    def add(self, thread: str, key: str, grant: Grant, *, count: bool = False) -> None:
        """Hold ``grant``; ``count``: one more send of the same key (else the key is held once)."""
        with self._lock:
            before = self._held.get((thread, key))
            self._held[(thread, key)] = (grant, before[1] + 1 if count and before is not None else 1)
            self._held.move_to_end((thread, key))
            while len(self._held) > GRANTS_MAX:
                self._held.popitem(last=False)

    def get(self, thread: str, key: str) -> Grant | None:
        with self._lock:
            found = self._held.get((thread, key))
            return found[0] if found is not None else None

    def __contains__(self, item: object) -> bool:
        with self._lock:
            return item in self._held

    def discard(self, thread: str, key: str) -> None:
        """One send done: the key's count goes down (and the key away at zero)."""
        with self._lock:
            found = self._held.pop((thread, key), None)
            if found is not None and found[1] > 1:
                self._held[(thread, key)] = (found[0], found[1] - 1)


WON: Final = _Grants()
"""Decisions this process won and has not sent on yet: ``(thread, claim key)`` -> :class:`Grant`.
Only the process that won a decision may send on it, and only what it grants (:func:`approval_send`)."""


def bound_digest(draft: Any, recipient: Any = None) -> str:
    """The digest a decision is bound to: the draft and its recipient, as canonical JSON.

    ``sha256:`` and 16 hex digits. The same value in the interrupt (``digest``), the audit
    record and the grant :func:`approval_send` checks against the state it is about to send.
    """
    data = json.dumps({"draft": draft, "recipient": recipient}, sort_keys=True, default=str,
                      ensure_ascii=False)
    return "sha256:" + hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def state_digest(state: Any, draft_key: str, recipient_key: str | None) -> str:
    """:func:`bound_digest` of what ``state`` holds at ``draft_key`` (and ``recipient_key``)."""
    values = state if isinstance(state, Mapping) else {}
    return bound_digest(values.get(draft_key), values.get(recipient_key) if recipient_key else None)


def thread_of(config: Any) -> str:
    """The thread id a node runs in (:data:`NO_THREAD` for a graph without one)."""
    conf = (config or {}).get(CONF) or {}
    return str(conf.get("thread_id") or NO_THREAD)
