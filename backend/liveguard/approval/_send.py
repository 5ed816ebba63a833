"""The send, covered by the decision's claim: only the process that won it sends, once."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from liveguard import _twin
from liveguard._twin import Body, Op, blocking
from liveguard.approval._common import CHECKPOINTER_KEY, CONF, KIND, WON, log
from liveguard.errors import ApprovalConflict, ApprovalError

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

    def _take(self, state: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[Any, str, str, str] | None:
        """Claim the send for this process, or raise :class:`ApprovalConflict`; None: nothing to guard."""
        from liveguard.checkpoints import claim

        records = state.get(self.audit_key) if isinstance(state, Mapping) else None
        record = records[-1] if isinstance(records, list) and records else None
        if not isinstance(record, Mapping) or record.get("kind") != KIND or not record.get("claim"):
            return None  # not reached through a claimed approval (scripted decide, another route)
        if record.get("action") not in ("approve", "edit"):
            return None
        conf = config.get(CONF) or {}
        thread, saver, key = str(conf.get("thread_id")), conf.get(CHECKPOINTER_KEY), str(record["claim"])
        if saver is None:
            return None
        if (thread, key) not in WON:
            log.warning("approval thread=%s send_refused=not_the_winner", thread)
            raise ApprovalConflict(thread, str(record.get("by")), str(record.get("action")),
                                   str(record.get("at")))
        send_key = f"send:{key}"
        got = claim(saver, thread, send_key, by=str(record.get("by")), action="sending",
                    at=self.clock().isoformat())
        if not got.won:
            log.warning("approval thread=%s send_refused=already_%s", thread, got.action)
            raise ApprovalConflict(thread, got.decided_by, got.action, got.decided_at)
        return saver, thread, key, send_key

    def _done(self, held: tuple[Any, str, str, str] | None, ok: bool) -> None:
        from liveguard.checkpoints import mark_sent, release

        if held is None:
            return
        saver, thread, key, send_key = held
        try:
            if ok:
                mark_sent(saver, thread, send_key, outcome="sent", at=self.clock().isoformat())
                WON.discard((thread, key))
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
        """Claim, send, record: for the sync and async drivers alike (:mod:`liveguard._twin`)."""
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

    When the thread's latest approval record (``state[audit_key][-1]``) is a claimed
    approve or edit, the wrapped node sends only in the process that won that claim, and
    only once: it first inserts a ``send:<claim>`` row (``sending``), then runs ``fn``, then
    marks the row ``sent``. A resumer that did not win (it loaded the thread after the
    winner's approval, wherever it starts) raises :class:`ApprovalConflict` and sends
    nothing. If ``fn`` raises, the row is deleted, so the winner may try again. ``fn``
    takes ``(state)`` or ``(state, config)``, sync or async.
    """
    from langgraph._internal._runnable import RunnableCallable

    if not callable(fn):
        raise ApprovalError("approval_send: fn must be the node function that sends")
    send = _Send(fn, audit_key, clock or (lambda: datetime.now(UTC)))
    return RunnableCallable(send, send.acall, name=name or getattr(fn, "__name__", "send"), trace=False)
