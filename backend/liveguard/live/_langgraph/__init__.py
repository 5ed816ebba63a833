"""A live guard for any compiled LangGraph graph: ``guard(graph)``.

::

    from liveguard import NoProgressError
    from liveguard.integrations.langgraph import guard

    app = guard(builder.compile(checkpointer=saver))
    try:
        state = app.invoke(inputs, {"configurable": {"thread_id": "t1"}})
    except NoProgressError as exc:
        print(exc.violation.code, exc.violation.step)   # e.g. no_progress_stall 5

How it works
    ``guard(graph)`` returns the graph itself, guarded: an instance of a subclass of both
    :class:`GuardedGraph` and the graph's own class (``CompiledStateGraph``, ``Pregel``)
    whose ``stream`` / ``astream`` are guarded. Every other execution method of a Pregel
    (``invoke``, ``ainvoke``, ``batch``, ``abatch``, ``stream_events``,
    ``astream_events``, ...) runs through them, ``with_config`` / ``copy`` keep the guard,
    and the guarded graph can be a node of another graph or the graph of
    ``langgraph.json``. The guard streams the graph with ``"updates"`` added to whatever
    ``stream_mode`` the caller asked for; each root update goes through
    :class:`~liveguard.readers.stream.UpdateStepper` into the thread's
    :class:`~liveguard.core._monitor.Monitor`. When the graph has subgraphs, a callback handler
    added to the run's config sees each subgraph node's output in the node's own thread
    as the node ends, and feeds it to the same Monitor as a ``parent:child`` node (as the
    readers name them), so a loop inside a subgraph is stopped at the violating step. The
    caller gets exactly the chunks, in exactly the shape, the unguarded graph would yield.
    When nothing fires, results equal the unguarded graph's.

The thread's liveness (the record schema of :mod:`liveguard.live.thread_guard`)
    With a checkpointer and a ``thread_id``, the guard keeps two things in the graph's
    checkpointer under ``checkpoint_ns="__liveguard__"``. The **windows** (the Monitor's
    snapshot) are saved with every checkpoint the graph writes, under that checkpoint's
    id, and as each step of a superstep comes in (so a process killed with SIGKILL keeps
    the count). A call starts from the windows saved with the checkpoint it resumes from
    (the ``checkpoint_id`` it names, else the thread's latest; a fork made by
    ``update_state`` starts from its parent's): a replay or a fork sees its own history,
    and only that. The **stop** is one row per thread, written only when the guard stops
    the thread (or a person clears it), never by a call that merely ended, so an
    overlapping call cannot erase it. A later request on a thread with history is fed to
    the Monitor as the user's turn (``Step(node="__input__")``). A resumed call (input
    ``None`` or a ``Command``) first reads the thread's last messages so the tool results
    it streams get their calls' arguments. Without a checkpointer each call is its own run
    and nothing is saved.

Turns and parallel work
    A pushed task (a ``Send``, a Functional API ``@task``) is judged with its input (the
    guard's watcher reads it as the task starts), so identical outputs of different inputs
    are not a repeat, and the same input giving the same output is. A ``@task`` is judged in its own
    thread as it ends, so a sync ``@entrypoint`` loop stops at the violating task.

At a violation (``exit_behavior``)
    ``"error"`` (default): :class:`~liveguard.errors.NoProgressError` from inside the
    stream loop (from inside the subgraph's node for a subgraph step); the guard also
    requests a drain on the run's ``RunControl``, so with the other behaviours a subgraph
    stops before its next step. ``"end"``:
    the stream ends (``stream_mode="updates"`` gets a last ``{"__liveguard__": {...}}``
    chunk). ``"continue"``: no node can be "not executed", so violations are logged, the
    windows start afresh after each (a loop that goes on fires again), and the run ends
    at the ``ceiling``-th one. ``"interrupt"``: a person decides. The run stops with an
    ``__interrupt__`` whose value is a LangChain ``HITLRequest``
    (:func:`liveguard.live.hitl.liveness_request`, ``edit_key="update"``), and the hold is
    written as a pending interrupt of the thread's latest checkpoint, so
    ``get_state(config).interrupts`` lists it. Resume with
    ``Command(resume={"decisions": [{"type": "approve"}]})`` (stop and windows cleared,
    the run goes on), an ``edit`` whose ``edited_action.args.update`` is applied as a state
    update before the run goes on, or a ``reject`` (the thread stays stopped, the hold is
    dropped); ``by`` / ``note`` go into the record's audit. A malformed answer re-asks
    with ``error``; ``notifiers`` are called once per hold. ``"warn"``: a WARNING on the
    ``liveguard.guard`` logger (code, step, node, count, digest prefix; never text); the
    run goes on. ``on_violation`` is
    the deprecated name (``"raise"`` = ``"error"``).

A stopped thread stays stopped
    Every later call on a thread whose saved stop is hard answers at once, without
    running a node: ``"error"`` raises the same ``NoProgressError``; ``"end"`` returns
    nothing; an ``"interrupt"`` hold shows its pending interrupt again until a person
    decides. :func:`liveguard.clear` (or
    ``liveguard threads clear``) lifts it.

``severity``
    ``"hard"`` (default) acts on hard violations only. ``"soft"`` acts on every violation,
    including end-of-run findings (``dead_end`` with an allow-set), which are checked
    after the graph's last chunk (never after an interrupt).

Default policy (:func:`default_policy`)
    A ``create_agent`` / ``create_react_agent`` graph is recognised by its nodes (exactly
    ``model``/``agent`` and ``tools``, plus ``<middleware>.before_model`` style hook nodes
    or ``pre_model_hook`` / ``post_model_hook``) and gets
    ``Settings.from_env().policy(Policy.tool_agent(...))`` with those nodes exempt from revisit
    counting. Any other graph gets the workflow preset without a revisit ceiling: a node
    name coming back is not a loop by itself. An allow-set's limits,
    ``AGENT_EVAL_MAX_REVISITS`` or ``policy=`` set one.

The guard's own failures
    Any exception inside the stepper, the Monitor or the thread record (a
    ``FingerprintError`` on a payload of an unsupported type, a bug, an unreadable
    record) is logged as ``code=guard_error`` with the exception type and code location,
    never its message, and the guard stands down for the rest of that call; the graph
    runs on. A stop record that is damaged (a malformed ``stop``, a list, ``None``) is a
    logged ``guard_error`` that keeps the thread stopped until it is cleared.

Limits
    ``output_keys``
    narrows the updates the guard sees as it narrows the caller's. A run stopped by
    ``"error"`` keeps the writes of the steps that ran; ``get_state(config).next`` names
    the node that would have run next.

LangGraph is imported lazily (the wrapped graph brings its own), so
``import liveguard.integrations.langgraph`` stays framework-free.
"""

from __future__ import annotations

from liveguard.live._langgraph._graph import GuardedGraph, guard
from liveguard.live._langgraph._policy import default_policy
from liveguard.live._langgraph._record import THREAD_KEY, THREAD_NS
from liveguard.live._langgraph._run_guard import RunGuard
from liveguard.live.thread_guard import EXIT_BEHAVIORS, GUARD_ERROR, log_guard_failure, log_violation

__all__ = [
    "EXIT_BEHAVIORS",
    "GUARD_ERROR",
    "THREAD_KEY",
    "THREAD_NS",
    "GuardedGraph",
    "RunGuard",
    "default_policy",
    "guard",
    "log_guard_failure",
    "log_violation",
]
