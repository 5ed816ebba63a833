"""The approval node: evaluate the thread so far, then auto-approve or ``interrupt()`` for a person."""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final, TypedDict

from liveguard import _twin, hitl
from liveguard._twin import Body, Op, blocking
from liveguard.approval._common import (
    CHECKPOINTER_KEY,
    CONF,
    KIND,
    SENDS,
    TASK_ID_KEY,
    UNATTRIBUTED,
    WON,
    log,
)
from liveguard.approval._decision import parse_decision
from liveguard.approval._verdict import aevaluate, evaluate, hold_request, trajectory_of
from liveguard.approval._visit import Visit, ancestors, node_of, stored_request, where
from liveguard.errors import ApprovalClaimError, ApprovalConflict, ApprovalError, TrajectoryReadError
from liveguard.model import Trajectory, Verdict
from liveguard.readers.checkpoints import (
    read_saver_thread,
    saver_history,
    thread_config,
)

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable, RunnableConfig

    from liveguard.allowset import AllowSet
    from liveguard.notify import Notifier
    from liveguard.policy import Policy
    from liveguard.settings import Settings

HISTORY_WAIT: Final = 5.0
"""Default seconds the node waits for its own step's checkpoint to become readable."""
_NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"


class _ClaimAbort(Exception):
    """Raised inside the resume validator: LangGraph then stores nothing of the answer."""


class ApprovalState(TypedDict, total=False):
    """The keys the approval step writes; add them to your graph's state schema."""

    approvals: Annotated[list[dict[str, Any]], operator.add]
    approval: dict[str, Any]


def draft_digest(draft: Any) -> str:
    """``sha256:`` and the first 16 hex digits of the draft (text as UTF-8, else canonical JSON)."""
    data = draft if isinstance(draft, str) else json.dumps(draft, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def read_thread(
    saver: Any, thread_id: str, *, checkpoint_id: str | None = None, graph_name: str | None = None
) -> Trajectory:
    """The steps of a thread from its checkpointer alone (no compiled graph needed).

    :func:`liveguard.readers.checkpoints.read_saver_thread`, the reader the approval step uses.
    Raises :class:`ApprovalError` for a thread with no checkpoint.
    """
    try:
        return read_saver_thread(saver, thread_id, checkpoint_id=checkpoint_id, graph_name=graph_name)
    except TrajectoryReadError:
        raise ApprovalError(f"thread {thread_id}: no checkpoint") from None


@dataclass(frozen=True, eq=False, kw_only=True)
class _Gate:
    """The approval node's parameters and its body (one per :func:`approval_gate` call)."""

    send: str
    revise: str | None
    draft_key: str
    audit_key: str
    verdict_key: str
    graph_name: str | None
    allow_set: Any
    policy: Any
    settings: Settings | None
    notifiers: tuple[Notifier, ...]
    decide: Callable[[dict[str, Any]], Any] | None
    clock: Callable[[], datetime]
    history_wait: float

    # -- settings, resolved once per visit (the edge), the same for the sync and async bodies --
    def _settings(self) -> Settings:
        from liveguard.settings import Settings

        return self.settings if self.settings is not None else Settings.from_env()

    def _policy(self, settings: Settings) -> Any:
        """The given policy, else the settings' (environment overrides on the defaults)."""
        from liveguard.policy import Policy

        return self.policy if self.policy is not None else settings.policy(Policy())

    # -- decision --------------------------------------------------------------------------
    def _record(
        self, payload: Mapping[str, Any], actor: str, decision: hitl.ReviewDecision, draft: Any,
        claim_key: str | None = None,
    ) -> dict[str, Any]:
        row = payload.get("verdict") or {}
        record: dict[str, Any] = {
            "kind": KIND,
            "actor": actor,
            "action": decision.type,
            "by": decision.by,  # None: the answer named nobody (unattributed)
            "at": self.clock().isoformat(),
            "note": decision.note,
            "codes": [str(c) for c in payload.get("codes") or []],
            "reasons": list(payload.get("reasons") or []),
            "passed": row.get("passed"),
            "score": row.get("score"),
            "draft_digest": draft_digest(draft),
        }
        if isinstance(decision, hitl.Edit):
            record["edited_digest"] = draft_digest(decision.value)
        if isinstance(decision, hitl.Reject) and decision.message is not None:
            record["message"] = decision.message
        if claim_key is not None:
            record["claim"] = claim_key  # what approval_send checks before it sends
        return record

    def _command(self, thread: str, payload: Mapping[str, Any], actor: str, decision: hitl.ReviewDecision,
                 draft: Any, *, claim_key: str | None = None) -> Any:
        from langgraph.graph import END
        from langgraph.types import Command

        record = self._record(payload, actor, decision, draft, claim_key)
        row = dict(payload.get("verdict") or {})
        update: dict[str, Any] = {self.audit_key: [record], self.verdict_key: row}
        if isinstance(decision, hitl.Edit):
            update[self.draft_key] = decision.value
        goto = self.send if decision.type in SENDS else (self.revise or END)
        log.info(
            "approval thread=%s action=%s actor=%s attributed=%d codes=%s reasons=%s draft=%s goto=%s",
            thread, decision.type, actor, decision.by is not None, ",".join(record["codes"]) or "-",
            ",".join(record["reasons"]) or "-", record.get("edited_digest", record["draft_digest"]), goto,
        )
        return Command(update=update, goto=goto)

    def _ask(self, payload: dict[str, Any], visit: Visit) -> hitl.ReviewDecision:
        """The person's decision, claimed before LangGraph stores it (see the module docstring, 5)."""
        from langgraph.errors import GraphInterrupt
        from langgraph.types import interrupt
        from pydantic import AfterValidator

        shown = {k: v for k, v in payload.items() if not k.startswith("_")}
        if self.decide is not None:
            return parse_decision(self.decide(dict(shown)), shown)
        value = dict(shown)
        while True:
            outcome: dict[str, Any] = {}

            def check(answer: Any, outcome: dict[str, Any] = outcome) -> Any:
                return self._claim_answer(visit, answer, shown, outcome)

            schema: Any = Annotated[Any, AfterValidator(check)]
            try:
                answer = interrupt(value, response_schema=schema)
            except GraphInterrupt as exc:
                self._held(visit, exc)
                raise
            except _ClaimAbort:
                raise self._not_claimed(visit, outcome) from None
            parsed = hitl.parse_resume(answer, shown)
            if not isinstance(parsed, hitl.DecisionError):
                return parsed
            # Stored, never claimed, never sent on: the thread is asked again, with the error.
            log.warning("approval thread=%s bad_resume=%s", visit.thread, parsed.location)
            value = dict(hitl.with_error(shown, parsed))

    def _claim_answer(
        self, visit: Visit, answer: Any, request: Mapping[str, Any], outcome: dict[str, Any]
    ) -> Any:
        """Runs inside ``interrupt()`` before LangGraph stores the answer: a failed claim stores nothing.

        Only a valid decision (:func:`liveguard.hitl.parse_resume`) is claimed; a malformed
        answer is stored and answered with a new interrupt, and decides nothing.
        """
        from liveguard.checkpoints import claim

        decision = hitl.parse_resume(answer, request)
        if isinstance(decision, hitl.DecisionError):
            return answer
        if (visit.thread, visit.claim_key) in WON:
            return answer  # this process claimed it already (a replay of its own answer)
        try:
            won = claim(visit.saver, visit.thread, visit.claim_key, by=decision.by or UNATTRIBUTED,
                        action=decision.type, at=self.clock().isoformat())
        except Exception as exc:
            outcome["error"] = exc
            raise _ClaimAbort from None
        if not won.won:
            outcome["conflict"] = won
            raise _ClaimAbort
        if decision.type in SENDS:  # the decisions approval_send sends on
            WON.add((visit.thread, visit.claim_key))
        return answer

    def _not_claimed(self, visit: Visit, outcome: Mapping[str, Any]) -> Exception:
        if "conflict" in outcome:
            return self._refused(visit, outcome["conflict"])
        exc = outcome.get("error")
        log.warning("approval thread=%s claim_error=%s", visit.thread, type(exc).__name__)
        self._forget_answer(visit)
        detail = " ".join(str(exc).split())[:200]
        return ApprovalClaimError(
            f"thread {visit.thread}: the decision could not be recorded ({type(exc).__name__}: {detail}); "
            "nothing was decided, the draft still waits for approval"
        )

    def _forget_answer(self, visit: Visit) -> None:
        """Overwrite an unpinned resume answer kept on the checkpoint, so that no later run replays it."""
        if visit.saver is None or visit.root_checkpoint is None:
            return
        try:
            visit.saver.put_writes(thread_config(visit.thread, "", visit.root_checkpoint),
                                   [("__resume__", None)], _NULL_TASK_ID)
        except Exception as exc:  # the database is down: a pinned resume (CLI, resume_approval) stores none
            log.warning("approval thread=%s forget_answer_error=%s", visit.thread, type(exc).__name__)

    def _held(self, visit: Visit, exc: Any) -> None:
        """The interrupt is raised: stamp its id, index it, and wake a person (once per hold)."""
        from liveguard.checkpoints import index_pending, pause_point

        item = None
        try:
            item = exc.args[0][0]
            value = item.value if isinstance(item.value, dict) else {}
            interrupt_id = str(item.id)
            value["interrupt_id"] = interrupt_id  # the same object LangGraph is about to store
            # Written before LangGraph stores the interrupt: the index is a superset.
            index_pending(visit.saver, visit.thread, visit.claim_key, interrupt_id=interrupt_id,
                          at=self.clock().isoformat(), reasons=[str(r) for r in value.get("reasons") or []],
                          codes=[str(c) for c in value.get("codes") or []], error=value.get("error"))
        except Exception as error:  # the draft is held all the same; `approvals list --scan` still finds it
            log.warning("approval thread=%s index_error=%s", visit.thread, type(error).__name__)
        pause_point("approval_indexed")
        self._notify(visit, item)

    def _notify(self, visit: Visit, item: Any) -> None:
        """Queue the notifiers (unless this interrupt was raised and stored before: a replay); they
        run off the step, once the hold is stored (:func:`liveguard.notify.notify_later`)."""
        from liveguard.approval._wake import hold_stored
        from liveguard.notify import Coords, notify_later

        if not self.notifiers or item is None:
            return
        held = str(getattr(item, "id", ""))
        if visit.stored_id is not None and held == visit.stored_id:
            return  # the same hold, replayed (a run without an answer): the person was woken already
        value = item.value if isinstance(item.value, Mapping) else {}
        notify_later(self.notifiers, value, Coords(thread_id=visit.thread, checkpoint_ns=visit.node_ns,
                                                   interrupt_id=held or None),
                     ready=hold_stored(visit, held) if held else None)

    # -- entry points ----------------------------------------------------------------------
    def _begin(self, config: Any) -> Visit:
        thread, task_id, ns, checkpoint_id = self._where_or_scripted(config)
        conf = config.get(CONF) or {}
        visit = Visit(thread, task_id, ns, checkpoint_id, saver=conf.get(CHECKPOINTER_KEY),
                       node=node_of(config))
        visit.node_ns = str(conf.get("checkpoint_ns") or "")
        visit.ancestors = ancestors(config, ns) if checkpoint_id else []
        visit.root_checkpoint = (visit.ancestors[0][1] if visit.ancestors else checkpoint_id) or None
        return visit

    def _reuse(self, visit: Visit, target: Any) -> None:
        found = stored_request(target, visit.task_id)
        if found is not None:
            visit.payload, visit.stored_id = found

    def _read_failed(self, visit: Visit, exc: Exception) -> None:
        if isinstance(exc, TrajectoryReadError):  # the step's own checkpoint never became readable
            visit.error = "history_unavailable"
        else:  # a reader failure is missing evidence, never a pass
            log.warning("approval thread=%s history_error=%s", visit.thread, type(exc).__name__)
            visit.error = "history_error"

    def _eval_failed(self, visit: Visit, exc: Exception) -> None:
        """The evaluation itself failed: missing evidence, so a person decides; the run goes on."""
        log.warning("approval thread=%s eval_error=%s", visit.thread, type(exc).__name__)
        visit.error = "eval_error"

    def _auto(self, visit: Visit, draft: Any, verdict: Verdict | None, settings: Settings) -> Any:
        """Build the payload; return the auto-approve Command when the verdict clears, else None."""
        from liveguard.checkpoints import claim

        visit.payload = self._request(visit, draft, verdict, settings)
        if not visit.payload.pop("_cleared"):
            return None
        decision = hitl.Approve(by="liveguard")
        key = None
        if visit.saver is not None and self.decide is None:
            key = visit.claim_key
            try:
                won = claim(visit.saver, visit.thread, key, by="liveguard", action="approve",
                            at=self.clock().isoformat())
            except Exception as exc:  # no claim, no auto-send: a person decides
                log.warning("approval thread=%s claim_error=%s", visit.thread, type(exc).__name__)
                visit.error = "claim_error"
                visit.payload = self._request(visit, draft, None, settings)
                visit.payload.pop("_cleared")
                return None
            if not won.won:
                raise self._refused(visit, won)
            WON.add((visit.thread, key))
        return self._command(visit.thread, visit.payload, "auto", decision, draft, claim_key=key)

    def _request(
        self, visit: Visit, draft: Any, verdict: Verdict | None, settings: Settings
    ) -> dict[str, Any]:
        """The request a person would see (plus ``_cleared``), for this visit."""
        return hold_request(visit.thread, draft, verdict, error=visit.error, settings=settings,
                            graph_name=self.graph_name)

    def _refused(self, visit: Visit, won: Any) -> ApprovalConflict:
        log.warning("approval thread=%s conflict decided_by_other=1", visit.thread)
        return ApprovalConflict(visit.thread, won.decided_by, won.action, won.decided_at)

    def _person(self, visit: Visit, decision: hitl.ReviewDecision, draft: Any) -> Any:
        assert visit.payload is not None
        key = visit.claim_key if self.decide is None else None
        return self._command(visit.thread, visit.payload, "person", decision, draft, claim_key=key)

    def _body(self, state: Mapping[str, Any], config: RunnableConfig) -> Body[Any]:
        """The visit, for the sync and async drivers alike (:mod:`liveguard._twin`)."""
        visit = self._begin(config)
        draft = state.get(self.draft_key)
        if visit.readable:
            try:
                target, visit.chunks = yield from saver_history(
                    visit.saver, visit.thread, visit.ns, visit.checkpoint_id, self.history_wait,
                    ancestors=visit.ancestors,
                )
                self._reuse(visit, target)
            except Exception as exc:
                self._read_failed(visit, exc)
        if visit.payload is None:
            settings = self._settings()
            verdict = None
            if visit.chunks is not None:
                try:
                    trajectory = trajectory_of(visit.thread, visit.chunks, visit.node, self.graph_name)
                    verdict = yield Op(evaluate, aevaluate,
                                       (trajectory, settings, self.allow_set, self._policy(settings)))
                except Exception as exc:
                    self._eval_failed(visit, exc)
            auto = yield blocking(self._auto, visit, draft, verdict, settings)
            if auto is not None:
                return auto
        assert visit.payload is not None
        if self.decide is None:
            # Async: in a worker thread, so that the claim (a blocking call inside interrupt()) can
            # run an async saver's query on the event loop, and the notifiers run off it.
            decision = yield blocking(self._ask, visit.payload, visit)
        else:
            decision = self._ask(visit.payload, visit)
        return self._person(visit, decision, draft)

    def __call__(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        return _twin.run(self._body(state, config))

    async def acall(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        return await _twin.arun(self._body(state, config))

    def _where_or_scripted(self, config: Any) -> tuple[str, str, str, str]:
        """Where the node runs. With a scripted ``decide``, a graph without a checkpointer may run it."""
        try:
            return where(config)
        except ApprovalError:
            if self.decide is None:
                raise
            conf = (config or {}).get(CONF) or {}
            return str(conf.get("thread_id") or "<no thread>"), str(conf.get(TASK_ID_KEY) or ""), "", ""


def approval_gate(
    *,
    send: str,
    revise: str | None = None,
    draft_key: str = "draft",
    audit_key: str = "approvals",
    verdict_key: str = "approval",
    graph_name: str | None = None,
    allow_set: AllowSet | None = None,
    policy: Policy | None = None,
    settings: Settings | None = None,
    notifiers: Sequence[Notifier] = (),
    decide: Callable[[dict[str, Any]], Any] | None = None,
    clock: Callable[[], datetime] | None = None,
    history_wait: float = HISTORY_WAIT,
    name: str = "approval_gate",
) -> Runnable[Any, Any]:
    """The approval node (a Runnable with sync and async bodies); see the module docstring.

    ``send`` / ``revise`` are node names (``revise=None``: a rejection ends the run).
    ``graph_name``, ``allow_set`` and ``policy`` are passed to the eval graph (the allow-set
    turns on the transition rules). ``settings`` (:class:`liveguard.settings.Settings`):
    judges, auto-approve switch and, when ``policy`` is None, the policy; None reads the
    environment once per visit, the same for the sync and async bodies. ``notifiers``
    (:class:`liveguard.notify.Notifier`, e.g. :class:`~liveguard.notify.WebhookNotifier`)
    are called with the interrupt value and the thread coordinates each time a draft is
    held (once per hold, not when a run replays it); a failing notifier is logged and
    never releases or sends the draft. ``decide`` replaces the person for non-interactive runs
    (recording, batch replays): it gets the payload and returns the resume answer, which is
    validated like one (:func:`parse_decision`); no ``interrupt()`` happens and no claim is
    taken. ``clock`` stamps the audit records (default: now, UTC). ``history_wait`` bounds
    the wait for the step's own checkpoint (seconds).
    """
    # LangGraph's own node wrapper (one traced run per visit, sync and async bodies); the public
    # RunnableLambda would add a nested run of the same name.
    from langgraph._internal._runnable import RunnableCallable

    if not isinstance(send, str) or not send:
        raise ApprovalError("approval_gate: send must name a node")
    listed = list(notifiers)
    for index, notifier in enumerate(listed):
        if not callable(notifier):
            raise ApprovalError(f"approval_gate: notifiers[{index}] is not callable "
                                f"(got {type(notifier).__name__}); a notifier is notifier(payload, coords)")
    gate = _Gate(send=send, revise=revise, draft_key=draft_key, audit_key=audit_key,
                 verdict_key=verdict_key, graph_name=graph_name, allow_set=allow_set, policy=policy,
                 settings=settings, notifiers=tuple(listed), decide=decide,
                 clock=clock or (lambda: datetime.now(UTC)), history_wait=history_wait)
    return RunnableCallable(gate, gate.acall, name=name, trace=False)
