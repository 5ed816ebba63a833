"""Draft-first approval: evaluate the thread so far, then auto-approve or ``interrupt()`` for a person.

::

    from liveguard.live.approval import approval_gate

    builder.add_node(
        "approve_send",
        approval_gate(send="send_touch", revise="compose_touch", draft_key="draft"),
        destinations=("send_touch", "compose_touch", END),
    )

The node (sync and async callers alike) does, in order:

1. **Trajectory.** It reads the thread's own checkpoint history through the graph's
   checkpointer (:func:`liveguard.readers.checkpoints.saver_history`: every finished task
   of every earlier checkpoint of this thread, oldest first, read like a
   ``stream_mode="updates"`` chunk by the same :class:`~liveguard.readers.stream.UpdateStepper`
   the live guards use). It waits (bounded,
   :data:`HISTORY_WAIT`) for the checkpoint its own step started from, because LangGraph
   writes checkpoints in the background while the next step runs; when it never appears
   (``durability="exit"`` writes nothing during the run) the verdict is missing and the draft
   is held for a person (``unjudged:history_unavailable``). Why not
   ``liveguard.readers.checkpoints.thread_to_trajectory``: that reader needs the compiled graph
   (``get_state_history``), and a node never sees its own compiled graph, only the
   checkpointer in its config. Why not the state: the state holds the latest values,
   not each step's update, so a repeated draft would be invisible. A superstep that ran
   several nodes in parallel is attributed by node name order (its content is exact).
   :func:`read_thread` is the same reader for a whole thread; a test checks that it gives
   the graph-based reader's steps on every campaign scenario.
2. **Verdict.** The trajectory goes through the eval graph
   (:func:`~liveguard.evaluate.eval_graph.build_eval_graph`, compiled with
   ``checkpointer=False``), run in a fresh context (its own thread or task),
   so nothing of it is written into the caller's thread and the caller's callbacks and
   config do not reach it. Settings (judges, policy, auto-approve switch) are resolved once
   per visit, from ``settings=`` or else the environment (``AGENT_EVAL_*``), and the sync
   and async bodies use the same values. If the evaluation itself fails, the draft is held
   (``unjudged:eval_error``) and the run goes on.
3. **Decision.** If :func:`~liveguard.evaluate.gate.verdict_clears_autoapprove` holds, the node goes to
   ``send``. Otherwise it calls ``interrupt(request)`` with a LangChain ``HITLRequest``
   (:func:`liveguard.live.hitl.approval_request`): one ``send_draft`` action request with the
   draft in ``args``, a ``description`` in words, a ``review_config`` allowing
   ``approve``/``edit``/``reject``, and liveguard's evidence in extra keys::

       {"action_requests": [{"name": "send_draft", "args": {"draft": <the draft>},
                             "description": "liveguard holds this draft for a person ..."}],
        "review_configs": [{"action_name": "send_draft",
                            "allowed_decisions": ["approve", "edit", "reject"]}],
        "kind": "liveguard.approval", "codes": [...], "edit_key": "draft",
        "reasons": ["autoapprove_off", "hard:content_cycle", "unjudged:no_api_key", ...],
        "verdict": <a `liveguard score --format json` row>, "interrupt_id": <its id>,
        "digest": <sha256 of the draft and recipient>, "recipient": <state[recipient_key]>}

   A decision is bound to ``digest``: only that draft (or the edited one) to that recipient is
   sent. A question asked again after the draft or recipient changed (an ``update_state``, a
   fork, a client's ``goto``) carries ``"pinned_only": true`` and takes only an answer pinned to
   its interrupt id; a change on the held question itself voids it (``action: "void"``) and the
   step asks again (``docs/approval.md``, "Only what was shown is sent").

   When the thread is resumed, the verdict is **not** recomputed: the request stored with
   the interrupt (in the checkpoint's pending writes) is reused, so the person decides
   on what they saw and a resume costs no judge call. ``notifiers`` (see
   :mod:`liveguard.live.notify`) are called once per hold, when the interrupt is raised for the
   first time (not when a run replays it); a failing notifier is logged and changes nothing.
4. **Resume** with LangChain's ``HITLResponse``, ``Command(resume={"decisions": [{"type":
   "approve"}], "by": "ann", "note": "..."})``: approve goes to ``send``; ``{"type": "edit",
   "edited_action": {"name": "send_draft", "args": {"draft": "..."}}}`` replaces the draft and
   goes to ``send``; ``{"type": "reject", "message": "..."}`` goes to ``revise`` (or END).
   ``by`` and ``note`` (optional, beside ``decisions`` or inside the decision) go into the
   audit record; an answer without ``by`` (a review UI that sends none) is recorded with
   ``by: None`` (unattributed). The answer is parsed by :func:`liveguard.live.hitl.parse_resume`;
   a malformed one (``respond``, an unknown type or key, a wrong type, an edit without a
   draft) is logged and answered with a new ``interrupt()`` whose value adds ``"error"``
   (:func:`liveguard.live.hitl.with_error`): the thread stays interrupted and nothing is sent.
   :func:`resume_approval` / :func:`aresume_approval` check the answer against the pending
   request and that the thread waits for an approval *before* resuming, and raise
   :class:`ApprovalError` otherwise (the approvals CLI does the same).
5. **Exactly once** (the precise guarantee: ``docs/approval.md``). A person's decision is
   claimed (:func:`liveguard.live.checkpoints.claim`: one row per interrupted task in the
   checkpointer's own database) inside ``interrupt()``'s validation of the resume answer,
   before LangGraph stores the answer. Of two workers resuming the same interrupt, one wins;
   the other raises :class:`ApprovalConflict` naming the winner, and its answer is not kept.
   A claim the database refuses raises :class:`ApprovalClaimError`: nothing is decided, the
   answer is discarded (an unpinned one kept on the checkpoint is overwritten), the interrupt
   waits. The send itself is covered by the same claim: :func:`approval_send` wraps the send
   node, which sends only in the process that won and records ``sending`` / ``sent`` around
   it, so a resumer that loads the thread after the winner's approval never sends; it sends
   only on a grant of this process (never on what the state says), for the granted digest,
   and raises :class:`SendRefused` for anything else (a client's ``goto``, a changed draft). The
   step creates the tables it needs itself (any SQLite or PostgreSQL saver, however
   opened), and keeps the pending-approval index that ``liveguard approvals list`` reads:
   a row written right before the interrupt is stored, deleted by the claim that decides it.
6. **Audit.** Every decision appends a record to ``state[audit_key]`` (a list channel with
   an ``operator.add`` reducer: see :class:`ApprovalState`): ``actor`` (``auto`` or
   ``person``), ``by``, ``at``, ``note``, ``codes`` and ``reasons`` at that moment, the
   draft's digest (and the edited draft's), never the draft text. ``state[verdict_key]``
   holds the verdict row. Logs (``liveguard.live.approval``) carry codes, counts, digests and
   thread ids only.

The package, one module per idea (import the names from ``liveguard.live.approval``):
``_common`` (the interrupt kind, config keys, the claims this process won, the errors),
``_decision`` (parsing a resume answer, the pending approval, :func:`resume_approval`),
``_reasons`` (:func:`reasons_for`), ``_verdict`` (the thread's trajectory, its verdict, the
request a person sees), ``_visit`` (where one run of the node runs, what it read), ``_node``
(:func:`approval_gate`: auto-approval, the interrupt and its claim, the audit), ``_send``
(:func:`approval_send`). The thread's history is read by
:mod:`liveguard.readers.checkpoints`. Each sync/async pair (the node, the send,
:func:`resume_approval`) is one generator body driven by :mod:`liveguard.core._twin`.
"""

from liveguard.errors import ApprovalClaimError, ApprovalConflict, ApprovalError, SendRefused
from liveguard.live.approval._common import KIND, UNATTRIBUTED
from liveguard.live.approval._decision import (
    STRICT_RESUME_KEY as STRICT_RESUME_KEY,
)
from liveguard.live.approval._decision import (
    aresume_approval,
    parse_decision,
    pending_approval,
    pending_interrupt_id,
    resume_approval,
)
from liveguard.live.approval._decision import (
    pinned as pinned,
)
from liveguard.live.approval._node import HISTORY_WAIT as HISTORY_WAIT
from liveguard.live.approval._node import ApprovalState, approval_gate, draft_digest, read_thread
from liveguard.live.approval._reasons import reasons_for
from liveguard.live.approval._send import approval_send

__all__ = [
    "KIND",
    "UNATTRIBUTED",
    "ApprovalClaimError",
    "ApprovalConflict",
    "ApprovalError",
    "ApprovalState",
    "SendRefused",
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
