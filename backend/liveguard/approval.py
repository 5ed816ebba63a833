"""Draft-first approval: evaluate the thread so far, then auto-approve or ``interrupt()`` for a person.

::

    from liveguard.approval import approval_gate

    builder.add_node(
        "approve_send",
        approval_gate(send="send_touch", revise="compose_touch", draft_key="draft"),
        destinations=("send_touch", "compose_touch", END),
    )

The node (sync and async callers alike) does, in order:

1. **Trajectory.** It reads the thread's own checkpoint history through the graph's
   checkpointer (every finished task of every earlier checkpoint of this thread, oldest
   first, read like a ``stream_mode="updates"`` chunk by the same
   :class:`~liveguard.readers.stream.UpdateStepper` the live guards use). It waits (bounded,
   :data:`HISTORY_WAIT`) for the checkpoint its own step started from, because LangGraph
   writes checkpoints in the background while the next step runs; when it never appears
   (``durability="exit"`` writes nothing during the run) the verdict is missing and the draft
   is held for a person (``unjudged:history_unavailable``). Why not
   ``liveguard.langsmith.thread_to_trajectory``: that reader needs the compiled graph
   (``get_state_history``), and a node never sees its own compiled graph, only the
   checkpointer in its config. Why not the state: the state holds the latest values,
   not each step's update, so a repeated draft would be invisible. A superstep that ran
   several nodes in parallel is attributed by node name order (its content is exact).
   :func:`read_thread` is the same reader for a whole thread; a test checks that it gives
   the graph-based reader's steps on every campaign scenario.
2. **Verdict.** The trajectory goes through the eval graph (:func:`~liveguard.eval_graph.build_eval_graph`,
   compiled with ``checkpointer=False``), run in a fresh context (its own thread or task),
   so nothing of it is written into the caller's thread and the caller's callbacks and
   config do not reach it. Settings (judges, policy, auto-approve switch) are resolved once
   per visit, from ``settings=`` or else the environment (``AGENT_EVAL_*``), and the sync
   and async bodies use the same values. If the evaluation itself fails, the draft is held
   (``unjudged:eval_error``) and the run goes on.
3. **Decision.** If :func:`~liveguard.gate.verdict_clears_autoapprove` holds, the node goes to
   ``send``. Otherwise it calls ``interrupt(request)`` with a LangChain ``HITLRequest``
   (:func:`liveguard.hitl.approval_request`): one ``send_draft`` action request with the
   draft in ``args``, a ``description`` in words, a ``review_config`` allowing
   ``approve``/``edit``/``reject``, and liveguard's evidence in extra keys::

       {"action_requests": [{"name": "send_draft", "args": {"draft": <the draft>},
                             "description": "liveguard holds this draft for a person ..."}],
        "review_configs": [{"action_name": "send_draft",
                            "allowed_decisions": ["approve", "edit", "reject"]}],
        "kind": "liveguard.approval", "codes": [...], "edit_key": "draft",
        "reasons": ["autoapprove_off", "hard:content_cycle", "unjudged:no_api_key", ...],
        "verdict": <a `liveguard score --format json` row>, "interrupt_id": <its id>}

   When the thread is resumed, the verdict is **not** recomputed: the request stored with
   the interrupt (in the checkpoint's pending writes) is reused, so the person decides
   on what they saw and a resume costs no judge call. ``notifiers`` (see
   :mod:`liveguard.notify`) are called once per hold, when the interrupt is raised for the
   first time (not when a run replays it); a failing notifier is logged and changes nothing.
4. **Resume** with LangChain's ``HITLResponse``, ``Command(resume={"decisions": [{"type":
   "approve"}], "by": "ann", "note": "..."})``: approve goes to ``send``; ``{"type": "edit",
   "edited_action": {"name": "send_draft", "args": {"draft": "..."}}}`` replaces the draft and
   goes to ``send``; ``{"type": "reject", "message": "..."}`` goes to ``revise`` (or END).
   ``by`` and ``note`` (optional, beside ``decisions`` or inside the decision) go into the
   audit record; an answer without ``by`` (a review UI that sends none) is recorded with
   ``by: None`` (unattributed). The answer is parsed by :func:`liveguard.hitl.parse_resume`;
   a malformed one (``respond``, an unknown type or key, a wrong type, an edit without a
   draft) is logged and answered with a new ``interrupt()`` whose value adds ``"error"``
   (:func:`liveguard.hitl.with_error`): the thread stays interrupted and nothing is sent.
   :func:`resume_approval` / :func:`aresume_approval` check the answer against the pending
   request and that the thread waits for an approval *before* resuming, and raise
   :class:`ApprovalError` otherwise (the approvals CLI does the same).
5. **Exactly once** (the precise guarantee: ``docs/approval.md``). A person's decision is
   claimed (:func:`liveguard.checkpoints.claim`: one row per interrupted task in the
   checkpointer's own database) inside ``interrupt()``'s validation of the resume answer,
   before LangGraph stores the answer. Of two workers resuming the same interrupt, one wins;
   the other raises :class:`ApprovalConflict` naming the winner, and its answer is not kept.
   A claim the database refuses raises :class:`ApprovalClaimError`: nothing is decided, the
   answer is discarded (an unpinned one kept on the checkpoint is overwritten), the interrupt
   waits. The send itself is covered by the same claim: :func:`approval_send` wraps the send
   node, which sends only in the process that won and records ``sending`` / ``sent`` around
   it, so a resumer that loads the thread after the winner's approval never sends. The
   step creates the tables it needs itself (any SQLite or PostgreSQL saver, however
   opened), and keeps the pending-approval index that ``liveguard approvals list`` reads:
   a row written right before the interrupt is stored, deleted by the claim that decides it.
6. **Audit.** Every decision appends a record to ``state[audit_key]`` (a list channel with
   an ``operator.add`` reducer: see :class:`ApprovalState`): ``actor`` (``auto`` or
   ``person``), ``by``, ``at``, ``note``, ``codes`` and ``reasons`` at that moment, the
   draft's digest (and the edited draft's), never the draft text. ``state[verdict_key]``
   holds the verdict row. Logs (``liveguard.approval``) carry codes, counts, digests and
   thread ids only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import hashlib
import inspect
import itertools
import json
import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Final, TypedDict

from liveguard import hitl
from liveguard.errors import LiveguardError
from liveguard.evidence import JUDGE_ERROR, JUDGES_SKIPPED, MissingEvidence, level_error
from liveguard.model import Step, Trajectory, Verdict
from liveguard.readers.stream import UpdateStepper

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable, RunnableConfig

    from liveguard.allowset import AllowSet
    from liveguard.notify import Notifier
    from liveguard.policy import Policy
    from liveguard.settings import Settings

__all__ = [
    "KIND",
    "UNATTRIBUTED",
    "ApprovalClaimError",
    "ApprovalConflict",
    "ApprovalError",
    "ApprovalState",
    "approval_gate",
    "approval_send",
    "aresume_approval",
    "draft_digest",
    "parse_decision",
    "pending_approval",
    "pending_interrupt_id",
    "read_thread",
    "reasons_for",
    "resume_approval",
]

log = logging.getLogger("liveguard.approval")

KIND: Final = hitl.APPROVAL_KIND
UNATTRIBUTED: Final = "(unattributed)"
"""Who decided, in the claims table, when the answer named nobody (a review UI sends no ``by``)."""
HISTORY_WAIT: Final = 5.0
"""Default seconds the node waits for its own step's checkpoint to become readable."""
_CONF: Final = "configurable"
_CHECKPOINTER_KEY: Final = "__pregel_checkpointer"
_TASK_ID_KEY: Final = "__pregel_task_id"
_INTERRUPT: Final = "__interrupt__"
_NULL_TASK_ID: Final = "00000000-0000-0000-0000-000000000000"
_SENDS: Final = ("approve", "edit")
"""The decision types that send (and that :func:`approval_send` sends on)."""
_WON: set[tuple[str, str]] = set()
"""Claims this process won and has not sent on yet: ``(thread, claim key)``. Only the
process that won a decision's claim may send on it (:func:`approval_send`)."""


class _ClaimAbort(Exception):
    """Raised inside the resume validator: LangGraph then stores nothing of the answer."""


class ApprovalError(LiveguardError, ValueError):
    """A resume answer that is not a valid decision, or an approval step that cannot run."""


class ApprovalClaimError(ApprovalError):
    """The decision could not be recorded (a database error): nothing was decided, the draft still waits."""


class ApprovalConflict(LiveguardError):
    """Another worker already decided this interrupt; this one sends nothing."""

    def __init__(self, thread_id: str, decided_by: str, action: str, decided_at: str) -> None:
        self.thread_id = thread_id
        self.decided_by = decided_by
        self.action = action
        self.decided_at = decided_at
        super().__init__(
            f"thread {thread_id}: this approval was already decided "
            f"({action} by {decided_by} at {decided_at})"
        )


class ApprovalState(TypedDict, total=False):
    """The keys the approval step writes; add them to your graph's state schema."""

    approvals: Annotated[list[dict[str, Any]], operator.add]
    approval: dict[str, Any]


def parse_decision(
    answer: Any, request: Mapping[str, Any], *, require_by: bool = False
) -> hitl.ReviewDecision:
    """The typed decision in a resume answer to the approval ``request``; raise :class:`ApprovalError`.

    ``answer`` is LangChain's ``{"decisions": [...]}`` (see :func:`liveguard.hitl.parse_resume`
    for every shape accepted); ``require_by``: the answer must name who decided (the approvals
    CLI always does). The error says where the answer is wrong, never its text.
    """
    parsed = hitl.parse_resume(answer, request, require_by=require_by)
    if isinstance(parsed, hitl.DecisionError):
        raise ApprovalError(str(parsed))
    return parsed


STRICT_RESUME_KEY: Final = "__pregel_strict_resume"
"""LangGraph's strict resume switch: a resume naming an interrupt that is not pending is refused."""


def pending_approval(snapshot: Any) -> tuple[str, dict[str, Any]] | None:
    """``(interrupt id, request)`` of the approval interrupt a thread's state snapshot waits on."""
    for item in getattr(snapshot, "interrupts", ()) or ():
        value = getattr(item, "value", None)
        if isinstance(value, Mapping) and value.get("kind") == KIND:
            interrupt_id = str(getattr(item, "id", "") or "")
            if interrupt_id:
                return interrupt_id, dict(value)
    return None


def pending_interrupt_id(snapshot: Any) -> str | None:
    """The id of the approval interrupt a thread's state snapshot waits on, else None."""
    found = pending_approval(snapshot)
    return found[0] if found is not None else None


def pinned(config: Any, interrupt_id: str, answer: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``Command(resume={interrupt_id: answer})`` and a strict-resume config for it.

    LangGraph refuses the resume (``UnknownInterruptError``, before anything is written) when
    that interrupt is no longer pending, so a decision never lands on another interrupt.
    """
    from langgraph.types import Command

    conf = dict((config or {}).get(_CONF) or {})
    conf[STRICT_RESUME_KEY] = True
    return Command(resume={interrupt_id: dict(answer)}), {**(config or {}), _CONF: conf}


def _not_waiting(config: Any) -> ApprovalError:
    thread = ((config or {}).get(_CONF) or {}).get("thread_id")
    return ApprovalError(f"thread {thread}: not waiting for approval")


def _checked(snapshot: Any, config: Any, answer: Any) -> tuple[str, dict[str, Any]]:
    found = pending_approval(snapshot)
    if found is None:
        raise _not_waiting(config)
    interrupt_id, request = found
    decision = parse_decision(answer, request)
    return interrupt_id, hitl.to_hitl_response(decision)


def resume_approval(graph: Any, config: Any, answer: Any) -> Any:
    """Resume a thread held by the approval step with a checked decision, pinned to its interrupt.

    ``answer`` is ``{"decisions": [{"type": "approve" | "edit" | "reject", ...}], "by": ...,
    "note": ...}``. Raises :class:`ApprovalError` (nothing resumed, nothing sent) when the
    thread is not waiting for an approval (also when another worker decided it between the
    check and the resume) or ``answer`` is not a valid decision for the pending request;
    returns what ``graph.invoke`` returns.
    """
    from langgraph.errors import UnknownInterruptError

    interrupt_id, response = _checked(graph.get_state(config), config, answer)
    command, strict = pinned(config, interrupt_id, response)
    try:
        return graph.invoke(command, strict)
    except UnknownInterruptError:
        raise _not_waiting(config) from None


async def aresume_approval(graph: Any, config: Any, answer: Any) -> Any:
    """Async :func:`resume_approval`."""
    from langgraph.errors import UnknownInterruptError

    interrupt_id, response = _checked(await graph.aget_state(config), config, answer)
    command, strict = pinned(config, interrupt_id, response)
    try:
        return await graph.ainvoke(command, strict)
    except UnknownInterruptError:
        raise _not_waiting(config) from None


def draft_digest(draft: Any) -> str:
    """``sha256:`` and the first 16 hex digits of the draft (text as UTF-8, else canonical JSON)."""
    data = draft if isinstance(draft, str) else json.dumps(draft, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def reasons_for(verdict: Verdict | None, cleared: bool, *, autoapprove: bool) -> list[str]:
    """Why a send was not auto-approved: codes only (empty when it was).

    ``autoapprove`` is the switch (``Settings.autoapprove``, read at the edge).
    """
    if cleared:
        return []
    from liveguard.gate import verdict_clears_autoapprove

    reasons: list[str] = []
    if not autoapprove:
        reasons.append("autoapprove_off")
    if verdict is None:
        return [*reasons, "unjudged:no_verdict"]
    if verdict_clears_autoapprove(verdict, enabled=True):
        return reasons  # only the switch held it
    specific = len(reasons)
    reasons += [f"hard:{code}" for code in verdict.hard_codes]
    # Missing evidence, as the verdict names it (its text: ``kind:detail``) when it does.
    missing = [MissingEvidence.parse(m) for m in verdict.missing]  # a model_copy may hold text
    for m in missing:
        named = f"unjudged:{m.detail}" if m.kind == JUDGES_SKIPPED else str(m)
        if named != "unjudged:hard_violation" and named not in reasons:
            reasons.append(named)
    if not missing:
        if verdict.judges_skipped and verdict.judges_skipped != "hard_violation":
            reasons.append(f"unjudged:{verdict.judges_skipped}")
        elif not verdict.judged and not verdict.hard_codes:
            reasons.append(f"unjudged:{verdict.reason}")
        failed = sorted({s.level for s in verdict.levels.values() if level_error(s.reason) is not None})
        reasons += [str(MissingEvidence(JUDGE_ERROR, level)) for level in failed]
        if verdict.judge_error and not failed:
            reasons.append(JUDGE_ERROR)
    if not verdict.passed and len(reasons) == specific:
        reasons.append(f"not_passed:{verdict.reason}")
    if len(reasons) == specific:
        # Cleared nothing, yet no reason above: name the verdict's reason and soft codes.
        soft = sorted({v.code for v in verdict.violations if v.severity == "soft"})
        reasons += [f"soft:{code}" for code in soft] or [f"not_cleared:{verdict.reason}"]
    return reasons


# -- the thread's trajectory, from its checkpoints ---------------------------------------------
class _HistoryError(Exception):
    pass


def _step_chunks(chain: Sequence[Any]) -> list[dict[str, Any]]:
    """``{node: update}`` chunks from a checkpoint chain (oldest first), one per finished task."""
    chunks: list[dict[str, Any]] = []
    for older, newer in itertools.pairwise(chain):
        seen_old = older.checkpoint.get("versions_seen", {})
        seen_new = newer.checkpoint.get("versions_seen", {})
        ran = sorted(n for n, v in seen_new.items() if not n.startswith("__") and seen_old.get(n) != v)
        tasks: dict[str, dict[str, Any]] = {}
        for task_id, channel, value in older.pending_writes or ():
            if channel.startswith(("__", "branch:")):
                continue
            tasks.setdefault(str(task_id), {})[channel] = value
        if not ran:
            continue
        if len(ran) == 1:
            updates: list[dict[str, Any] | None] = [*tasks.values()] or [None]
            chunks += [{ran[0]: update} for update in updates]
            continue
        ordered = [tasks[t] for t in sorted(tasks)]
        for index, node in enumerate(ran):
            chunks.append({node: ordered[index] if index < len(ordered) else None})
    return chunks


def _chain(tuples: Sequence[Any], target_id: str) -> list[Any]:
    by_id = {t.config[_CONF]["checkpoint_id"]: t for t in tuples}
    chain: list[Any] = []
    current = by_id.get(target_id)
    while current is not None:
        chain.append(current)
        parent = (current.parent_config or {}).get(_CONF, {}).get("checkpoint_id")
        current = by_id.get(parent) if parent else None
    chain.reverse()
    return chain


def _ancestors(config: Mapping[str, Any], ns: str) -> list[tuple[str, str]]:
    """``(namespace, checkpoint id)`` of every graph above the one the node runs in, root first."""
    conf = config.get(_CONF) or {}
    cmap = conf.get("checkpoint_map") or {}
    if not ns:
        return []
    parts = ns.split("|")
    out = []
    for depth in range(len(parts)):
        above = "|".join(parts[:depth])
        if above in cmap:
            out.append((above, str(cmap[above])))
    return out


def _where(config: Mapping[str, Any]) -> tuple[str, str, str, str]:
    conf = config.get(_CONF) or {}
    thread = conf.get("thread_id")
    task_id = conf.get(_TASK_ID_KEY)
    ns = str(conf.get("checkpoint_ns") or "")
    parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
    checkpoint_id = (conf.get("checkpoint_map") or {}).get(parent_ns)
    if thread is None or task_id is None or checkpoint_id is None or conf.get(_CHECKPOINTER_KEY) is None:
        raise ApprovalError(
            "approval step: the graph needs a checkpointer and a thread_id "
            "(compile(checkpointer=...), config={'configurable': {'thread_id': ...}})"
        )
    return str(thread), str(task_id), parent_ns, str(checkpoint_id)


def _node_of(config: Mapping[str, Any]) -> str | None:
    node = (config.get("metadata") or {}).get("langgraph_node")
    return node if isinstance(node, str) and node else None


def _thread_config(thread: str, ns: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    conf = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {_CONF: conf}


def _history(
    saver: Any, thread: str, ns: str, checkpoint_id: str, wait: float,
    *, ancestors: Sequence[tuple[str, str]] = (),
) -> tuple[Any, list[dict[str, Any]]]:
    """The target checkpoint and the chunks of the whole thread up to it.

    In a subgraph, the graphs above come first (root first, each up to the checkpoint the
    subgraph was called from), so the verdict covers the whole thread, not the subgraph alone.
    """
    chunks: list[dict[str, Any]] = []
    for above_ns, above_id in ancestors:
        chunks += _history(saver, thread, above_ns, above_id, wait)[1]
    target, own = _history_of(saver, thread, ns, checkpoint_id, wait)
    return target, chunks + own


def _history_of(
    saver: Any, thread: str, ns: str, checkpoint_id: str, wait: float
) -> tuple[Any, list[dict[str, Any]]]:
    deadline = time.monotonic() + wait
    target = saver.get_tuple(_thread_config(thread, ns, checkpoint_id))
    while target is None and time.monotonic() < deadline:
        time.sleep(0.005)
        target = saver.get_tuple(_thread_config(thread, ns, checkpoint_id))
    if target is None:
        raise _HistoryError("history_unavailable")
    chain = _chain(list(saver.list(_thread_config(thread, ns))), checkpoint_id)
    return target, _step_chunks(chain)


async def _ahistory(
    saver: Any, thread: str, ns: str, checkpoint_id: str, wait: float,
    *, ancestors: Sequence[tuple[str, str]] = (),
) -> tuple[Any, list[dict[str, Any]]]:
    chunks: list[dict[str, Any]] = []
    for above_ns, above_id in ancestors:
        chunks += (await _ahistory(saver, thread, above_ns, above_id, wait))[1]
    target, own = await _ahistory_of(saver, thread, ns, checkpoint_id, wait)
    return target, chunks + own


async def _ahistory_of(
    saver: Any, thread: str, ns: str, checkpoint_id: str, wait: float
) -> tuple[Any, list[dict[str, Any]]]:
    deadline = time.monotonic() + wait
    target = await saver.aget_tuple(_thread_config(thread, ns, checkpoint_id))
    while target is None and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
        target = await saver.aget_tuple(_thread_config(thread, ns, checkpoint_id))
    if target is None:
        raise _HistoryError("history_unavailable")
    tuples = [t async for t in saver.alist(_thread_config(thread, ns))]
    return target, _step_chunks(_chain(tuples, checkpoint_id))


def _steps_of(chunks: Sequence[Mapping[str, Any]]) -> list[Step]:
    stepper = UpdateStepper()
    steps: list[Step] = []
    for chunk in chunks:
        steps += stepper.feed(chunk)
    return steps


def read_thread(
    saver: Any, thread_id: str, *, checkpoint_id: str | None = None, graph_name: str | None = None
) -> Trajectory:
    """The steps of a thread from its checkpointer alone (no compiled graph needed).

    Follows the checkpoint chain back from ``checkpoint_id`` (default: the thread's latest
    root checkpoint) and reads every finished task, as the approval step does. Raises
    :class:`ApprovalError` for a thread with no checkpoint.
    """
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    target = saver.get_tuple({_CONF: conf})
    if target is None:
        raise ApprovalError(f"thread {thread_id}: no checkpoint")
    chain = _chain(list(saver.list(_thread_config(thread_id, ""))), target.config[_CONF]["checkpoint_id"])
    return Trajectory(run_id=thread_id, graph=graph_name, steps=_steps_of(_step_chunks(chain)),
                      metadata={"source": "checkpoint"})


def _stored_request(target: Any, task_id: str) -> tuple[dict[str, Any], str | None] | None:
    """The request this task interrupted with before (a resume re-runs the node), and its id."""
    for write_task, channel, value in target.pending_writes or ():
        if write_task != task_id or channel != _INTERRUPT:
            continue
        for item in value if isinstance(value, list | tuple) else [value]:
            request = getattr(item, "value", None)
            if isinstance(request, Mapping) and request.get("kind") == KIND:
                held = getattr(item, "id", None)
                return ({k: v for k, v in request.items() if k != "error"},
                        None if held is None else str(held))
    return None


# -- the node ----------------------------------------------------------------------------------
class _Gate:
    def __init__(
        self,
        *,
        send: str,
        revise: str | None,
        draft_key: str,
        audit_key: str,
        verdict_key: str,
        graph_name: str | None,
        allow_set: Any,
        policy: Any,
        settings: Settings | None,
        notifiers: Sequence[Notifier],
        decide: Callable[[dict[str, Any]], Any] | None,
        clock: Callable[[], datetime],
        history_wait: float,
    ) -> None:
        self.history_wait = history_wait
        self.send = send
        self.revise = revise
        self.draft_key = draft_key
        self.audit_key = audit_key
        self.verdict_key = verdict_key
        self.graph_name = graph_name
        self.allow_set = allow_set
        self.policy = policy
        self.settings = settings
        self.notifiers = tuple(notifiers)
        self.decide = decide
        self.clock = clock

    # -- settings, resolved once per visit (the edge), the same for the sync and async bodies --
    def _settings(self) -> Settings:
        from liveguard.settings import Settings

        return self.settings if self.settings is not None else Settings.from_env()

    def _policy(self, settings: Settings) -> Any:
        """The given policy, else the settings' (environment overrides on the defaults)."""
        from liveguard.policy import Policy

        return self.policy if self.policy is not None else settings.policy(Policy())

    # -- evaluation ------------------------------------------------------------------------
    def _trajectory(self, thread: str, chunks: list[dict[str, Any]], node: str | None) -> Trajectory:
        steps = _steps_of(chunks)
        if node:
            # This visit itself (contentless: counted, never compared): the path so far ends
            # here, not on the previous node, and revisit limits of the approval node apply.
            steps.append(Step(node=node))
        return Trajectory(run_id=thread, graph=self.graph_name, steps=steps, status="interrupted",
                          metadata={"source": "checkpoint"})

    def _evaluate_sync(self, trajectory: Trajectory, settings: Settings) -> Verdict:
        from liveguard.eval_graph import evaluate_trajectory

        policy = self._policy(settings)

        def run() -> Verdict:
            return evaluate_trajectory(trajectory, allow_set=self.allow_set, policy=policy, settings=settings)

        # A fresh thread: its own event loop, and none of the caller's context (config, callbacks).
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="liveguard-eval") as pool:
            return pool.submit(contextvars.Context().run, run).result()

    async def _evaluate_async(self, trajectory: Trajectory, settings: Settings) -> Verdict:
        from liveguard.eval_graph import aevaluate_trajectory, build_eval_graph
        from liveguard.judges import JudgeClient

        policy = self._policy(settings)

        async def run() -> Verdict:
            client = JudgeClient(settings.judge_config())
            try:
                return await aevaluate_trajectory(
                    trajectory, allow_set=self.allow_set, policy=policy, settings=settings,
                    graph=build_eval_graph(client=client, settings=settings),
                )
            finally:
                await client.aclose()

        return await asyncio.create_task(run(), context=contextvars.Context())

    def _payload(
        self, thread: str, draft: Any, verdict: Verdict | None, error: str | None, settings: Settings
    ) -> dict[str, Any]:
        """The interrupt value (:func:`liveguard.hitl.approval_request`), plus ``_cleared``."""
        from liveguard.gate import verdict_clears_autoapprove
        from liveguard.scoring import RunRow

        try:
            switch = settings.autoapprove
            cleared = verdict_clears_autoapprove(verdict, enabled=switch)
            reasons = reasons_for(verdict, cleared, autoapprove=switch)
        except Exception as exc:  # a bad setting: the check cannot clear anything
            log.warning("approval thread=%s autoapprove_check_error=%s", thread, type(exc).__name__)
            cleared, reasons = False, ["autoapprove_check_error"]
        if error is not None:
            reasons = [r for r in reasons if r != "unjudged:no_verdict"] + [f"unjudged:{error}"]
        row = RunRow(source="checkpoint", run_id=thread, graph=self.graph_name, verdict=verdict,
                     error=None if verdict is not None else f"unjudged:{error or 'no_verdict'}").as_json()
        request: dict[str, Any] = dict(hitl.approval_request(draft, reasons=reasons, verdict=row))
        request["_cleared"] = cleared
        return request

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
        goto = self.send if decision.type in _SENDS else (self.revise or END)
        log.info(
            "approval thread=%s action=%s actor=%s attributed=%d codes=%s reasons=%s draft=%s goto=%s",
            thread, decision.type, actor, decision.by is not None, ",".join(record["codes"]) or "-",
            ",".join(record["reasons"]) or "-", record.get("edited_digest", record["draft_digest"]), goto,
        )
        return Command(update=update, goto=goto)

    def _ask(self, payload: dict[str, Any], visit: _Visit) -> hitl.ReviewDecision:
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
        self, visit: _Visit, answer: Any, request: Mapping[str, Any], outcome: dict[str, Any]
    ) -> Any:
        """Runs inside ``interrupt()`` before LangGraph stores the answer: a failed claim stores nothing.

        Only a valid decision (:func:`liveguard.hitl.parse_resume`) is claimed; a malformed
        answer is stored and answered with a new interrupt, and decides nothing.
        """
        from liveguard.checkpoints import claim

        decision = hitl.parse_resume(answer, request)
        if isinstance(decision, hitl.DecisionError):
            return answer
        if (visit.thread, visit.claim_key) in _WON:
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
        if decision.type in _SENDS:  # the decisions approval_send sends on
            _WON.add((visit.thread, visit.claim_key))
        return answer

    def _not_claimed(self, visit: _Visit, outcome: Mapping[str, Any]) -> Exception:
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

    def _forget_answer(self, visit: _Visit) -> None:
        """Overwrite an unpinned resume answer kept on the checkpoint, so that no later run replays it."""
        if visit.saver is None or visit.root_checkpoint is None:
            return
        try:
            visit.saver.put_writes(_thread_config(visit.thread, "", visit.root_checkpoint),
                                   [("__resume__", None)], _NULL_TASK_ID)
        except Exception as exc:  # the database is down: a pinned resume (CLI, resume_approval) stores none
            log.warning("approval thread=%s forget_answer_error=%s", visit.thread, type(exc).__name__)

    def _held(self, visit: _Visit, exc: Any) -> None:
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

    def _notify(self, visit: _Visit, item: Any) -> None:
        """Call the notifiers, unless this interrupt was raised (and stored) before: a replay."""
        from liveguard.notify import Coords, notify_all

        if not self.notifiers or item is None:
            return
        held = str(getattr(item, "id", ""))
        if visit.stored_id is not None and held == visit.stored_id:
            return  # the same hold, replayed (a run without an answer): the person was woken already
        value = item.value if isinstance(item.value, Mapping) else {}
        notify_all(self.notifiers, value, Coords(thread_id=visit.thread, checkpoint_ns=visit.node_ns,
                                                 interrupt_id=held or None))

    # -- entry points ----------------------------------------------------------------------
    def _begin(self, config: Any) -> _Visit:
        thread, task_id, ns, checkpoint_id = self._where_or_scripted(config)
        conf = config.get(_CONF) or {}
        visit = _Visit(thread, task_id, ns, checkpoint_id, saver=conf.get(_CHECKPOINTER_KEY),
                       node=_node_of(config))
        visit.node_ns = str(conf.get("checkpoint_ns") or "")
        visit.ancestors = _ancestors(config, ns) if checkpoint_id else []
        visit.root_checkpoint = (visit.ancestors[0][1] if visit.ancestors else checkpoint_id) or None
        return visit

    def _reuse(self, visit: _Visit, target: Any) -> None:
        found = _stored_request(target, visit.task_id)
        if found is not None:
            visit.payload, visit.stored_id = found

    def _read_failed(self, visit: _Visit, exc: Exception) -> None:
        if isinstance(exc, _HistoryError):
            visit.error = str(exc)
        else:  # a reader failure is missing evidence, never a pass
            log.warning("approval thread=%s history_error=%s", visit.thread, type(exc).__name__)
            visit.error = "history_error"

    def _eval_failed(self, visit: _Visit, exc: Exception) -> None:
        """The evaluation itself failed: missing evidence, so a person decides; the run goes on."""
        log.warning("approval thread=%s eval_error=%s", visit.thread, type(exc).__name__)
        visit.error = "eval_error"

    def _auto(self, visit: _Visit, draft: Any, verdict: Verdict | None, settings: Settings) -> Any:
        """Build the payload; return the auto-approve Command when the verdict clears, else None."""
        from liveguard.checkpoints import claim

        visit.payload = self._payload(visit.thread, draft, verdict, visit.error, settings)
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
                visit.payload = self._payload(visit.thread, draft, None, visit.error, settings)
                visit.payload.pop("_cleared")
                return None
            if not won.won:
                raise self._refused(visit, won)
            _WON.add((visit.thread, key))
        return self._command(visit.thread, visit.payload, "auto", decision, draft, claim_key=key)

    def _refused(self, visit: _Visit, won: Any) -> ApprovalConflict:
        log.warning("approval thread=%s conflict decided_by_other=1", visit.thread)
        return ApprovalConflict(visit.thread, won.decided_by, won.action, won.decided_at)

    def _person(self, visit: _Visit, decision: hitl.ReviewDecision, draft: Any) -> Any:
        assert visit.payload is not None
        key = visit.claim_key if self.decide is None else None
        return self._command(visit.thread, visit.payload, "person", decision, draft, claim_key=key)

    def __call__(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        visit = self._begin(config)
        draft = state.get(self.draft_key)
        if visit.readable:
            try:
                target, visit.chunks = _history(
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
                    verdict = self._evaluate_sync(visit.trajectory(self), settings)
                except Exception as exc:
                    self._eval_failed(visit, exc)
            auto = self._auto(visit, draft, verdict, settings)
            if auto is not None:
                return auto
        assert visit.payload is not None
        return self._person(visit, self._ask(visit.payload, visit), draft)

    async def acall(self, state: Mapping[str, Any], config: RunnableConfig) -> Any:
        visit = self._begin(config)
        draft = state.get(self.draft_key)
        if visit.readable:
            try:
                target, visit.chunks = await _ahistory(
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
                    verdict = await self._evaluate_async(visit.trajectory(self), settings)
                except Exception as exc:
                    self._eval_failed(visit, exc)
            auto = await asyncio.to_thread(self._auto, visit, draft, verdict, settings)
            if auto is not None:
                return auto
        assert visit.payload is not None
        if self.decide is None:
            # In a worker thread, so that the claim (a blocking call inside interrupt()) can
            # run an async saver's query on this event loop, and the notifiers run off it.
            decision = await asyncio.to_thread(self._ask, visit.payload, visit)
        else:
            decision = self._ask(visit.payload, visit)
        return self._person(visit, decision, draft)

    def _where_or_scripted(self, config: Any) -> tuple[str, str, str, str]:
        """Where the node runs. With a scripted ``decide``, a graph without a checkpointer may run it."""
        try:
            return _where(config)
        except ApprovalError:
            if self.decide is None:
                raise
            conf = (config or {}).get(_CONF) or {}
            return str(conf.get("thread_id") or "<no thread>"), str(conf.get(_TASK_ID_KEY) or ""), "", ""


class _Visit:
    """One run of the approval node: where it is, what it read, what it will show."""

    def __init__(
        self, thread: str, task_id: str, ns: str, checkpoint_id: str, *, saver: Any, node: str | None
    ) -> None:
        self.thread = thread
        self.task_id = task_id
        self.ns = ns
        self.checkpoint_id = checkpoint_id
        self.saver = saver
        self.node = node
        self.chunks: list[dict[str, Any]] | None = None
        self.payload: dict[str, Any] | None = None
        self.error: str | None = None if saver is not None and checkpoint_id else "no_history"
        self.ancestors: list[tuple[str, str]] = []
        self.root_checkpoint: str | None = None
        self.node_ns = ""
        self.stored_id: str | None = None
        """The id of the interrupt this task raised before (read back from the checkpoint)."""

    @property
    def readable(self) -> bool:
        return self.error is None

    @property
    def claim_key(self) -> str:
        """The interrupted task's id: the same for every resumer of this interrupt."""
        return f"task:{self.task_id}"

    def trajectory(self, gate: _Gate) -> Trajectory:
        return gate._trajectory(self.thread, self.chunks or [], self.node)


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
                 settings=settings, notifiers=listed, decide=decide,
                 clock=clock or (lambda: datetime.now(UTC)), history_wait=history_wait)
    return RunnableCallable(gate, gate.acall, name=name, trace=False)


# -- the send, covered by the decision's claim -------------------------------------------------
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
        conf = config.get(_CONF) or {}
        thread, saver, key = str(conf.get("thread_id")), conf.get(_CHECKPOINTER_KEY), str(record["claim"])
        if saver is None:
            return None
        if (thread, key) not in _WON:
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
                _WON.discard((thread, key))
            else:  # the send raised: this process may try it again (a retry policy, a new resume)
                release(saver, thread, send_key)
        except Exception as exc:  # the send happened (or not) all the same; the row says 'sending'
            log.warning("approval thread=%s send_record_error=%s", thread, type(exc).__name__)

    def _args(self, state: Any, config: Any) -> tuple[Any, ...]:
        return (state, config) if self.with_config else (state,)

    def __call__(self, state: Any, config: RunnableConfig) -> Any:
        held = self._take(state, config)
        try:
            out = self.fn(*self._args(state, config))
        except BaseException:
            self._done(held, ok=False)
            raise
        self._done(held, ok=True)
        return out

    async def acall(self, state: Any, config: RunnableConfig) -> Any:
        held = await asyncio.to_thread(self._take, state, config)
        try:
            out = self.fn(*self._args(state, config))
            if inspect.isawaitable(out):
                out = await out
        except BaseException:
            await asyncio.to_thread(self._done, held, False)
            raise
        await asyncio.to_thread(self._done, held, True)
        return out


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
