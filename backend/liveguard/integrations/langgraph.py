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

The thread's liveness
    With a checkpointer and a ``thread_id``, the Monitor's snapshot and any stop live in
    one record per thread in the graph's checkpointer (``checkpoint_ns="__liveguard__"``,
    a fixed checkpoint id, overwritten): read once when a call starts and written once
    when it ends. A loop across invokes, ``interrupt()`` resumes and process restarts is
    one loop. A resumed call (input ``None`` or a ``Command``) first reads the thread's
    last messages so the tool results it streams get their calls' arguments. Without a
    checkpointer each call is its own run and nothing is saved.

At a violation (``exit_behavior``)
    ``"error"`` (default): :class:`~liveguard.errors.NoProgressError` from inside the
    stream loop (from inside the subgraph's node for a subgraph step); the guard also
    requests a drain on the run's ``RunControl``, so with the other behaviours a subgraph
    stops before its next step. ``"end"``:
    the stream ends (``stream_mode="updates"`` gets a last ``{"__liveguard__": {...}}``
    chunk). ``"continue"``: no node can be "not executed", so violations are logged and
    the run ends at the ``ceiling``-th one. ``"interrupt"``: the run stops with an
    ``__interrupt__`` carrying ``{"liveguard": {code, step, node, count}}``; resume with
    ``Command(resume="approve")`` (windows cleared, the run goes on),
    ``Command(resume="reject")`` (stays stopped) or ``Command(resume={"action": "edit",
    "update": {...}})``. ``"warn"``: a WARNING on the ``liveguard.guard`` logger (code,
    step, node, count, digest prefix; never text); the run goes on. ``on_violation`` is
    the deprecated name (``"raise"`` = ``"error"``).

A stopped thread stays stopped
    Every later call on a thread whose saved stop is hard answers at once, without
    running a node: ``"error"`` raises the same ``NoProgressError``; ``"end"`` returns
    nothing; an ``"interrupt"`` hold waits for a decision. :func:`liveguard.clear` (or
    ``liveguard threads clear``) lifts it.

``severity``
    ``"hard"`` (default) acts on hard violations only. ``"soft"`` acts on every violation,
    including end-of-run findings (``dead_end`` with an allow-set), which are checked
    after the graph's last chunk (never after an interrupt).

Default policy
    ``Policy.from_env()`` (the workflow preset plus ``AGENT_EVAL_*`` overrides, read when
    ``guard`` is called). A ``create_agent`` / ``create_react_agent`` graph is recognised by
    its nodes (exactly ``model``/``agent`` and ``tools``, plus ``<middleware>.before_model``
    style hook nodes) and gets ``Policy.from_env(Policy.tool_agent(...))`` with those
    nodes exempt from revisit counting. Pass ``policy=`` to choose yourself.

The guard's own failures
    Any exception inside the stepper, the Monitor or the thread record (a
    ``FingerprintError`` on a payload of an unsupported type, a bug, an unreadable
    record) is logged as ``code=guard_error`` with the exception type and code location,
    never its message, and the guard stands down for the rest of that call; the graph
    runs on.

Limits
    ``output_keys``
    narrows the updates the guard sees as it narrows the caller's. A run stopped by
    ``"error"`` keeps the writes of the steps that ran; ``get_state(config).next`` names
    the node that would have run next.

LangGraph is imported lazily (the wrapped graph brings its own), so
``import liveguard.integrations.langgraph`` stays framework-free.
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from liveguard.errors import LivenessError, NoProgressError
from liveguard.model import Step, Violation
from liveguard.monitor import Monitor
from liveguard.policy import Policy
from liveguard.readers.stream import UpdateStepper

if TYPE_CHECKING:
    from liveguard.allowset import AllowSet

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

ExitBehavior = Literal["error", "end", "continue", "interrupt", "warn"]
EXIT_BEHAVIORS: Final = ("error", "end", "continue", "interrupt", "warn")
_ALIASES: Final = {"raise": "error", "end": "end", "warn": "warn"}
SeverityFloor = Literal["hard", "soft"]

THREAD_NS: Final = "__liveguard__"
"""Checkpoint namespace of guard()'s per-thread liveness record."""
THREAD_KEY: Final = "liveguard"
"""Channel name of the record inside that checkpoint."""
_RECORD_ID: Final = "00000000-0000-0000-0000-000000000000"
_CHECKPOINTER_KEY: Final = "__pregel_checkpointer"
_RUNTIME_KEY: Final = "__pregel_runtime"
_LIVEGUARD: Final = "__liveguard__"

GUARD_ERROR: Final = "guard_error"
"""Log code of a guard's own failure (the guard stands down; the agent runs on)."""

log = logging.getLogger("liveguard.guard")

_INTERRUPT: Final = "__interrupt__"
_SKIP: Any = object()
_HOOK_NODE = re.compile(r"\.(?:before|after)_(?:agent|model)$")
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

    __slots__ = ("_allow_set", "_lock", "_monitor", "_policy", "_severity", "_warn", "disabled")

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
    ) -> None:
        self._policy = policy
        self._allow_set = allow_set
        self._severity = severity
        self._warn = warn
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
        for violation in found:
            if self._severity == "hard" and not violation.hard:
                continue
            if self._warn:
                log_violation(violation, "run continues (on_violation=warn)")
                continue
            log_violation(violation, "stopping the run")
            return violation
        return None

    def _stand_down(self, exc: Exception) -> None:
        self.disabled = True
        log_guard_failure(exc, self.steps_seen)


def log_guard_failure(exc: BaseException, steps_seen: int = 0) -> None:
    """One WARNING line for a guard's own failure: exception type and code location only.

    Never the exception's message: it may quote the payload (a fingerprint path, a value).
    """
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
    log.warning(
        "liveguard: code=%s type=%s at=%s after %d steps; guard disabled for the rest "
        "of this run, the agent continues",
        GUARD_ERROR, type(exc).__name__, where, steps_seen,
    )


def log_violation(violation: Violation, outcome: str) -> None:
    """One WARNING line: code, step, node, count and digest prefix; never step text."""
    detail = violation.detail
    digest = detail.get("digest")
    if digest is None and isinstance(detail.get("digests"), list):
        digest = ",".join(str(d) for d in detail["digests"])
    log.warning(
        "liveguard: %s at step %d (node=%s, count=%d, digest=%s); %s",
        violation.code, violation.step, violation.node, violation.count, digest or "-", outcome,
    )


# -- policy -------------------------------------------------------------------------------------
def default_policy(graph: Any) -> Policy:
    """``Policy.from_env()``, or the tool-agent preset for a ``create_agent``-shaped graph."""
    nodes = getattr(graph, "nodes", None)
    names = {n for n in nodes if isinstance(n, str)} if isinstance(nodes, Mapping) else set()
    names = {n for n in names if not n.startswith("__")}
    hooks = {n for n in names if _HOOK_NODE.search(n)}
    if frozenset(names - hooks) in _AGENT_CORES:
        agent_nodes = ("model", "tools", "agent", *sorted(hooks))
        return Policy.from_env(Policy.tool_agent(agent_nodes=agent_nodes))
    return Policy.from_env()


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
        self.request = list(self.modes) if "updates" in self.modes else [*self.modes, "updates"]

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
    """One guarded call: reshapes parts for the caller and feeds every update to the guard."""

    __slots__ = ("_guard", "_shape", "_stepper", "interrupted", "nested", "pending", "request",
                 "request_subgraphs")

    def __init__(self, shape: _Shape, run_guard: RunGuard) -> None:
        self._shape = shape
        self.request = shape.request
        self.nested = shape.nested
        self._guard = run_guard
        self._stepper = UpdateStepper()
        self.interrupted = False
        self.pending: Violation | None = None  # a stop found inside a subgraph
        self.request_subgraphs = shape.inner

    def process(self, part: Any) -> tuple[Any, Violation | None]:
        shape = self._shape
        ns, mode, payload = shape.split(part)
        violation = None
        if mode == "updates" and isinstance(payload, Mapping) and not ns:  # subgraphs: the watcher
            if _INTERRUPT in payload:
                self.interrupted = True
            violation = self._guard.check(lambda: self._stepper.feed(payload))
        return (shape.outward(part, ns, mode, payload) if shape.wants(ns, mode) else _SKIP), violation

    def finish(self) -> Violation | None:
        return None if self.interrupted else self._guard.finish()

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

    def stop_part(self, value: dict[str, Any]) -> Any:
        """An ``updates`` part naming the stop, in the caller's shape (or _SKIP)."""
        shape = self._shape
        payload = {_LIVEGUARD: value}
        if "updates" not in shape.modes:
            return _SKIP
        if shape.v2:
            return {"type": "updates", "ns": (), "data": payload}
        return shape.outward(None, (), "updates", payload)


# -- thread state for guard(): one record per thread, kept in the graph's checkpointer -----------
class _ThreadStore:
    """The thread's liveness state in the checkpointer, beside the graph's own checkpoints.

    One checkpoint under ``checkpoint_ns="__liveguard__"`` (a namespace LangGraph never
    uses) with a fixed id, overwritten on each save: one row per thread, read once at the
    start of a call and written once at its end; ``delete_thread`` removes it with the
    thread. Works with any ``BaseCheckpointSaver`` (memory, SQLite, Postgres).
    """

    __slots__ = ("config", "saver")

    def __init__(self, saver: Any, thread_id: str, ns: str) -> None:
        self.saver = saver
        self.config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": THREAD_NS + ns,
                                        "checkpoint_id": _RECORD_ID}}

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

    def load(self) -> dict[str, Any] | None:
        found = self.saver.get_tuple(self.config)
        return _record_value(found)

    async def aload(self) -> dict[str, Any] | None:
        try:
            found = await self.saver.aget_tuple(self.config)
        except NotImplementedError:
            found = self.saver.get_tuple(self.config)
        return _record_value(found)

    def _put_args(self, value: dict[str, Any]) -> tuple[Any, ...]:
        from langgraph.checkpoint.base import empty_checkpoint

        checkpoint = empty_checkpoint()
        checkpoint["id"] = _RECORD_ID
        checkpoint["channel_values"] = {THREAD_KEY: value}
        checkpoint["channel_versions"] = {THREAD_KEY: "1"}
        config = {"configurable": {k: v for k, v in self.config["configurable"].items()
                                   if k != "checkpoint_id"}}
        return config, checkpoint, {"source": "update", "step": -1, "parents": {}}, {THREAD_KEY: "1"}

    def save(self, value: dict[str, Any]) -> None:
        self.saver.put(*self._put_args(value))

    async def asave(self, value: dict[str, Any]) -> None:
        try:
            await self.saver.aput(*self._put_args(value))
        except NotImplementedError:
            self.saver.put(*self._put_args(value))


def _record_value(found: Any) -> dict[str, Any] | None:
    if found is None:
        return None
    value = found.checkpoint.get("channel_values", {}).get(THREAD_KEY)
    return value if isinstance(value, dict) else None


class _GuardCall:
    """One guarded call's thread state: the Monitor to continue from and any saved stop."""

    __slots__ = ("guarded", "record", "run", "store")

    def __init__(self, guarded: GuardedGraph, store: _ThreadStore | None,
                 record: dict[str, Any] | None, shape: _Shape) -> None:
        settings = guarded._lg
        self.guarded = guarded
        self.store = store
        self.record: dict[str, Any] = dict(record or {})
        monitor = None
        snapshot = self.record.get("m")
        if snapshot:
            try:
                monitor = Monitor.restore(snapshot, settings.policy, settings.allow_set)
            except Exception as exc:  # a guard failure never kills the graph: start afresh
                log_guard_failure(exc)
        if monitor is not None:
            monitor.new_run()
        self.run = _StreamRun(shape, RunGuard(
            settings.policy, settings.allow_set, severity=settings.severity,
            warn=settings.exit_behavior in ("warn", "continue"), monitor=monitor,
        ))

    @property
    def stop(self) -> Violation | None:
        stop = self.record.get("stop")
        return Violation.model_validate(stop) if stop else None

    def dump(self, stop: Violation | None) -> dict[str, Any] | None:
        if self.store is None:
            return None
        monitor = self.run._guard.monitor
        record = dict(self.record)
        if monitor is not None:
            record["m"] = monitor.snapshot()
        if stop is not None:
            record["stop"] = stop.model_dump(mode="json")
            record["held"] = self.guarded._lg.exit_behavior == "interrupt"
        return record


class _Settings:
    """A guard's settings (kept as one attribute so ``Pregel.copy`` carries them along)."""

    __slots__ = ("_nested", "allow_set", "ceiling", "exit_behavior", "inner", "per_call_told",
                 "policy", "severity")

    def __init__(self, *, inner: Any, policy: Policy, allow_set: AllowSet | None,
                 exit_behavior: ExitBehavior, severity: SeverityFloor, ceiling: int) -> None:
        self.inner = inner
        self.policy = policy
        self.allow_set = allow_set
        self.exit_behavior: ExitBehavior = exit_behavior
        self.severity: SeverityFloor = severity
        self.ceiling = ceiling
        self._nested: bool | None = None
        self.per_call_told = False

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

    def _begin(self, config: Any, stream_mode: Any, kwargs: Mapping[str, Any],
               record: dict[str, Any] | None, store: _ThreadStore | None) -> _GuardCall:
        if store is None and not self._lg.per_call_told:
            self._lg.per_call_told = True
            log.info("liveguard: no checkpointer or thread_id: liveness is per call, nothing is "
                     "kept between calls")
        shape = _Shape(stream_mode, getattr(self, "stream_mode", "values"), kwargs,
                       nested=self._lg.nested(self))
        return _GuardCall(self, store, record, shape)

    def _resume(self, call: _GuardCall, input: Any) -> tuple[Any, bool]:
        """(input to run, run it?) for a thread the guard holds or stopped."""
        stop = call.stop
        if stop is None:
            return input, True
        decision = getattr(input, "resume", None) if call.record.get("held") else None
        action = decision.get("action") if isinstance(decision, Mapping) else decision
        if action in ("approve", "edit"):
            call.record.pop("stop", None)
            call.record.pop("held", None)
            call.record.pop("m", None)
            call.run = _GuardCall(self, call.store, call.record, call.run._shape).run
            if action == "edit":
                from langgraph.types import Command

                update = decision.get("update") if isinstance(decision, Mapping) else None
                return Command(update=update or {}), True
            return None, True
        if action == "reject":
            call.record["held"] = False
        return input, False

    def _stopped(self, call: _GuardCall) -> NoProgressError | None:
        """At once, without running a node: the saved stop of a stopped thread."""
        stop = call.stop
        assert stop is not None
        if call.record.get("held"):
            log_violation(stop, "thread held: resume with Command(resume='approve'|'reject')")
            return None
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

            part = call.run.stop_part(value)
            interrupt = Interrupt(value={"liveguard": {**value, "options": ["approve", "reject",
                                                                             "edit"]}},
                                  id="liveguard")
            return _interrupt_part(call.run._shape, interrupt) if part is not _SKIP else _SKIP, None
        return call.run.stop_part(value), None

    # -- streaming ------------------------------------------------------------------------------
    def stream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> Iterator[Any]:
        """The graph's ``stream``, guarded; every other execution method runs through it."""
        store = _ThreadStore.of(self, config)
        record = _safe(store.load) if store is not None else None
        call = self._begin(config, stream_mode, kwargs, record, store)
        stop: Violation | None = None
        try:
            if call.stop is not None:
                input, go = self._resume(call, input)
                if not go or call.stop is not None:
                    error = self._stopped(call)  # the record keeps its stop as it is
                    if error is not None:
                        raise error
                    return
            run = call.run
            if store is not None and record is not None and _is_resume(input):
                _safe(lambda: run.seed(self.get_state(config)))  # type: ignore[attr-defined]
            control = _control(config, kwargs)
            config = _watched(config, run, lambda v: self._count(call, v), control, self._lg)
            inner = super().stream(  # type: ignore[misc]
                input, config, stream_mode=run.request,
                **{**kwargs, "subgraphs": run.request_subgraphs, "control": control},
            )
            with closing(inner):
                try:
                    for part in inner:
                        out, found = run.process(part)
                        if out is not _SKIP:
                            yield out
                        stop = self._count(call, found) if found is not None else None
                        if (stop := stop or run.pending) is not None:
                            control.request_drain("liveguard")
                            extra, error = self._on_violation(call, stop)
                            if extra is not _SKIP:
                                yield extra
                            if error is not None:
                                raise error
                            return
                except Exception as exc:
                    inside = _subgraph_stop(run, exc)
                    if inside is None:
                        raise
                    stop = inside
                    extra, error = self._on_violation(call, stop)
                    if extra is not _SKIP:
                        yield extra
                    if error is not None:
                        raise error from None
                    return
                if (found := run.finish()) is not None:
                    stop = found
                    if self._lg.exit_behavior == "error":
                        raise NoProgressError(found)
        finally:
            if store is not None and (value := call.dump(stop)) is not None:
                _safe(lambda: store.save(value))

    async def astream(  # noqa: PLR0915 - the async twin of stream, kept line for line alike
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The graph's ``astream``, guarded; ``ainvoke`` / ``astream_events`` run through it."""
        store = _ThreadStore.of(self, config)
        record = await _asafe(store.aload) if store is not None else None
        call = self._begin(config, stream_mode, kwargs, record, store)
        stop: Violation | None = None
        try:
            if call.stop is not None:
                input, go = self._resume(call, input)
                if not go or call.stop is not None:
                    error = self._stopped(call)  # the record keeps its stop as it is
                    if error is not None:
                        raise error
                    return
            run = call.run
            if store is not None and record is not None and _is_resume(input):
                state = await _asafe(lambda: self.aget_state(config))  # type: ignore[attr-defined]
                _safe(lambda: run.seed(state))
            control = _control(config, kwargs)
            config = _watched(config, run, lambda v: self._count(call, v), control, self._lg)
            inner = super().astream(  # type: ignore[misc]
                input, config, stream_mode=run.request,
                **{**kwargs, "subgraphs": run.request_subgraphs, "control": control},
            )
            try:
                try:
                    async for part in inner:
                        out, found = run.process(part)
                        if out is not _SKIP:
                            yield out
                        stop = self._count(call, found) if found is not None else None
                        if (stop := stop or run.pending) is not None:
                            control.request_drain("liveguard")
                            extra, error = self._on_violation(call, stop)
                            if extra is not _SKIP:
                                yield extra
                            if error is not None:
                                raise error
                            return
                except Exception as exc:
                    inside = _subgraph_stop(run, exc)
                    if inside is None:
                        raise
                    stop = inside
                    extra, error = self._on_violation(call, stop)
                    if extra is not _SKIP:
                        yield extra
                    if error is not None:
                        raise error from None
                    return
                if (found := run.finish()) is not None:
                    stop = found
                    if self._lg.exit_behavior == "error":
                        raise NoProgressError(found)
            finally:
                await inner.aclose()
        finally:
            if store is not None and (value := call.dump(stop)) is not None:
                await _asafe(lambda: store.asave(value))

    def _count(self, call: _GuardCall, found: Violation) -> Violation | None:
        """The violation to stop on (``"continue"``: only at the ceiling)."""
        if self._lg.exit_behavior != "continue":
            return found
        seen = int(call.record.get("violations", 0)) + 1
        call.record["violations"] = seen
        log_violation(found, f"run continues ({seen}/{self._lg.ceiling}, exit_behavior=continue)")
        return found if seen >= self._lg.ceiling else None

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


def _watched(config: Any, run: _StreamRun, decide: Callable[[Violation], Violation | None],
             control: Any, settings: _Settings) -> Any:
    """``config`` plus a callback handler that sees every subgraph node's output.

    LangChain calls it in the node's own thread as the node ends, so a loop inside a
    subgraph is stopped at the violating step: in ``"error"`` mode by raising
    ``NoProgressError`` from the node; otherwise by draining the run (the subgraph stops
    before its next step) and ending as the behaviour says.
    """
    if not run.nested:
        return config
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.runnables.config import merge_configs

    configurable = (config or {}).get("configurable") or {}
    base = len([s for s in str(configurable.get("checkpoint_ns") or "").split("|") if s])

    class SubgraphWatch(BaseCallbackHandler):
        raise_error = True
        run_inline = True

        def __init__(self) -> None:
            self.names: dict[Any, str] = {}

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                           metadata: Any = None, **kwargs: Any) -> None:
            meta = metadata or {}
            node = meta.get("langgraph_node")
            ns = meta.get("langgraph_checkpoint_ns")
            if node is None or kwargs.get("name") != node or not isinstance(ns, str):
                return
            names = [segment.split(":", 1)[0] for segment in ns.split("|")][base:]
            if len(names) > 1:  # a node of a subgraph, not of this graph
                self.names[run_id] = ":".join(names)

        def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
            name = self.names.pop(run_id, None)
            if name is None or run.pending is not None:
                return
            found = run.subgraph_step(name, outputs)
            stop = decide(found) if found is not None else None
            if stop is None:
                return
            run.pending = stop
            control.request_drain("liveguard")
            if settings.exit_behavior == "error":
                raise NoProgressError(stop)

        def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            self.names.pop(run_id, None)

    return merge_configs(config, {"callbacks": [SubgraphWatch()]})


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


def _interrupt_part(shape: _Shape, interrupt: Any) -> Any:
    payload = {_INTERRUPT: (interrupt,)}
    if shape.v2:
        return {"type": "updates", "ns": (), "data": payload}
    return shape.outward(None, (), "updates", payload)


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
) -> GuardedGraph:
    """Guard a compiled LangGraph graph: its threads stop at the first liveness violation.

    ``policy`` defaults to :func:`default_policy` (the workflow preset, or the tool-agent
    preset for a ``create_agent`` graph, with environment overrides). ``exit_behavior``:
    ``"error"`` (default), ``"end"``, ``"continue"``, ``"interrupt"`` or ``"warn"`` (see the
    module docstring); ``on_violation`` is its deprecated name (``"raise"`` = ``"error"``).
    Arguments are validated here: a bad policy or allow-set fails now, not mid-run.
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
    settings = _Settings(inner=graph, policy=policy, allow_set=allow_set,
                         exit_behavior=behavior, severity=severity, ceiling=ceiling)
    cls = _guarded_class(type(graph))
    guarded: GuardedGraph = object.__new__(cls)
    guarded.__dict__.update({k: v for k, v in graph.__dict__.items() if k != "__orig_class__"})
    guarded._lg = settings
    return guarded
