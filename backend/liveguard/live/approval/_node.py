"""The approval node: evaluate the thread so far, then auto-approve or ``interrupt()`` for a person."""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final, TypedDict

from liveguard.core import _twin
from liveguard.core._twin import Body, Op, blocking
from liveguard.core.model import Trajectory, Verdict
from liveguard.errors import ApprovalClaimError, ApprovalConflict, ApprovalError, TrajectoryReadError
from liveguard.live import hitl
from liveguard.live.approval._common import (
    CHECKPOINTER_KEY,
    CONF,
    KIND,
    NO_THREAD,
    SENDS,
    TASK_ID_KEY,
    UNATTRIBUTED,
    WON,
    Grant,
    bound_digest,
    log,
    state_digest,
)
from liveguard.live.approval._decision import parse_decision
from liveguard.live.approval._verdict import aevaluate, evaluate, hold_request, trajectory_of
from liveguard.live.approval._visit import Visit, ancestors, node_of, stored_request, where
from liveguard.readers.checkpoints import (
    read_saver_thread,
    saver_history,
    thread_config,
)

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable, RunnableConfig

    from liveguard.core.allowset import AllowSet
    from liveguard.core.policy import Policy
    from liveguard.live.notify import Notifier
    from liveguard.settings import Settings

HISTORY_WAIT: Final = 5.0
"""Default seconds the node waits for its own step's checkpoint to become readable."""
TEXT_LIMIT: Final = 1000
"""Characters of a decision's ``note`` / ``message`` kept in the audit record; a longer one is
cut there, and its whole length and digest are recorded beside it."""
_NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"
_SCRATCHPAD_KEY: Final = "__pregel_scratchpad"
_PINNED: Final = hitl.InvalidDecision(
    "resume", "this question takes only an answer pinned to its interrupt id, "
    "Command(resume={interrupt_id: answer}): the draft or its recipient changed after an earlier "
    "question, so an unpinned answer may be meant for a draft not shown here")


def _bounded(record: dict[str, Any], key: str, text: str | None) -> None:
    """``record[key] = text``, cut to :data:`TEXT_LIMIT` characters (then with its length and digest)."""
    if text is None or len(text) <= TEXT_LIMIT:
        record[key] = text
        return
    record[key] = text[:TEXT_LIMIT]
    record[f"{key}_chars"] = len(text)
    record[f"{key}_digest"] = draft_digest(text)


def _path(node_ns: str) -> str:
    """A node's namespace without its task ids (``outreach|gate``): the same for each visit."""
    return "|".join(part.split(":", 1)[0] for part in node_ns.split("|")) if node_ns else ""


def _unpinned_waiting(slot: int) -> bool:
    """An unpinned answer waits for interrupt number ``slot`` of this task: take it away, unread.

    LangGraph gives a task's interrupt the answer pinned to its id (``Command(resume={id:
    answer})``, in ``scratchpad.resume``) before an unpinned one (``Command(resume=answer)``, the
    null resume); this looks for the second kind only where the first is absent, and consumes
    it, so that ``interrupt()`` cannot take it.
    """
    from langgraph.config import get_config

    pad = (get_config().get(CONF) or {}).get(_SCRATCHPAD_KEY)
    if pad is None or len(pad.resume) > slot or pad.get_null_resume(False) is None:
        return False
    pad.get_null_resume(True)
    return True


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


def _shown_draft(shown: Mapping[str, Any]) -> Any:
    actions = shown.get("action_requests")
    if isinstance(actions, list) and actions and isinstance(actions[0], Mapping):
        args = actions[0].get("args")
        if isinstance(args, Mapping):
            return args.get("draft")
    return None


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
    recipient_key: str | None
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
        from liveguard.core.policy import Policy

        return self.policy if self.policy is not None else settings.policy(Policy())

    # -- decision --------------------------------------------------------------------------
    def _record(
        self, payload: Mapping[str, Any], actor: str, decision: hitl.ReviewDecision, draft: Any,
        *, claim_key: str | None = None, grant_key: str | None = None,
    ) -> dict[str, Any]:
        row = payload.get("verdict") or {}
        record: dict[str, Any] = {
            "kind": KIND,
            "actor": actor,
            "action": decision.type,
            "by": decision.by,  # None: the answer named nobody (unattributed)
            "at": self.clock().isoformat(),
            "note": decision.note,  # bounded below (the key keeps its place)
            "codes": [str(c) for c in payload.get("codes") or []],
            "reasons": list(payload.get("reasons") or []),
            "passed": row.get("passed"),
            "score": row.get("score"),
            "draft_digest": draft_digest(draft),
        }
        _bounded(record, "note", decision.note)
        if isinstance(decision, hitl.Edit):
            record["edited_digest"] = draft_digest(decision.value)
        if isinstance(decision, hitl.Reject) and decision.message is not None:
            _bounded(record, "message", decision.message)
        if decision.type in SENDS:
            record["digest"] = self._sent_digest(decision, payload)  # the draft and recipient sent
        if claim_key is not None:
            record["claim"] = claim_key
        if grant_key is not None:
            record["grant"] = grant_key  # what approval_send looks up before it sends
        return record

    # -- what a decision sends --------------------------------------------------------------
    def _sent_digest(self, decision: hitl.ReviewDecision, shown: Mapping[str, Any]) -> str:
        """The digest of exactly what ``decision`` sends: the draft shown, or the edited draft."""
        recipient = shown.get("recipient") if self.recipient_key else None
        if isinstance(decision, hitl.Edit):
            return bound_digest(decision.value, recipient)
        return str(shown.get("digest") or bound_digest(_shown_draft(shown), recipient))

    def _grant(self, thread: str, key: str | None, decision: hitl.ReviewDecision, shown: Mapping[str, Any],
               *, claimed: bool) -> str | None:
        """Let this process's send node send what ``decision`` sends (once, :func:`approval_send`).

        ``key`` None: a scripted decision, granted under ``scripted:<digest>`` (no task id, so a
        recorded run replays byte for byte). Returns the grant's key (None: the decision sends nothing).
        """
        if decision.type not in SENDS:
            return None
        digest = self._sent_digest(decision, shown)
        grant = Grant(digest, self.draft_key, self.recipient_key, claimed, decision.by, decision.type)
        WON.add(thread, key or f"scripted:{digest}", grant, count=key is None)
        return key or f"scripted:{digest}"

    def _command(self, thread: str, payload: Mapping[str, Any], actor: str, decision: hitl.ReviewDecision,
                 draft: Any, *, claim_key: str | None = None, grant_key: str | None = None) -> Any:
        from langgraph.graph import END
        from langgraph.types import Command

        record = self._record(payload, actor, decision, draft, claim_key=claim_key, grant_key=grant_key)
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
        pinned_only = bool(shown.get("pinned_only"))
        slot = 0  # interrupt() calls so far in this run of the task (the node calls no other)
        while True:
            if pinned_only and _unpinned_waiting(slot):
                # Refused unread, never stored, never claimed: the same question, asked again.
                log.warning("approval thread=%s unpinned_refused=1", visit.thread)
                self._forget_answer(visit)
                value = dict(hitl.with_error(shown, _PINNED))
            outcome: dict[str, Any] = {}

            def check(answer: Any, outcome: dict[str, Any] = outcome) -> Any:
                return self._claim_answer(visit, answer, shown, outcome)

            schema: Any = Annotated[Any, AfterValidator(check)]
            try:
                answer = interrupt(value, response_schema=schema)
                slot += 1
            except GraphInterrupt as exc:
                self._held(visit, exc)
                raise
            except _ClaimAbort:
                raise self._not_claimed(visit, outcome) from None
            parsed = hitl.parse_resume(answer, shown)
            if not isinstance(parsed, hitl.InvalidDecision):
                return parsed
            # Stored, never claimed, never sent on: the thread is asked again, with the error.
            log.warning("approval thread=%s bad_resume=%s", visit.thread, parsed.location)
            value = dict(hitl.with_error(shown, parsed))

    def _claim_answer(
        self, visit: Visit, answer: Any, request: Mapping[str, Any], outcome: dict[str, Any]
    ) -> Any:
        """Runs inside ``interrupt()`` before LangGraph stores the answer: a failed claim stores nothing.

        Only a valid decision (:func:`liveguard.live.hitl.parse_resume`) is claimed; a malformed
        answer is stored and answered with a new interrupt, and decides nothing.
        """
        from liveguard.live.checkpoints import claim

        decision = hitl.parse_resume(answer, request)
        if isinstance(decision, hitl.InvalidDecision):
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
        self._grant(visit.thread, visit.claim_key, decision, request, claimed=True)
        self._decided(visit, str(request.get("digest")))
        return answer

    # -- questions asked again: which take only a pinned answer ------------------------------
    def _marker(self, visit: Visit) -> str:
        return f"asked:{_path(visit.node_ns)}"

    def _decided(self, visit: Visit, digest: str) -> None:
        """Mark the thread's question on this node decided, when it is this visit's question."""
        from liveguard.live.checkpoints import claim, mark_sent

        line = f"done {visit.claim_key} {digest} 0"
        at = self.clock().isoformat()
        try:
            got = claim(visit.saver, visit.thread, self._marker(visit), by="liveguard", action=line, at=at)
            before = got.action.split(" ")
            if not got.won and len(before) == 4 and before[1] == visit.claim_key:
                mark_sent(visit.saver, visit.thread, self._marker(visit), outcome=line, at=at)
        except Exception as exc:  # not recorded: the next question takes only a pinned answer
            log.warning("approval thread=%s asked_record_error=%s", visit.thread, type(exc).__name__)

    def _pinned_only(self, visit: Visit, digest: str) -> bool:
        """Whether the question this visit asks takes only an answer pinned to its id.

        The claims table keeps one row per thread and node path (``asked:<path>``: ``open|done
        claim-key digest pinned``), so the thread's last question is known across a fork, an
        ``update_state`` and another worker alike. Pinned only: when the previous question was
        left undecided (an ``update_state``, a fork, a client's ``goto``, a question voided after
        its draft changed) and showed another draft or recipient, or itself took only pinned
        answers; and when the row cannot be read or written (fail closed). Not for a thread's
        first question, nor after a decided one.
        """
        from liveguard.live.checkpoints import claim, mark_sent

        at = self.clock().isoformat()
        try:
            got = claim(visit.saver, visit.thread, self._marker(visit), by="liveguard",
                        action=f"open {visit.claim_key} {digest} 0", at=at)
            if got.won:
                return False
            before = got.action.split(" ")
            if len(before) != 4:
                pinned = True
            elif before[1] == visit.claim_key:  # this same question, asked again (a run that crashed)
                return before[3] == "1"
            else:
                pinned = before[0] != "done" and (before[2] != digest or before[3] == "1")
            mark_sent(visit.saver, visit.thread, self._marker(visit),
                      outcome=f"open {visit.claim_key} {digest} {int(pinned)}", at=at)
            return pinned
        except Exception as exc:
            log.warning("approval thread=%s asked_record_error=%s", visit.thread, type(exc).__name__)
            return True

    def _void(self, visit: Visit, shown: Mapping[str, Any], digest: str) -> Any:
        """The held question showed another draft than the state now holds: close it, unanswered.

        Its claim is taken (``void``), so no answer to it is ever taken, here or by another
        worker; the step then runs again (``goto`` itself) and asks about the draft the state
        holds, as a new question with a new interrupt id, which takes only a pinned answer.
        """
        from langgraph.types import Command

        from liveguard.live.checkpoints import claim

        if visit.node is None:
            raise ApprovalError(f"thread {visit.thread}: the draft changed after the question was asked; "
                                "nothing was sent")
        try:
            won = claim(visit.saver, visit.thread, visit.claim_key, by="liveguard", action="void",
                        at=self.clock().isoformat())
        except Exception as exc:
            log.warning("approval thread=%s claim_error=%s", visit.thread, type(exc).__name__)
            raise ApprovalClaimError(f"thread {visit.thread}: the draft changed after the question was "
                                     "asked and the question could not be closed; nothing was sent") from None
        if not won.won:
            raise self._refused(visit, won)
        log.warning("approval thread=%s void=draft_changed shown=%s now=%s", visit.thread,
                    shown.get("digest"), digest)
        record = {"kind": KIND, "actor": "liveguard", "action": "void", "by": None,
                  "at": self.clock().isoformat(), "reason": "draft_changed",
                  "codes": [str(c) for c in shown.get("codes") or []],
                  "reasons": list(shown.get("reasons") or []),
                  "shown_digest": shown.get("digest"), "digest": digest, "claim": visit.claim_key}
        return Command(update={self.audit_key: [record]}, goto=visit.node)

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
        from liveguard.live.checkpoints import index_pending, pause_point

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
        run off the step, once the hold is stored (:func:`liveguard.live.notify.notify_later`)."""
        from liveguard.live._wake import interrupt_stored
        from liveguard.live.notify import Coords, notify_later

        if not self.notifiers or item is None:
            return
        held = str(getattr(item, "id", ""))
        if visit.stored_id is not None and held == visit.stored_id:
            return  # the same hold, replayed (a run without an answer): the person was woken already
        value = item.value if isinstance(item.value, Mapping) else {}
        notify_later(self.notifiers, value, Coords(thread_id=visit.thread, checkpoint_ns=visit.node_ns,
                                                   interrupt_id=held or None),
                     ready=interrupt_stored(visit.saver, visit.thread, ns=visit.ns,
                                            checkpoint_id=visit.checkpoint_id, task_id=visit.task_id,
                                            interrupt_id=held))

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
        from liveguard.live.checkpoints import claim

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
        grant = self._grant(visit.thread, key, decision, visit.payload, claimed=key is not None)
        return self._command(visit.thread, visit.payload, "auto", decision, draft, claim_key=key,
                             grant_key=grant)

    def _request(
        self, visit: Visit, draft: Any, verdict: Verdict | None, settings: Settings, *,
        pinned_only: bool = False,
    ) -> dict[str, Any]:
        """The request a person would see (plus ``_cleared``), for this visit."""
        return hold_request(visit.thread, draft, verdict, error=visit.error, settings=settings,
                            graph_name=self.graph_name, digest=visit.digest,
                            recipient=visit.recipient, pinned_only=pinned_only)

    def _refused(self, visit: Visit, won: Any) -> ApprovalConflict:
        log.warning("approval thread=%s conflict decided_by_other=1", visit.thread)
        return ApprovalConflict(visit.thread, won.decided_by, won.action, won.decided_at)

    def _person(self, visit: Visit, decision: hitl.ReviewDecision, draft: Any) -> Any:
        assert visit.payload is not None
        key = visit.claim_key if self.decide is None else None
        grant = key if decision.type in SENDS else None
        if self.decide is not None:  # scripted: no claim; the grant is this process's alone
            grant = self._grant(visit.thread, None, decision, visit.payload, claimed=False)
        return self._command(visit.thread, visit.payload, "person", decision, draft, claim_key=key,
                             grant_key=grant)

    def _body(self, state: Mapping[str, Any], config: RunnableConfig) -> Body[Any]:
        """The visit, for the sync and async drivers alike (:mod:`liveguard.core._twin`)."""
        visit = self._begin(config)
        draft = state.get(self.draft_key)
        visit.recipient = state.get(self.recipient_key) if self.recipient_key else None
        visit.digest = state_digest(state, self.draft_key, self.recipient_key)
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
            if self.decide is None and (yield blocking(self._pinned_only, visit, visit.digest)):
                visit.payload = self._request(visit, draft, verdict, settings, pinned_only=True)
                visit.payload.pop("_cleared")
        elif self.decide is None and self._shown_digest(visit.payload) != visit.digest:
            return (yield blocking(self._void, visit, visit.payload, visit.digest))
        assert visit.payload is not None
        if self.decide is None:
            # Async: in a worker thread, so that the claim (a blocking call inside interrupt()) can
            # run an async saver's query on the event loop, and the notifiers run off it.
            decision = yield blocking(self._ask, visit.payload, visit)
        else:
            decision = self._ask(visit.payload, visit)
        return self._person(visit, decision, draft)

    def _shown_digest(self, shown: Mapping[str, Any]) -> str:
        """The digest a held question showed (one stored by an older liveguard: of its draft)."""
        digest = shown.get("digest")
        if isinstance(digest, str):
            return digest
        return bound_digest(_shown_draft(shown), shown.get("recipient") if self.recipient_key else None)

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
            return str(conf.get("thread_id") or NO_THREAD), str(conf.get(TASK_ID_KEY) or ""), "", ""


def approval_gate(
    *,
    send: str,
    revise: str | None = None,
    draft_key: str = "draft",
    recipient_key: str | None = None,
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

    ``send`` / ``revise`` are node names (``revise=None``: a rejection ends the run); the
    ``send`` node must be wrapped in :func:`approval_send`, which sends only what a decision
    of this step granted. ``recipient_key`` names the state key the send goes to (the
    recipient): it is shown beside the draft, and a decision is bound to both (a change of
    either after the question was asked voids the question).
    ``graph_name``, ``allow_set`` and ``policy`` are passed to the eval graph (the allow-set
    turns on the transition rules). ``settings`` (:class:`liveguard.settings.Settings`):
    judges, auto-approve switch and, when ``policy`` is None, the policy; None reads the
    environment once per visit, the same for the sync and async bodies. ``notifiers``
    (:class:`liveguard.live.notify.Notifier`, e.g. :class:`~liveguard.live.notify.WebhookNotifier`)
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
    if recipient_key is not None and (not isinstance(recipient_key, str) or not recipient_key):
        raise ApprovalError("approval_gate: recipient_key must name a state key (or be None)")
    gate = _Gate(send=send, revise=revise, draft_key=draft_key, recipient_key=recipient_key,
                 audit_key=audit_key,
                 verdict_key=verdict_key, graph_name=graph_name, allow_set=allow_set, policy=policy,
                 settings=settings, notifiers=tuple(listed), decide=decide,
                 clock=clock or (lambda: datetime.now(UTC)), history_wait=history_wait)
    return RunnableCallable(gate, gate.acall, name=name, trace=False)
