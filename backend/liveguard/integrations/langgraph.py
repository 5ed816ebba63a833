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
    :class:`~liveguard.monitor.Monitor`. When the graph has subgraphs, a callback handler
    added to the run's config sees each subgraph node's output in the node's own thread
    as the node ends, and feeds it to the same Monitor as a ``parent:child`` node (as the
    readers name them), so a loop inside a subgraph is stopped at the violating step. The
    caller gets exactly the chunks, in exactly the shape, the unguarded graph would yield.
    When nothing fires, results equal the unguarded graph's.

The thread's liveness (the record schema of :mod:`liveguard.thread_guard`)
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
    The guard streams ``"tasks"`` too: a pushed task (a ``Send``, a Functional API
    ``@task``) is judged with its input, so identical outputs of different inputs are not a
    repeat, and the same input giving the same output is. A ``@task`` is judged in its own
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
    (:func:`liveguard.hitl.liveness_request`, ``edit_key="update"``), and the hold is
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

import functools
import re
import threading
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final

from liveguard.errors import LivenessError, NoProgressError
from liveguard.fingerprint import fingerprint
from liveguard.hitl import DecisionError, Edit, with_error
from liveguard.messages import tool_calls
from liveguard.model import Step, Violation
from liveguard.monitor import Monitor
from liveguard.policy import Policy
from liveguard.readers.stream import UpdateStepper
from liveguard.settings import Settings
from liveguard.thread_guard import (
    EXIT_BEHAVIORS,
    GUARD_ERROR,
    Decider,
    ExitBehavior,
    SeverityFloor,
    audit_entry,
    decide_hold,
    hold_request,
    input_step,
    log,
    log_guard_failure,
    log_violation,
    read_audit,
    read_hold,
    read_stop,
    read_windows,
    stop_value,
    windows_value,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from liveguard.allowset import AllowSet
    from liveguard.hitl import HoldRequest
    from liveguard.notify import Notifier

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

_ALIASES: Final = {"raise": "error", "end": "end", "warn": "warn"}

THREAD_NS: Final = "__liveguard__"
"""Checkpoint namespace of guard()'s per-thread liveness record."""
THREAD_KEY: Final = "liveguard"
"""Channel name of the record inside that checkpoint."""
_RECORD_ID: Final = "00000000-0000-0000-0000-000000000000"
_CHECKPOINTER_KEY: Final = "__pregel_checkpointer"
_RUNTIME_KEY: Final = "__pregel_runtime"
_LIVEGUARD: Final = "__liveguard__"

_INTERRUPT: Final = "__interrupt__"
_SKIP: Any = object()
_HOOK_NODE = re.compile(r"\.(?:before|after)_(?:agent|model)$")
_REACT_HOOKS: Final = frozenset({"pre_model_hook", "post_model_hook"})
_AGENT_CORES: Final = (frozenset({"model", "tools"}), frozenset({"agent", "tools"}))


# -- one run's Monitor, shared by both integrations ---------------------------------------------
class RunGuard:
    """One run's Monitor, with the live guards' two promises built in.

    * ``check(produce)`` observes the steps ``produce()`` returns and gives back the first
      violation the guard must act on (``None`` in ``warn`` mode, which logs instead).
    * Any exception from ``produce`` or the Monitor, other than a
      :class:`~liveguard.errors.LivenessError`, disables this guard for the rest of the
      run and is logged by code and exception type only: the guarded agent runs on.

    Thread-safe (tool calls of one agent turn may run in parallel threads).
    """

    __slots__ = ("_allow_set", "_lock", "_monitor", "_policy", "decider", "disabled")

    @property
    def monitor(self) -> Monitor | None:
        """The Monitor (None before the first step)."""
        return self._monitor

    def __init__(
        self,
        policy: Policy,
        allow_set: AllowSet | None = None,
        *,
        severity: SeverityFloor = "hard",
        warn: bool = False,
        monitor: Monitor | None = None,
        decider: Decider | None = None,
    ) -> None:
        self._policy = policy
        self._allow_set = allow_set
        self.decider = decider or Decider("warn" if warn else "error", severity)
        self._monitor: Monitor | None = monitor
        self._lock = threading.Lock()
        self.disabled = False

    @property
    def steps_seen(self) -> int:
        return 0 if self._monitor is None else self._monitor.steps_seen

    def check(self, produce: Callable[[], Iterable[Step]]) -> Violation | None:
        """Observe the steps ``produce()`` builds; the first violation to act on, if any."""
        with self._lock:
            if self.disabled:
                return None
            try:
                monitor = self._monitor
                if monitor is None:
                    monitor = self._monitor = Monitor(self._policy, self._allow_set)
                found: list[Violation] = []
                for step in produce():
                    found += monitor.observe(step)
            except LivenessError:
                raise
            except Exception as exc:
                self._stand_down(exc)
                return None
            return self._act(found)

    def finish(self) -> Violation | None:
        """End of run: findings only a whole run shows (e.g. ``dead_end``)."""
        with self._lock:
            if self.disabled or self._monitor is None:
                return None
            try:
                found = self._monitor.finish()
            except Exception as exc:
                self._stand_down(exc)
                return None
            return self._act(found)

    def _act(self, found: list[Violation]) -> Violation | None:
        if not found:
            return None
        before = self.decider.seen
        stop = self.decider.decide(found)
        if stop is None and self.decider.seen > before:
            self._rearm()
        return stop

    def _rearm(self) -> None:
        """``"continue"`` let a violation pass: fresh windows, so a loop that goes on fires again.

        Each rule fires once on its crossing; without fresh windows a loop that continues
        would never reach the ceiling. Step indices go on from where they were.
        """
        old = self._monitor
        if old is None:
            return
        fresh = Monitor(self._policy, self._allow_set)
        snapshot = fresh.snapshot()
        snapshot["n"] = old.steps_seen
        fresh.load(snapshot)
        self._monitor = fresh

    def _stand_down(self, exc: Exception) -> None:
        self.disabled = True
        log_guard_failure(exc, self.steps_seen)


# -- policy -------------------------------------------------------------------------------------
def default_policy(graph: Any) -> Policy:
    """A live guard's default policy for ``graph`` (environment overrides applied).

    * A ``create_agent`` / ``create_react_agent`` graph (nodes ``model``/``agent`` and
      ``tools``, plus hook nodes: ``<middleware>.before_model`` style, ``pre_model_hook``,
      ``post_model_hook``): the tool-agent preset, its nodes exempt from revisit counting.
    * Any other graph: the workflow preset with **no revisit ceiling** (``max_revisits``
      above the window, so ``node_revisit_cycle`` cannot fire). A node name visited again is
      not a loop by itself (a ``Send`` fan-out, a ``@task`` per item, a chat graph's
      nodes every turn); the content, stall, cycle and tool rules judge what came back.
      An allow-set's limits, an explicit ``policy=`` or ``AGENT_EVAL_MAX_REVISITS`` set a
      ceiling.

    The eval graph's own loop_guard keeps the workflow defaults (3 / 4 / 24): it does not
    use this function.
    """
    nodes = getattr(graph, "nodes", None)
    names = {n for n in nodes if isinstance(n, str)} if isinstance(nodes, Mapping) else set()
    names = {n for n in names if not n.startswith("__")}
    hooks = {n for n in names if _HOOK_NODE.search(n) or n in _REACT_HOOKS}
    if frozenset(names - hooks) in _AGENT_CORES:
        agent_nodes = ("model", "tools", "agent", *sorted(hooks))
        return Settings.from_env().policy(Policy.tool_agent(agent_nodes=agent_nodes))
    base = Policy.workflow()
    return Settings.from_env().policy(base.model_copy(update={"max_revisits": base.window + 1}))


# -- stream shapes ------------------------------------------------------------------------------
class _Shape:
    """What the caller asked to see, and what the guard asks the graph for.

    The guard streams with ``"updates"`` added and gives the caller back exactly the
    parts, in exactly the shape,
    it asked for.
    """

    __slots__ = ("as_list", "inner", "modes", "nested", "request", "subgraphs", "v2")

    def __init__(
        self, stream_mode: Any, default_mode: Any, kwargs: Mapping[str, Any], nested: bool = False
    ) -> None:
        mode = default_mode if stream_mode is None else stream_mode
        self.modes: tuple[str, ...] = (mode,) if isinstance(mode, str) else tuple(mode)
        # LangGraph yields (mode, chunk) tuples only when stream_mode is a list.
        self.as_list = isinstance(mode, list)
        self.subgraphs = bool(kwargs.get("subgraphs", False))
        self.inner = self.subgraphs  # what the guard streams with
        self.nested = nested  # the graph has subgraphs: a watcher sees their steps
        self.v2 = kwargs.get("version", "v1") == "v2"
        # "tasks": a pushed task's input (a Send's argument, a @task's arguments) is part
        # of what it did; "checkpoints": the guard saves its windows with each checkpoint.
        self.request = [*self.modes, *(m for m in _GUARD_MODES if m not in self.modes)]

    def split(self, part: Any) -> tuple[Any, str, Any]:
        """(namespace, mode, payload) of one part streamed with ``self.request``, subgraphs on."""
        if self.v2:
            return part["ns"], part["type"], part["data"]
        if self.inner:
            ns, mode, payload = part
            return ns, mode, payload
        mode, payload = part
        return (), mode, payload

    def outward(self, part: Any, ns: Any, mode: str, payload: Any) -> Any:
        """The part as the caller would get it from the unguarded graph."""
        if self.v2:
            return part
        if self.as_list:
            return (ns, mode, payload) if self.subgraphs else (mode, payload)
        return (ns, payload) if self.subgraphs else payload

    def wants(self, ns: Any, mode: str) -> bool:
        return mode in self.modes and (self.subgraphs or not ns)


class _StreamRun:
    """One guarded call: reshapes parts for the caller and feeds every update to the guard.

    Root ``updates`` become steps (:class:`~liveguard.readers.stream.UpdateStepper`). An
    update of a pushed task (a ``Send``, a Functional API ``@task``) is held until its
    ``tasks`` result names it, and its message step is judged together with the task's
    input (``{"input": <digest>, "output": ...}``): identical outputs of different inputs
    are not a repeat. Each root ``checkpoints`` event hands the checkpoint's id to
    ``on_checkpoint`` (the guard saves its windows with it).
    """

    __slots__ = ("_guard", "_held", "_inputs", "_shape", "_stepper", "base", "interrupted",
                 "nested", "on_checkpoint", "pending", "request", "request_subgraphs", "values",
                 "watched")

    def __init__(self, shape: _Shape, run_guard: RunGuard) -> None:
        self._shape = shape
        self.request = shape.request
        self.nested = shape.nested
        self._guard = run_guard
        self._stepper = UpdateStepper()
        self.interrupted = False
        self.pending: Violation | None = None  # a stop found inside a subgraph or a task
        self.request_subgraphs = shape.inner
        self.on_checkpoint: Callable[[str], None] | None = None
        self.base: str | None = None  # the last checkpoint the graph wrote (or resumed from)
        self._inputs: dict[str, tuple[str, str]] = {}  # open pushed task id -> (name, input digest)
        self._held: Mapping[str, Any] | None = None  # an update waiting for its task's result
        self.watched: dict[str, int] = {}  # @task outputs the watcher judged, not yet streamed
        self.values: Any = None  # the last root "values" payload the caller got

    def process(self, part: Any) -> tuple[Any, Violation | None]:
        shape = self._shape
        ns, mode, payload = shape.split(part)
        violation = None
        if not ns and isinstance(payload, Mapping):
            if mode == "values":
                self.values = payload
            if mode == "updates":
                violation = self._release()
                if _INTERRUPT in payload:
                    self.interrupted = True
                if violation is None:
                    violation = self._update(payload)
            elif mode == "tasks":
                violation = self._task(payload)
            elif mode == "checkpoints":
                violation = self._release()
                checkpoint_id = _checkpoint_id(payload)
                if checkpoint_id is not None:
                    self.base = checkpoint_id
                    if self.on_checkpoint is not None:
                        self.on_checkpoint(checkpoint_id)
            if (mode == "updates" or (mode == "tasks" and "result" in payload)) and (
                    self.base is not None and self.on_checkpoint is not None):
                # the steps of the superstep under way, saved as they come: a process killed
                # before the graph's next checkpoint event reaches the guard keeps them
                self.on_checkpoint(_PENDING + self.base)
        return (shape.outward(part, ns, mode, payload) if shape.wants(ns, mode) else _SKIP), violation

    def _update(self, payload: Mapping[str, Any]) -> Violation | None:
        names = [k for k in payload if isinstance(k, str) and not k.startswith("__")]
        if len(names) == 1 and self.watched.get(names[0], 0) > 0:
            self.watched[names[0]] -= 1  # the watcher judged it in the task's own thread
            return None
        if len(names) == 1 and any(name == names[0] for name, _ in self._inputs.values()):
            self._held = payload  # its task's result follows: judge it with the task's input
            return None
        return self._guard.check(lambda: self._stepper.feed(payload))

    def _task(self, payload: Mapping[str, Any]) -> Violation | None:
        task_id = payload.get("id")
        if not isinstance(task_id, str):
            return None
        if "input" in payload:  # a task starts
            triggers = payload.get("triggers") or ()
            if _PUSH in triggers:
                self._inputs[task_id] = (str(payload.get("name")), _input_digest(payload.get("input")))
            return None
        opened = self._inputs.pop(task_id, None)
        held, self._held = self._held, None
        if held is None:
            return None
        if opened is None or opened[0] not in held:
            return self._guard.check(lambda: self._stepper.feed(held))
        digest, name = opened[1], opened[0]
        return self._guard.check(lambda: [_with_input(step, digest)
                                          for step in self._task_steps(name, held[name])])

    def _release(self) -> Violation | None:
        held, self._held = self._held, None
        if held is None:
            return None
        return self._guard.check(lambda: self._stepper.feed(held))

    def finish(self) -> Violation | None:
        found = self._release()
        if found is not None:
            return found
        return None if self.interrupted else self._guard.finish()

    def feed(self, steps: list[Step]) -> Violation | None:
        """Steps the guard makes itself (the user's input)."""
        return self._guard.check(lambda: steps)

    def task_step(self, name: str, digest: str, output: Any) -> Violation | None:
        """A Functional API ``@task``'s output (from the watcher, in the task's own thread)."""
        with self._guard._lock:
            self.watched[name] = self.watched.get(name, 0) + 1
        return self._guard.check(lambda: [_with_input(step, digest)
                                          for step in self._task_steps(name, output)])

    def _task_steps(self, name: str, output: Any) -> list[Step]:
        """A task's steps: a state update as the stepper reads it, any other value as output."""
        if isinstance(output, Mapping) or output is None:
            return self._stepper.feed({name: output})
        return [Step(node=name, output=output)]

    def subgraph_step(self, node: str, output: Any) -> Violation | None:
        """A subgraph node's output (from the watcher, in the node's own thread)."""
        return self._guard.check(lambda: self._stepper.feed({node: output}))

    def seed(self, snapshot: Any) -> None:
        """A resumed call: remember the tool calls of the thread's last AI message.

        Its tool results arrive in this call while the request came in an earlier one;
        without the calls the stepper could not give those results their arguments.
        """
        values = getattr(snapshot, "values", None)
        messages = values.get("messages") if isinstance(values, Mapping) else None
        if isinstance(messages, list):
            for message in messages[-16:]:
                self._stepper._remember(message)  # the stepper's own call memory
                self._stepper._repeat(message)  # and the results already counted

    def stop_part(self, value: dict[str, Any]) -> Any:
        """An ``updates`` part naming the stop, in the caller's shape (or _SKIP)."""
        shape = self._shape
        payload = {_LIVEGUARD: value}
        if "updates" not in shape.modes:
            return _SKIP
        if shape.v2:
            return {"type": "updates", "ns": (), "data": payload}
        return shape.outward(None, (), "updates", payload)


_GUARD_MODES: Final = ("updates", "tasks", "checkpoints")
_PENDING: Final = "pending:"
"""Row-id prefix of the windows saved during the superstep that follows a checkpoint."""
_PUSH: Final = "__pregel_push"


def _checkpoint_id(payload: Mapping[str, Any]) -> str | None:
    config = payload.get("config")
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    found = configurable.get("checkpoint_id") if isinstance(configurable, Mapping) else None
    return found if isinstance(found, str) else None


def _input_digest(value: Any) -> str:
    """A pushed task's input, digested (``"?"`` when it cannot be: the output alone counts)."""
    try:
        return fingerprint(value)[:16]
    except Exception:
        return "?"


def _with_input(step: Step, digest: str) -> Step:
    """A pushed task's message step, judged together with its input."""
    if step.tool is not None or digest == "?" or (step.output is None and step.summary is None):
        return step
    if tool_calls(step.output):
        return step
    return Step(node=step.node, output={"input": digest, "output": step.output,
                                        "summary": step.summary})


# -- thread state for guard(): kept in the graph's checkpointer, along the checkpoint lineage ---
class _ThreadStore:
    """The thread's liveness in the checkpointer, beside the graph's own checkpoints.

    Rows live under ``checkpoint_ns="__liveguard__"`` (a namespace LangGraph never uses),
    in the schema of :mod:`liveguard.thread_guard`:

    * the **stop**, one row per thread (a fixed checkpoint id), written only when the guard
      stops the thread or a person clears it;
    * the **windows**, one row per graph checkpoint, under the graph checkpoint's own id,
      written as the graph writes the checkpoint. A call starts from the row of the
      checkpoint it resumes from (or its nearest ancestor that has one).

    ``delete_thread`` removes them with the thread. Any ``BaseCheckpointSaver`` works
    (memory, SQLite, Postgres).
    """

    __slots__ = ("ns", "saver", "thread_id")

    def __init__(self, saver: Any, thread_id: str, ns: str) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.ns = ns

    @property
    def config(self) -> dict[str, Any]:
        """The stop row's config."""
        return self._row(_RECORD_ID)

    def _row(self, checkpoint_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": THREAD_NS + self.ns,
                                 "checkpoint_id": checkpoint_id}}

    def _graph_config(self, checkpoint_id: str | None) -> dict[str, Any]:
        conf: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        if checkpoint_id:
            conf["checkpoint_id"] = checkpoint_id
        return {"configurable": conf}

    @classmethod
    def of(cls, graph: Any, config: Any) -> _ThreadStore | None:
        configurable = {**(getattr(graph, "config", None) or {}).get("configurable", {}),
                        **((config or {}).get("configurable") or {})}
        thread_id = configurable.get("thread_id")
        saver = configurable.get(_CHECKPOINTER_KEY) or getattr(graph, "checkpointer", None)
        if thread_id is None or saver is None or isinstance(saver, bool):
            return None
        if not callable(getattr(saver, "put", None)):
            return None
        return cls(saver, str(thread_id), str(configurable.get("checkpoint_ns") or ""))

    # -- the stop ---------------------------------------------------------------------------------
    def load_stop(self) -> tuple[Violation | None, bool]:
        stop, held, _, _ = self.load_record()
        return stop, held

    def load_record(self) -> tuple[Violation | None, bool, dict[str, Any], list[dict[str, Any]]]:
        """(stop, held, where the hold's interrupt is, the audit) of the stop row."""
        found = self.saver.get_tuple(self.config)
        if found is None:
            return None, False, {}, []
        values = found.checkpoint.get("channel_values", {})
        raw = values.get(THREAD_KEY)
        stop, held = read_stop(raw, present=THREAD_KEY in values)
        return stop, held, read_hold(raw) if held else {}, read_audit(raw)

    def save_stop(self, stop: Violation | None, held: bool = False, *,
                  hold: Mapping[str, Any] | None = None,
                  audit: Sequence[Mapping[str, Any]] = ()) -> None:
        value = stop_value(stop, held=held, hold=hold, audit=audit)
        self.saver.put(*self._put_args(_RECORD_ID, value))

    # -- the hold: a pending interrupt of the thread's latest checkpoint ------------------------
    def put_hold(self, snapshot: Any, value: Mapping[str, Any], interrupt_id: str) -> dict[str, Any]:
        """Write the hold as LangGraph writes an ``interrupt()``: a pending write of channel
        ``__interrupt__`` for a task of the checkpoint's next step (one that has no question
        of its own pending, else beside that task's question). ``get_state(config).interrupts``
        and a server's thread list then show it. Returns where it was written (``{"id"}``
        alone when the graph has no next task: the hold is then in the stream and the record).
        """
        from langgraph.types import Interrupt

        hold: dict[str, Any] = {"id": interrupt_id}
        tasks = list(getattr(snapshot, "tasks", None) or ())
        config = getattr(snapshot, "config", None) or {}
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        if not tasks or not checkpoint_id or self.ns:
            return hold
        task = next((t for t in tasks if not t.interrupts), tasks[0])
        interrupts = [*task.interrupts, Interrupt(value=dict(value), id=interrupt_id)]
        self.saver.put_writes(self._graph_config(checkpoint_id), [(_INTERRUPT, interrupts)], task.id)
        hold.update(checkpoint_id=checkpoint_id, task_id=task.id)
        return hold

    def set_hold(self, hold: Mapping[str, Any], value: Mapping[str, Any] | None) -> None:
        """Replace the hold's pending interrupt with ``value`` (a re-ask), or drop it (None);
        any other question pending on the same task is kept."""
        from langgraph.types import Interrupt

        checkpoint_id, task_id = hold.get("checkpoint_id"), hold.get("task_id")
        if not isinstance(checkpoint_id, str) or not isinstance(task_id, str):
            return
        config = self._graph_config(checkpoint_id)
        found = self.saver.get_tuple(config)
        others = [i for tid, channel, items in (getattr(found, "pending_writes", None) or ())
                  if tid == task_id and channel == _INTERRUPT
                  for i in (items if isinstance(items, list | tuple) else [items])
                  if getattr(i, "id", None) != hold.get("id")]
        mine = [] if value is None else [Interrupt(value=dict(value), id=str(hold.get("id")))]
        self.saver.put_writes(config, [(_INTERRUPT, [*others, *mine])], task_id)

    # -- the windows, along the lineage ----------------------------------------------------------
    def load_windows(self, checkpoint_id: str | None) -> tuple[Any, str | None]:
        """(the windows value the call starts from, the checkpoint id it resumes from).

        ``checkpoint_id=None``: the thread's latest checkpoint. Walks up the parents to the
        nearest checkpoint with a row (a fork made by ``update_state``, a crash between the
        graph's write and the guard's); none: ``None`` (a new thread, or one guarded only now).
        """
        current = self.saver.get_tuple(self._graph_config(checkpoint_id))
        start = _tuple_id(current)
        for _ in range(_MAX_WALK):
            if current is None:
                break
            cid = _tuple_id(current)
            parent = getattr(current, "parent_config", None)
            pid = ((parent or {}).get("configurable") or {}).get("checkpoint_id")
            source = (getattr(current, "metadata", None) or {}).get("source")
            keys = [cid] if cid is not None else []
            if pid and source == "loop":  # written by the superstep that followed its parent
                keys.append(_PENDING + pid)
            for key in keys:
                value = self._value(key)
                if value is not _MISSING:
                    return value, start
            if not pid:
                break
            current = self.saver.get_tuple(self._graph_config(pid))
        return None, start

    def _value(self, row_id: str) -> Any:
        row = self.saver.get_tuple(self._row(row_id))
        if row is None:
            return _MISSING
        values = row.checkpoint.get("channel_values", {})
        return values.get(THREAD_KEY, _MISSING)

    def save_windows(self, checkpoint_id: str, value: dict[str, Any]) -> None:
        self.saver.put(*self._put_args(checkpoint_id, value))

    def _put_args(self, checkpoint_id: str, value: Any) -> tuple[Any, ...]:
        from langgraph.checkpoint.base import empty_checkpoint

        checkpoint = empty_checkpoint()
        checkpoint["id"] = checkpoint_id
        checkpoint["channel_values"] = {THREAD_KEY: value}
        # savers that keep channel values apart (memory, Postgres) key them by version, and
        # Postgres never overwrites one: every write of every row gets its own version
        version = uuid.uuid4().hex
        checkpoint["channel_versions"] = {THREAD_KEY: version}
        config = {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": THREAD_NS + self.ns}}
        return config, checkpoint, {"source": "update", "step": -1, "parents": {}}, {THREAD_KEY: version}

    # -- async twins: the sync calls in a worker thread (every saver has them; an async
    # saver's sync methods refuse to run on the event loop's own thread) ----------------------
    async def aload_stop(self) -> tuple[Violation | None, bool]:
        found: tuple[Violation | None, bool] = await _athread(self.load_stop)
        return found

    async def asave_stop(self, stop: Violation | None, held: bool = False) -> None:
        await _athread(lambda: self.save_stop(stop, held))

    async def aload_windows(self, checkpoint_id: str | None) -> tuple[Any, str | None]:
        result: tuple[Any, str | None] = await _athread(lambda: self.load_windows(checkpoint_id))
        return result

    async def asave_windows(self, checkpoint_id: str, value: dict[str, Any]) -> None:
        await _athread(lambda: self.save_windows(checkpoint_id, value))


_MISSING: Any = object()
_MAX_WALK: Final = 64
"""How many ancestors ``load_windows`` looks through for a row."""


def _tuple_id(found: Any) -> str | None:
    if found is None:
        return None
    cid = ((getattr(found, "config", None) or {}).get("configurable") or {}).get("checkpoint_id")
    return cid if isinstance(cid, str) else None


async def _athread(fn: Callable[[], Any]) -> Any:
    """``fn()`` for an async caller: sync savers in a worker thread, async-only savers directly."""
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, fn)


class _Plan:
    """What a call on a held or stopped thread does: run on (``go`` with ``input``), or not.

    ``part`` is yielded to the caller, ``error`` raised; ``record`` (stop, held) is saved
    with the call's hold and audit; ``rewrite`` replaces the hold's pending interrupt
    (``None`` drops it; ``_SKIP`` leaves it); ``notify`` is sent to the notifiers.
    """

    __slots__ = ("error", "go", "input", "notify", "part", "record", "rewrite")

    def __init__(self, *, go: bool = False, input: Any = None, part: Any = _SKIP,
                 error: NoProgressError | None = None,
                 record: tuple[Violation | None, bool] | None = None, rewrite: Any = _SKIP,
                 notify: Mapping[str, Any] | None = None) -> None:
        self.go = go
        self.input = input
        self.part = part
        self.error = error
        self.record = record
        self.rewrite = rewrite
        self.notify = notify


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


class _GuardCall:
    """One guarded call's thread state: the Monitor to continue from and any saved stop."""

    __slots__ = ("audit", "guarded", "held", "hold", "origin", "request", "run", "saved", "stop",
                 "store")

    def __init__(self, guarded: GuardedGraph, store: _ThreadStore | None,  # noqa: PLR0917
                 windows: Any, stop: tuple[Violation | None, bool], shape: _Shape,
                 origin: str | None = None, hold: Mapping[str, Any] | None = None,
                 audit: list[dict[str, Any]] | None = None) -> None:
        settings = guarded._lg
        self.guarded = guarded
        self.store = store
        self.stop, self.held = stop
        self.hold: dict[str, Any] = dict(hold or {})  # where the thread's pending hold is
        self.audit: list[dict[str, Any]] = list(audit or [])
        self.request: HoldRequest | None = None  # the hold this call raises
        self.origin = origin  # the checkpoint the call resumes from
        monitor = read_windows(windows, settings.policy, settings.allow_set)
        if monitor is not None:
            monitor.new_run()
        decider = Decider(settings.exit_behavior, settings.severity, settings.ceiling)
        self.run = _StreamRun(shape, RunGuard(settings.policy, settings.allow_set,
                                              monitor=monitor, decider=decider))
        self.saved = self._seen()  # what the lineage already holds when the call starts

    def _seen(self) -> int:
        monitor = self.run._guard.monitor
        return -1 if monitor is None else monitor.steps_seen

    def changed(self) -> bool:
        """Steps since the last save? Rows are written only then.

        A checkpoint without a row of its own reads its ancestors' (the lineage walk of
        ``_ThreadStore.load_windows``), so an unchanged Monitor needs no write.
        """
        seen = self._seen()
        if seen == self.saved:
            return False
        self.saved = seen
        return True

    def windows(self) -> dict[str, Any]:
        return windows_value(self.run._guard.monitor)


class _Settings:
    """A guard's settings (kept as one attribute so ``Pregel.copy`` carries them along)."""

    __slots__ = ("_nested", "allow_set", "ceiling", "exit_behavior", "inner", "node_names",
                 "notifiers", "per_call_told", "policy", "severity")

    def __init__(self, *, inner: Any, policy: Policy, allow_set: AllowSet | None,
                 exit_behavior: ExitBehavior, severity: SeverityFloor, ceiling: int,
                 notifiers: Sequence[Notifier] = ()) -> None:
        self.inner = inner
        self.notifiers: tuple[Notifier, ...] = tuple(notifiers)
        self.policy = policy
        self.allow_set = allow_set
        self.exit_behavior: ExitBehavior = exit_behavior
        self.severity: SeverityFloor = severity
        self.ceiling = ceiling
        self._nested: bool | None = None
        self.per_call_told = False
        nodes = getattr(inner, "nodes", None)
        self.node_names: frozenset[str] = frozenset(
            n for n in (nodes if isinstance(nodes, Mapping) else ()) if isinstance(n, str))

    def nested(self, graph: Any) -> bool:
        """Whether the graph has subgraphs (then the guard streams their steps too).

        Only then: ``subgraphs=True`` makes LangGraph stream eagerly, so a stop may land
        one superstep later than on a flat graph.
        """
        if self._nested is None:
            try:
                self._nested = any(True for _ in graph.get_subgraphs())
            except Exception:
                self._nested = False
        return self._nested


# -- the wrapper --------------------------------------------------------------------------------
class GuardedGraph:
    """A compiled LangGraph graph whose threads stop at the first liveness violation.

    ``guard(graph)`` returns an instance of a subclass of both this class and the graph's
    own class (``CompiledStateGraph``, ``Pregel``): a Pregel whose ``stream`` / ``astream``
    are guarded. Every public execution method of a Pregel (``invoke``, ``ainvoke``,
    ``batch``, ``abatch``, ``stream_events``, ``astream_events``, ...) runs through them,
    ``with_config`` returns a guarded copy, and the object can be a node of another graph
    or the graph served from ``langgraph.json``.
    """

    _lg: _Settings

    def __init__(self, *args: Any, _lg: _Settings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lg = _lg

    # -- the guard's settings -------------------------------------------------------------------
    @property
    def graph(self) -> Any:
        """The wrapped graph (unguarded)."""
        return self._lg.inner

    @property
    def policy(self) -> Policy:
        return self._lg.policy

    @property
    def allow_set(self) -> AllowSet | None:
        return self._lg.allow_set

    @property
    def exit_behavior(self) -> ExitBehavior:
        return self._lg.exit_behavior

    @property
    def on_violation(self) -> str:
        """Deprecated name of :attr:`exit_behavior`."""
        return self._lg.exit_behavior

    @property
    def severity(self) -> SeverityFloor:
        return self._lg.severity

    def _begin(self, config: Any, stream_mode: Any, kwargs: Mapping[str, Any],  # noqa: PLR0917
               store: _ThreadStore | None, windows: Any, record: tuple[Any, ...],
               origin: str | None) -> _GuardCall:
        if store is None and not self._lg.per_call_told:
            self._lg.per_call_told = True
            log.info("liveguard: no checkpointer or thread_id: liveness is per call, nothing is "
                     "kept between calls")
        shape = _Shape(stream_mode, getattr(self, "stream_mode", "values"), kwargs,
                       nested=self._lg.nested(self))
        stop, held, hold, audit = record
        return _GuardCall(self, store, windows, (stop, held), shape, origin, hold, audit)

    def _resume(self, call: _GuardCall, input: Any, values: Any = None) -> _Plan:
        """What to do on a thread the guard holds or stopped (``call.stop`` is set).

        Held (``exit_behavior="interrupt"``): a ``Command(resume=...)`` carries the person's
        answer (a ``{"decisions": [...]}`` value, or a map naming the hold's interrupt id).
        approve: the stop is cleared, the windows start afresh, and the graph resumes,
        answering the hold's interrupt; edit: the same, with ``edited_action.args.update``
        applied as a state update; reject: the thread stays stopped and the hold is dropped.
        A malformed answer re-asks (the same hold, with ``error``); no answer shows the
        hold again. Every answer goes into the record's audit. Not held: the saved stop.
        ``values``: the thread's current values (a ``values`` stream shows the hold with them).
        """
        stop = call.stop
        assert stop is not None
        if not call.held:
            return _Plan(error=self._stopped(call))
        iid = str(call.hold.get("id") or "")
        request = hold_request(stop, edit="update", interrupt_id=iid or None,
                               error=call.hold.get("error"))
        resume = getattr(input, "resume", None) if type(input).__name__ == "Command" else None
        if resume is None:
            log_violation(stop, "thread held: resume with Command(resume={'decisions': [...]})")
            return _Plan(part=self._hold_part(call, request, values))
        answer = resume.get(iid, _MISSING) if isinstance(resume, Mapping) and iid else _MISSING
        if answer is _MISSING:
            answer = resume
        decision = decide_hold(answer, request)
        now = _now()
        call.audit.append(audit_entry(decision, stop, at=now))
        if isinstance(decision, DecisionError):
            again = with_error(request, decision)
            call.hold["error"] = again["error"]
            return _Plan(part=self._hold_part(call, again, values), record=(stop, True), rewrite=again,
                         notify=again)
        if decision.type == "reject":
            call.held = False
            log_violation(stop, "rejected by a person: the thread stays stopped")
            return _Plan(record=(stop, False), rewrite=None, part=call.run.stop_part(
                {"code": stop.code, "step": stop.step, "node": stop.node, "count": stop.count}))
        from langgraph.types import Command

        call.stop, call.held = None, False
        call.run = _GuardCall(self, call.store, None, (None, False), call.run._shape,
                              call.origin).run  # the windows start afresh
        call.saved = -2  # and the next save writes them, whatever their count
        go = {iid: answer} if iid else None
        if isinstance(decision, Edit):
            return _Plan(go=True, record=(None, False),
                         input=Command(update=decision.value, resume=go))
        return _Plan(go=True, record=(None, False), input=Command(resume=go) if go else None)

    def _hold_part(self, call: _GuardCall, request: HoldRequest, values: Any = None) -> Any:
        """The hold's parts, where LangGraph puts an interrupt's (see :func:`_interrupt_parts`)."""
        from langgraph.types import Interrupt

        interrupt = Interrupt(value=dict(request), id=str(call.hold.get("id") or "liveguard"))
        return _interrupt_parts(call.run._shape, interrupt, values)

    def _apply(self, call: _GuardCall, plan: _Plan) -> None:
        """The record I/O of a plan (sync; the async path runs it in a worker thread)."""
        store = call.store
        if store is None:
            return
        if plan.record is not None:
            stop, held = plan.record
            _safe(lambda: store.save_stop(stop, held, hold=call.hold if held else None,
                                          audit=call.audit))
        if plan.rewrite is not _SKIP and call.hold:
            _safe(lambda: store.set_hold(call.hold, plan.rewrite))
        if plan.notify is not None:
            self._notify(store, plan.notify, str(call.hold.get("id") or ""))

    def _notify(self, store: _ThreadStore, request: Mapping[str, Any], interrupt_id: str) -> None:
        notifiers = self._lg.notifiers
        if not notifiers:
            return
        from liveguard.notify import Coords, notify_all

        coords = Coords(thread_id=store.thread_id, checkpoint_ns=store.ns,
                        interrupt_id=interrupt_id or None)
        _safe(lambda: notify_all(notifiers, request, coords))

    def _save_stop(self, call: _GuardCall, stop: Violation) -> None:
        """End of a call that stopped: the stop row; at a hold, the pending interrupt first."""
        store = call.store
        if store is None:
            return
        request = call.request
        if self._lg.exit_behavior != "interrupt" or request is None:
            _safe(lambda: store.save_stop(stop, False, audit=call.audit))
            return
        iid = str(request.get("interrupt_id") or "")
        hold: dict[str, Any] = {"id": iid}
        if not store.ns:  # a root graph (a subgraph's interrupt is its parent's to keep)
            # the saver in the config: a graph served by the LangGraph server gets it only there
            state_config = store._graph_config(None)
            state_config["configurable"][_CHECKPOINTER_KEY] = store.saver
            snapshot = _safe(lambda: self.get_state(state_config))  # type: ignore[attr-defined]
            hold = _safe(lambda: store.put_hold(snapshot, request, iid)) or hold
        call.hold = hold
        _safe(lambda: store.save_stop(stop, True, hold=hold, audit=call.audit))
        self._notify(store, request, iid)

    def _stopped(self, call: _GuardCall) -> NoProgressError | None:
        """At once, without running a node: the saved stop of a stopped thread."""
        stop = call.stop
        assert stop is not None
        log_violation(stop, "thread already stopped (clear it with liveguard.clear)")
        return NoProgressError(stop) if self._lg.exit_behavior == "error" else None

    def _on_violation(self, call: _GuardCall, stop: Violation) -> tuple[Any, NoProgressError | None]:
        """(a part to yield, an error to raise) for a violation the guard acts on."""
        behavior = self._lg.exit_behavior
        value = {"code": stop.code, "step": stop.step, "node": stop.node, "count": stop.count}
        if behavior == "error":
            return _SKIP, NoProgressError(stop)
        if behavior == "interrupt":
            from langgraph.types import Interrupt

            iid = uuid.uuid4().hex  # 32 hex digits: LangGraph accepts it in a resume map
            call.request = request = hold_request(stop, edit="update", interrupt_id=iid)
            interrupt = Interrupt(value=dict(request), id=iid)
            return _interrupt_parts(call.run._shape, interrupt, call.run.values), None
        return call.run.stop_part(value), None

    def _prepare(self, call: _GuardCall, input: Any, config: Any,
                 kwargs: Mapping[str, Any]) -> tuple[Any, Any, Violation | None, list[str]]:
        """(config to run with, the run's control, a stop at the input, checkpoints to save at)."""
        run = call.run
        saves: list[str] = []
        run.on_checkpoint = saves.append
        control = _control(config, kwargs)
        config = _watched(config, run, control, self._lg)
        found = None
        if not _is_resume(input) and self._lg.allow_set is None and call.origin is not None:
            # a new request on a thread with history: the rules see the user's turn
            step = _safe(lambda: input_step(input))
            if step is not None:
                found = run.feed([step])
        return config, control, found, saves

    # -- streaming ------------------------------------------------------------------------------
    def stream(  # noqa: PLR0915 - one call's whole life, kept line for line with astream
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> Iterator[Any]:
        """The graph's ``stream``, guarded; every other execution method runs through it."""
        store = _ThreadStore.of(self, config)
        record: tuple[Any, ...] = (None, False, {}, [])
        windows, origin = None, None
        if store is not None:
            record = _safe(store.load_record) or record
            windows, origin = _safe(lambda: store.load_windows(_checkpoint_of(config))) or (None, None)
        call = self._begin(config, stream_mode, kwargs, store, windows, record, origin)
        stop: Violation | None = None
        if call.stop is not None:
            values = None
            if call.held and "values" in call.run._shape.modes:
                values = getattr(_safe(lambda: self.get_state(config)), "values", None)  # type: ignore[attr-defined]
            plan = self._resume(call, input, values)
            self._apply(call, plan)
            for out_part in _each(plan.part):
                yield out_part
            if plan.error is not None:
                raise plan.error
            if not plan.go:
                return
            input = plan.input  # a person approved or edited: the run goes on
        run = call.run
        if store is not None and origin is not None and _is_resume(input):
            _safe(lambda: run.seed(self.get_state(config)))  # type: ignore[attr-defined]
        config, control, stop, saves = self._prepare(call, input, config, kwargs)
        run.base = origin

        def save() -> None:
            if saves and store is not None and call.changed():
                _safe(functools.partial(store.save_windows, saves[-1], call.windows()))
            saves.clear()

        try:
            if stop is not None:
                extra, error = self._on_violation(call, stop)
                for out_part in _each(extra):
                    yield out_part
                if error is not None:
                    raise error
                return
            inner = super().stream(  # type: ignore[misc]
                input, config, stream_mode=run.request,
                **{**kwargs, "subgraphs": run.request_subgraphs, "control": control},
            )
            try:
                try:
                    for part in inner:
                        out, found = run.process(part)
                        save()
                        if out is not _SKIP:
                            yield out
                        if (stop := found or run.pending) is not None:
                            run.pending = stop
                            control.request_drain("liveguard")
                            extra, error = self._on_violation(call, stop)
                            for out_part in _each(extra):
                                yield out_part
                            if error is not None:
                                raise error
                            return
                except Exception as exc:
                    inside = _subgraph_stop(run, exc)
                    if inside is None:
                        raise
                    stop = inside
                    extra, error = self._on_violation(call, stop)
                    for out_part in _each(extra):
                        yield out_part
                    if error is not None:
                        raise error from None
                    return
                if (found := run.finish()) is not None:
                    stop = found
                    if self._lg.exit_behavior in ("error", "interrupt"):
                        extra, error = self._on_violation(call, found)
                        for out_part in _each(extra):
                            yield out_part
                        if error is not None:
                            raise error
            finally:
                _close(inner)
        finally:
            save()
            if store is not None and kwargs.get("durability") == "exit" and run.base is not None:
                # only the last checkpoint reaches the saver: its row holds the whole call
                _safe(functools.partial(store.save_windows, run.base, call.windows()))
            if store is not None and stop is not None and stop.code != GUARD_ERROR:
                self._save_stop(call, stop)

    async def astream(  # noqa: PLR0915 - the async twin of stream, kept line for line alike
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The graph's ``astream``, guarded; ``ainvoke`` / ``astream_events`` run through it."""
        store = _ThreadStore.of(self, config)
        record: tuple[Any, ...] = (None, False, {}, [])
        windows, origin = None, None
        if store is not None:
            record = await _asafe(lambda: _athread(store.load_record)) or record
            windows, origin = await _asafe(
                lambda: store.aload_windows(_checkpoint_of(config))) or (None, None)
        call = self._begin(config, stream_mode, kwargs, store, windows, record, origin)
        stop: Violation | None = None
        if call.stop is not None:
            values = None
            if call.held and "values" in call.run._shape.modes:
                state = await _asafe(lambda: self.aget_state(config))  # type: ignore[attr-defined]
                values = getattr(state, "values", None)
            plan = self._resume(call, input, values)
            await _athread(lambda: self._apply(call, plan))  # notifiers run off the event loop
            for out_part in _each(plan.part):
                yield out_part
            if plan.error is not None:
                raise plan.error
            if not plan.go:
                return
            input = plan.input  # a person approved or edited: the run goes on
        run = call.run
        if store is not None and origin is not None and _is_resume(input):
            state = await _asafe(lambda: self.aget_state(config))  # type: ignore[attr-defined]
            _safe(lambda: run.seed(state))
        config, control, stop, saves = self._prepare(call, input, config, kwargs)
        run.base = origin

        async def save() -> None:
            if saves and store is not None and call.changed():
                await _asafe(functools.partial(store.asave_windows, saves[-1], call.windows()))
            saves.clear()

        try:
            if stop is not None:
                extra, error = self._on_violation(call, stop)
                for out_part in _each(extra):
                    yield out_part
                if error is not None:
                    raise error
                return
            inner = super().astream(  # type: ignore[misc]
                input, config, stream_mode=run.request,
                **{**kwargs, "subgraphs": run.request_subgraphs, "control": control},
            )
            try:
                try:
                    async for part in inner:
                        out, found = run.process(part)
                        await save()
                        if out is not _SKIP:
                            yield out
                        if (stop := found or run.pending) is not None:
                            run.pending = stop
                            control.request_drain("liveguard")
                            extra, error = self._on_violation(call, stop)
                            for out_part in _each(extra):
                                yield out_part
                            if error is not None:
                                raise error
                            return
                except Exception as exc:
                    inside = _subgraph_stop(run, exc)
                    if inside is None:
                        raise
                    stop = inside
                    extra, error = self._on_violation(call, stop)
                    for out_part in _each(extra):
                        yield out_part
                    if error is not None:
                        raise error from None
                    return
                if (found := run.finish()) is not None:
                    stop = found
                    if self._lg.exit_behavior in ("error", "interrupt"):
                        extra, error = self._on_violation(call, found)
                        for out_part in _each(extra):
                            yield out_part
                        if error is not None:
                            raise error
            finally:
                with suppress(NoProgressError):
                    await inner.aclose()
        finally:
            await save()
            if store is not None and kwargs.get("durability") == "exit" and run.base is not None:
                # only the last checkpoint reaches the saver: its row holds the whole call
                await _asafe(functools.partial(store.asave_windows, run.base, call.windows()))
            if store is not None and stop is not None and stop.code != GUARD_ERROR:
                final = stop
                await _athread(lambda: self._save_stop(call, final))

    def __repr__(self) -> str:
        name = getattr(self, "name", type(self).__name__)
        return (f"GuardedGraph({name!r}, exit_behavior={self._lg.exit_behavior!r}, "
                f"severity={self._lg.severity!r})")


def _subgraph_stop(run: _StreamRun, exc: BaseException) -> Violation | None:
    """The stop behind an exception out of the graph, when a subgraph's watcher caused it."""
    if run.pending is None:
        return None
    if isinstance(exc, NoProgressError) or type(exc).__name__ == "GraphDrained":
        return run.pending
    return None


def _watched(config: Any, run: _StreamRun, control: Any, settings: _Settings) -> Any:
    """``config`` plus a callback handler that runs in each node's and task's own thread.

    * A Functional API ``@task`` (a task that is not a node of the graph) is judged as it
      ends, in its own thread, with its input: a sync ``@entrypoint`` runs inline, so the
      stream reaches the guard only when it returns (a ``while True`` never does). At a
      stop the task raises ``NoProgressError`` into the entrypoint: the loop stops at the
      violating task, whatever the exit behaviour.
    * Once the guard has decided to stop (``run.pending``), any node or ``@task`` that
      starts raises ``NoProgressError``.
    * With subgraphs, it sees each subgraph node's output as the node ends, so a loop inside
      a subgraph is stopped at the violating step: in ``"error"`` mode by raising
      ``NoProgressError`` from the node; otherwise by draining the run (the subgraph stops
      before its next step) and ending as the behaviour says.
    """
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.runnables.config import merge_configs

    configurable = (config or {}).get("configurable") or {}
    base = len([s for s in str(configurable.get("checkpoint_ns") or "").split("|") if s])
    nested = run.nested
    nodes = settings.node_names

    class Watch(BaseCallbackHandler):
        raise_error = True
        run_inline = True

        def __init__(self) -> None:
            self.names: dict[Any, str] = {}
            self.tasks: dict[Any, tuple[str, str]] = {}

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                           metadata: Any = None, **kwargs: Any) -> None:
            meta = metadata or {}
            node = meta.get("langgraph_node")
            if node is None or kwargs.get("name") != node:
                return
            if run.pending is not None:
                raise NoProgressError(run.pending)
            ns = meta.get("langgraph_checkpoint_ns")
            if not isinstance(ns, str):
                return
            names = [segment.split(":", 1)[0] for segment in ns.split("|")][base:]
            if (not nested and len(names) == 2 and names[0] in nodes and node not in nodes
                    and _PUSH in (meta.get("langgraph_triggers") or ())):
                self.tasks[run_id] = (node, _input_digest(inputs))  # a @task of the entrypoint
            elif nested and len(names) > 1:  # a node of a subgraph, not of this graph
                self.names[run_id] = ":".join(names)

        def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
            task = self.tasks.pop(run_id, None)
            if task is not None:
                stop = run.task_step(task[0], task[1], outputs) if run.pending is None else None
                if stop is not None:
                    run.pending = stop
                    control.request_drain("liveguard")
                    raise NoProgressError(stop)
                return
            name = self.names.pop(run_id, None)
            if name is None or run.pending is not None:
                return
            stop = run.subgraph_step(name, outputs)
            if stop is None:
                return
            run.pending = stop
            control.request_drain("liveguard")
            if settings.exit_behavior == "error":
                raise NoProgressError(stop)

        def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            self.names.pop(run_id, None)
            self.tasks.pop(run_id, None)

    return merge_configs(config, {"callbacks": [Watch()]})


def _checkpoint_of(config: Any) -> str | None:
    """The checkpoint id a call names (a replay or a fork), or None (the latest)."""
    configurable = (config or {}).get("configurable") or {}
    found = configurable.get("checkpoint_id") if isinstance(configurable, Mapping) else None
    return found if isinstance(found, str) and found else None


def _close(inner: Any) -> None:
    """Close the inner stream; a task stopped by the watcher while it closes is expected."""
    with suppress(NoProgressError):
        inner.close()


def _is_resume(input: Any) -> bool:
    """``None`` or a ``Command``: the call goes on from where the thread stopped."""
    return input is None or type(input).__name__ == "Command"


def _control(config: Any, kwargs: Mapping[str, Any]) -> Any:
    """The run's ``RunControl``: the caller's, the parent graph's, or a new one.

    The guard requests a drain on it when it stops the run, so a subgraph that is still
    running (LangGraph runs it as one task of the parent) stops at its next step.
    """
    control = kwargs.get("control")
    if control is not None:
        return control
    configurable = (config or {}).get("configurable") or {}
    parent = getattr(configurable.get(_RUNTIME_KEY), "control", None)
    if parent is not None:
        return parent
    from langgraph.runtime import RunControl

    return RunControl()


class _Many(tuple):  # type: ignore[type-arg]
    """Several parts to yield in order."""

    __slots__ = ()


def _each(extra: Any) -> tuple[Any, ...]:
    """The parts in ``extra``: none (``_SKIP``), several (:class:`_Many`) or one."""
    if extra is _SKIP:
        return ()
    return tuple(extra) if isinstance(extra, _Many) else (extra,)


def _interrupt_parts(shape: _Shape, interrupt: Any, values: Any) -> Any:
    """An interrupt as LangGraph streams one: an ``updates`` part ``{"__interrupt__": (...)}``
    and a ``values`` part, the current values plus the interrupt (v2: in ``interrupts``),
    each when the caller asked for that mode (``values``: when the values are known)."""
    parts: list[Any] = []
    if "updates" in shape.modes:
        payload = {_INTERRUPT: (interrupt,)}
        parts.append({"type": "updates", "ns": (), "data": payload} if shape.v2
                     else shape.outward(None, (), "updates", payload))
    if "values" in shape.modes and isinstance(values, Mapping):
        if shape.v2:
            parts.append({"type": "values", "ns": (), "data": dict(values),
                          "interrupts": (interrupt,)})
        else:
            parts.append(shape.outward(None, (), "values", {**values, _INTERRUPT: (interrupt,)}))
    return _Many(parts) if parts else _SKIP


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # the thread store failing never kills the graph
        log_guard_failure(exc)
        return None


async def _asafe(fn: Callable[[], Awaitable[Any]]) -> Any:
    try:
        return await fn()
    except Exception as exc:
        log_guard_failure(exc)
        return None


_CLASSES: dict[type, type] = {}


def _guarded_class(base: type) -> type:
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = type(f"Guarded{base.__name__}", (GuardedGraph, base), {})
    return cls


def guard(
    graph: Any,
    *,
    policy: Policy | None = None,
    allow_set: AllowSet | None = None,
    exit_behavior: ExitBehavior | None = None,
    on_violation: str | None = None,
    severity: SeverityFloor = "hard",
    ceiling: int = 3,
    notifiers: Sequence[Notifier] = (),
) -> GuardedGraph:
    """Guard a compiled LangGraph graph: its threads stop at the first liveness violation.

    ``policy`` defaults to :func:`default_policy` (the workflow preset, or the tool-agent
    preset for a ``create_agent`` graph, with environment overrides). ``exit_behavior``:
    ``"error"`` (default), ``"end"``, ``"continue"``, ``"interrupt"`` or ``"warn"`` (see the
    module docstring); ``on_violation`` is its deprecated name (``"raise"`` = ``"error"``).
    ``notifiers``: callables ``notifier(payload, coords)`` (e.g.
    :class:`liveguard.notify.WebhookNotifier`) called once per ``"interrupt"`` hold; a
    failing one is logged and never releases the hold. Arguments are validated here: a
    bad policy or allow-set fails now, not mid-run.
    """
    if on_violation is not None:
        warnings.warn("guard(on_violation=...) is deprecated; use exit_behavior=",
                      DeprecationWarning, stacklevel=2)
        if exit_behavior is not None:
            raise ValueError("pass exit_behavior or on_violation, not both")
        if on_violation not in _ALIASES:
            raise ValueError(f"on_violation must be one of {sorted(_ALIASES)}, got {on_violation!r}")
        exit_behavior = _ALIASES[on_violation]  # type: ignore[assignment]
    behavior = "error" if exit_behavior is None else exit_behavior
    if behavior not in EXIT_BEHAVIORS:
        raise ValueError(f"exit_behavior must be one of {EXIT_BEHAVIORS}, got {behavior!r}")
    if severity not in ("hard", "soft"):
        raise ValueError(f"severity must be 'hard' or 'soft', got {severity!r}")
    if ceiling < 1:
        raise ValueError("ceiling must be at least 1")
    if isinstance(graph, GuardedGraph):
        graph = graph.graph
    if not callable(getattr(graph, "stream", None)) or not hasattr(graph, "__dict__"):
        raise TypeError(f"guard() needs a compiled LangGraph graph, got {type(graph).__name__}")
    policy = default_policy(graph) if policy is None else policy
    Monitor(policy, allow_set)  # fail fast on a policy the allow-set cannot refine
    if not all(callable(n) for n in notifiers):
        raise TypeError("notifiers: expected callables notifier(payload, coords)")
    settings = _Settings(inner=graph, policy=policy, allow_set=allow_set,
                         exit_behavior=behavior, severity=severity, ceiling=ceiling,
                         notifiers=notifiers)
    cls = _guarded_class(type(graph))
    guarded: GuardedGraph = object.__new__(cls)
    guarded.__dict__.update({k: v for k, v in graph.__dict__.items() if k != "__orig_class__"})
    guarded._lg = settings
    return guarded
