"""The send, covered by the decision's claim: only the process that won it sends, once."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from liveguard.core import _twin
from liveguard.core._twin import Body, Op, blocking
from liveguard.errors import ApprovalConflict, ApprovalError, SendRefused
from liveguard.live.approval._common import (
    CHECKPOINTER_KEY,
    CONF,
    KIND,
    PUSH_TRIGGER,
    SENDS,
    TRIGGERS_KEY,
    WON,
    log,
    state_digest,
    thread_of,
)

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


class _Send:
    def __init__(self, fn: Callable[..., Any], audit_key: str, clock: Callable[[], datetime]) -> None:
        self.fn = fn
        self.audit_key = audit_key
        self.clock = clock
        try:
            params = inspect.signature(fn).parameters
            self.with_config = len(params) >= 2 or "config" in params
        except (TypeError, ValueError):
            self.with_config = False

    def _take(
        self, state: Mapping[str, Any], config: Mapping[str, Any]
    ) -> tuple[Any, str, str, str | None]:
        """Check the grant for this send and claim it for this process; else raise, sending nothing.

        Raises :class:`SendRefused` (no approve or edit of a live question, a ``Send``, a changed
        draft) or :class:`ApprovalConflict` (the decision is another process's, or already sent).
        """
        from liveguard.live.checkpoints import claim

        thread = thread_of(config)
        triggers = (config.get("metadata") or {}).get(TRIGGERS_KEY) or ()
        if PUSH_TRIGGER in triggers:
            raise self._refuse(thread, "pushed", "the send node was started by Send(node, input) "
                               "(a goto with input), never by the approval step")
        records = state.get(self.audit_key) if isinstance(state, Mapping) else None
        record = records[-1] if isinstance(records, list) and records else None
        if not isinstance(record, Mapping) or record.get("kind") != KIND or record.get("action") not in SENDS:
            ours = isinstance(record, Mapping) and record.get("kind") == KIND
            found = record.get("action") if ours and isinstance(record, Mapping) else None
            raise self._refuse(thread, "no_decision", "no approve or edit decision holds for this draft"
                               + (f" (the last decision: {found})" if isinstance(found, str) else
                                  " (it waits for a person, or was never asked)"))
        key = str(record.get("grant") or record.get("claim") or "")
        grant = WON.get(thread, key) if key else None
        conf = config.get(CONF) or {}
        saver = conf.get(CHECKPOINTER_KEY)
        if grant is None:
            if record.get("claim") and saver is not None:
                log.warning("approval thread=%s send_refused=not_the_winner", thread)
                raise ApprovalConflict(thread, str(record.get("by")), str(record.get("action")),
                                       str(record.get("at")))
            raise self._refuse(thread, "not_granted", "the recorded decision is not one this process "
                               "holds (another question's, already sent, or written by a client)")
        if state_digest(state, grant.draft_key, grant.recipient_key) != grant.digest:
            raise self._refuse(thread, "draft_changed",
                               "the draft or its recipient is not the one decided on")
        if not grant.claimed or saver is None:
            return saver, thread, key, None
        send_key = f"send:{key}"
        got = claim(saver, thread, send_key, by=str(grant.by), action="sending", at=self.clock().isoformat())
        if not got.won:
            log.warning("approval thread=%s send_refused=already_%s", thread, got.action)
            raise ApprovalConflict(thread, got.decided_by, got.action, got.decided_at)
        return saver, thread, key, send_key

    def _refuse(self, thread: str, reason: str, detail: str) -> SendRefused:
        log.warning("approval thread=%s send_refused=%s", thread, reason)
        return SendRefused(thread, reason, detail)

    def _done(self, held: tuple[Any, str, str, str | None], ok: bool) -> None:
        from liveguard.live.checkpoints import mark_sent, release

        saver, thread, key, send_key = held
        if ok:
            WON.discard(thread, key)  # sent: this decision sends no more
        try:
            if send_key is None:
                return
            if ok:
                mark_sent(saver, thread, send_key, outcome="sent", at=self.clock().isoformat())
            else:  # the send raised: this process may try it again (a retry policy, a new resume)
                release(saver, thread, send_key)
        except Exception as exc:  # the send happened (or not) all the same; the row says 'sending'
            log.warning("approval thread=%s send_record_error=%s", thread, type(exc).__name__)

    def _args(self, state: Any, config: Any) -> tuple[Any, ...]:
        return (state, config) if self.with_config else (state,)

    async def _acall_fn(self, *args: Any) -> Any:
        out = self.fn(*args)
        return await out if inspect.isawaitable(out) else out

    def _body(self, state: Any, config: RunnableConfig) -> Body[Any]:
        """Claim, send, record: for the sync and async drivers alike (:mod:`liveguard.core._twin`)."""
        held = yield blocking(self._take, state, config)
        try:
            out = yield Op(self.fn, self._acall_fn, self._args(state, config))
        except BaseException:
            yield blocking(self._done, held, False)
            raise
        yield blocking(self._done, held, True)
        return out

    def __call__(self, state: Any, config: RunnableConfig) -> Any:
        return _twin.run(self._body(state, config))

    async def acall(self, state: Any, config: RunnableConfig) -> Any:
        return await _twin.arun(self._body(state, config))


def approval_send(
    fn: Callable[..., Any],
    *,
    audit_key: str = "approvals",
    clock: Callable[[], datetime] | None = None,
    name: str | None = None,
) -> Any:
    """Wrap the node that sends, so that the decision's claim covers the send itself.

    ::

        builder.add_node("send_touch", approval_send(send_touch))

    The send closes by construction: ``fn`` runs only on a live grant of this process, the
    approve or edit decision (a person's, claimed; liveguard's auto-approval; a scripted
    ``decide``) that the thread's latest approval record (``state[audit_key][-1]``) names, and
    only when the state holds exactly the draft and recipient that decision was bound to (its
    digest). Anything else raises :class:`SendRefused` and sends nothing: no decision yet (the
    draft waits), a reject, a decision of another question or one already sent, a draft or
    recipient changed after the decision, a node started by ``Send(node, input)`` (a client's
    ``goto`` with input). A client's ``Command(goto=<this node>)`` therefore sends nothing.
    A person's decision sends only in the process that won its claim, and only once: it first
    inserts a ``send:<claim>`` row (``sending``), then runs ``fn``, then marks the row ``sent``.
    A resumer that did not win (it loaded the thread after the winner's approval, wherever it
    starts) raises :class:`ApprovalConflict`. If ``fn`` raises, the row is deleted and the
    grant kept, so the winner may try again. ``fn`` takes ``(state)`` or ``(state, config)``,
    sync or async.
    """
    from langgraph._internal._runnable import RunnableCallable

    if not callable(fn):
        raise ApprovalError("approval_send: fn must be the node function that sends")
    send = _Send(fn, audit_key, clock or (lambda: datetime.now(UTC)))
    return RunnableCallable(send, send.acall, name=name or getattr(fn, "__name__", "send"), trace=False)
