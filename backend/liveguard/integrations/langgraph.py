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
    :class:`GuardedGraph` runs the wrapped graph's own ``stream`` / ``astream`` with
    ``"updates"`` added to whatever ``stream_mode`` the caller asked for. Each root-graph
    ``"updates"`` chunk goes through :class:`~liveguard.readers.stream.UpdateStepper` into a
    fresh :class:`~liveguard.monitor.Monitor` (one per call: ``invoke``, ``stream``, ...).
    The caller gets exactly the chunks, in exactly the shape, the unguarded graph would
    yield (a single mode gives bare chunks, a list of modes ``(mode, chunk)`` tuples,
    ``subgraphs=True`` namespaced tuples, ``version="v2"`` stream parts). On the first
    violation that matches ``severity``, the guard yields that chunk if the caller asked
    for it, then raises :class:`~liveguard.errors.NoProgressError` from inside the loop and
    closes the graph's stream: no further node runs. With a checkpointer the thread keeps
    the offending step's writes and ``get_state(config).next`` names the node that would
    have run next.

``invoke`` / ``ainvoke``
    Built on the guarded stream exactly as LangGraph builds its own ``invoke`` on
    ``stream``: ``stream_mode="values"`` (the default) streams ``["updates", "values"]``
    with ``output_keys`` defaulting to the graph's output channels, returns the last
    ``"values"`` chunk, and adds ``"__interrupt__"`` when the run was interrupted;
    ``version="v2"`` returns a ``GraphOutput``; any other ``stream_mode`` returns the list
    of chunks. When nothing fires, the result equals the unguarded ``invoke``.

``on_violation``
    ``"raise"`` (default) stops the run. ``"warn"`` logs a WARNING on the
    ``liveguard.guard`` logger (code, step, node, count, digest prefix; never text) and
    lets the run go on.

``severity``
    ``"hard"`` (default) acts on hard violations only. ``"soft"`` acts on every violation,
    including end-of-run findings (``dead_end`` with an allow-set), which are checked
    after the graph's last chunk (never after an interrupt): in ``"raise"`` mode that
    raises after the run has completed.

Default policy
    ``Policy.from_env()`` (the workflow preset plus ``AGENT_EVAL_*`` overrides, read when
    ``guard`` is called). A ``create_agent`` / ``create_react_agent`` graph is recognised by
    its nodes (exactly ``model``/``agent`` and ``tools``, plus ``<middleware>.before_model``
    style hook nodes) and gets ``Policy.from_env(Policy.tool_agent(...))`` with those
    nodes exempt from revisit counting. Pass ``policy=`` to choose yourself.

The guard's own failures
    Any exception inside the stepper or the Monitor (a ``FingerprintError`` on a payload
    of an unsupported type, a bug) is logged as ``code=guard_error`` with the exception
    type and code location, never its message, and the guard stands down for the rest of
    that call; the graph runs on.

Limits
    Only root-graph updates are observed (a subgraph's inner steps are not, whatever
    ``subgraphs`` says; its parent node's update is). Each call is a new run: resuming a
    thread after an interrupt starts a fresh Monitor. ``output_keys`` narrows the updates
    the guard sees as it narrows the caller's. ``batch``, ``stream_events`` and other
    Runnable methods reached through attribute passthrough run *unguarded*;
    ``with_config`` returns a guarded graph. A ``GuardedGraph`` is not a Runnable, so it
    cannot be added as a node of another graph: guard the outer graph instead.

LangGraph is never imported by this module (the wrapped graph brings its own), so
``import liveguard.integrations.langgraph`` stays framework-free.
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
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
    "GUARD_ERROR",
    "GuardedGraph",
    "RunGuard",
    "default_policy",
    "guard",
    "log_guard_failure",
    "log_violation",
]

OnViolation = Literal["raise", "warn"]
SeverityFloor = Literal["hard", "soft"]

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

    def __init__(
        self,
        policy: Policy,
        allow_set: AllowSet | None = None,
        *,
        severity: SeverityFloor = "hard",
        warn: bool = False,
    ) -> None:
        self._policy = policy
        self._allow_set = allow_set
        self._severity = severity
        self._warn = warn
        self._monitor: Monitor | None = None
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
    """What the caller asked to see, and what the guard asks the graph for."""

    __slots__ = ("as_list", "modes", "request", "subgraphs", "v2")

    def __init__(self, stream_mode: Any, default_mode: Any, kwargs: Mapping[str, Any]) -> None:
        mode = default_mode if stream_mode is None else stream_mode
        self.modes: tuple[str, ...] = (mode,) if isinstance(mode, str) else tuple(mode)
        # LangGraph yields (mode, chunk) tuples only when stream_mode is a list.
        self.as_list = isinstance(mode, list)
        self.subgraphs = bool(kwargs.get("subgraphs", False))
        self.v2 = kwargs.get("version", "v1") == "v2"
        self.request = list(self.modes) if "updates" in self.modes else [*self.modes, "updates"]

    def split(self, part: Any) -> tuple[Any, str, Any]:
        """(namespace, mode, payload) of one part streamed with ``self.request``."""
        if self.v2:
            return part["ns"], part["type"], part["data"]
        if self.subgraphs:
            ns, mode, payload = part
            return ns, mode, payload
        mode, payload = part
        return (), mode, payload

    def outward(self, part: Any, ns: Any, payload: Any) -> Any:
        """The part as the caller would get it from the unguarded graph."""
        if self.v2 or self.as_list:
            return part
        return (ns, payload) if self.subgraphs else payload


class _StreamRun:
    """One guarded call: reshapes parts for the caller and feeds root updates to the guard."""

    __slots__ = ("_guard", "_shape", "_stepper", "interrupted", "request")

    def __init__(self, shape: _Shape, run_guard: RunGuard) -> None:
        self._shape = shape
        self.request = shape.request
        self._guard = run_guard
        self._stepper = UpdateStepper()
        self.interrupted = False

    def process(self, part: Any) -> tuple[Any, Violation | None]:
        shape = self._shape
        ns, mode, payload = shape.split(part)
        violation = None
        if mode == "updates" and not ns:
            if isinstance(payload, Mapping) and _INTERRUPT in payload:
                self.interrupted = True
            violation = self._guard.check(lambda: self._stepper.feed(payload))
        return (shape.outward(part, ns, payload) if mode in shape.modes else _SKIP), violation

    def finish(self) -> Violation | None:
        return None if self.interrupted else self._guard.finish()


class _Invocation:
    """``invoke`` on top of a stream, as LangGraph's own ``Pregel.invoke`` does it."""

    __slots__ = ("chunks", "interrupts", "latest", "request", "values", "version")

    def __init__(self, stream_mode: str, version: str) -> None:
        self.values = stream_mode == "values"
        self.version = version
        self.request: Any = (
            ["updates", "values"] if self.values and version != "v2" else stream_mode
        )
        self.latest: Any = None
        self.interrupts: list[Any] = []
        self.chunks: list[Any] = []

    def add(self, chunk: Any) -> None:
        if not self.values:
            self.chunks.append(chunk)
        elif self.version == "v2":
            self.latest = chunk["data"]
            self.interrupts.extend(chunk.get("interrupts", ()))
        else:
            mode, payload = chunk if len(chunk) == 2 else chunk[1:]
            if mode == "updates" and isinstance(payload, dict):
                if (found := payload.get(_INTERRUPT)) is not None:
                    self.interrupts.extend(found)
            elif mode == "values":
                self.latest = payload

    def result(self) -> Any:
        if not self.values:
            return self.chunks
        if self.version == "v2":
            from langgraph.types import GraphOutput

            return GraphOutput(value=self.latest, interrupts=tuple(self.interrupts))
        if self.interrupts:
            latest = self.latest
            if isinstance(latest, dict):
                return {**latest, _INTERRUPT: self.interrupts}
            return {_INTERRUPT: self.interrupts}
        return self.latest


# -- the wrapper --------------------------------------------------------------------------------
class GuardedGraph:
    """A compiled LangGraph graph whose runs stop at the first liveness violation.

    ``invoke``, ``ainvoke``, ``stream`` and ``astream`` take the wrapped graph's arguments
    and return what it returns; ``get_graph``, ``get_state``, ``get_state_history`` and any
    other attribute are the wrapped graph's. See the module docstring for the contract.
    """

    def __init__(
        self,
        graph: Any,
        *,
        policy: Policy,
        allow_set: AllowSet | None = None,
        on_violation: OnViolation = "raise",
        severity: SeverityFloor = "hard",
    ) -> None:
        self._graph = graph
        self.policy = policy
        self.allow_set = allow_set
        self.on_violation: OnViolation = on_violation
        self.severity: SeverityFloor = severity

    @property
    def graph(self) -> Any:
        """The wrapped graph (unguarded)."""
        return self._graph

    def _new_run(self, stream_mode: Any, kwargs: Mapping[str, Any]) -> _StreamRun:
        shape = _Shape(stream_mode, getattr(self._graph, "stream_mode", "values"), kwargs)
        run_guard = RunGuard(
            self.policy, self.allow_set, severity=self.severity, warn=self.on_violation == "warn"
        )
        return _StreamRun(shape, run_guard)

    # -- streaming ------------------------------------------------------------------------------
    def stream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> Iterator[Any]:
        """The wrapped graph's ``stream``, guarded; raises ``NoProgressError`` to stop it."""
        run = self._new_run(stream_mode, kwargs)
        inner = self._graph.stream(input, config, stream_mode=run.request, **kwargs)
        with closing(inner):
            for part in inner:
                out, stop = run.process(part)
                if out is not _SKIP:
                    yield out
                if stop is not None:
                    raise NoProgressError(stop)
            if (stop := run.finish()) is not None:
                raise NoProgressError(stop)

    async def astream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The wrapped graph's ``astream``, guarded; raises ``NoProgressError`` to stop it."""
        run = self._new_run(stream_mode, kwargs)
        inner = self._graph.astream(input, config, stream_mode=run.request, **kwargs)
        try:
            async for part in inner:
                out, stop = run.process(part)
                if out is not _SKIP:
                    yield out
                if stop is not None:
                    raise NoProgressError(stop)
            if (stop := run.finish()) is not None:
                raise NoProgressError(stop)
        finally:
            await inner.aclose()

    # -- invoke ---------------------------------------------------------------------------------
    def _invocation(
        self, stream_mode: str, output_keys: Any, version: str, kwargs: dict[str, Any]
    ) -> _Invocation:
        invocation = _Invocation(stream_mode, version)
        kwargs["stream_mode"] = invocation.request
        kwargs["output_keys"] = (
            output_keys if output_keys is not None else getattr(self._graph, "output_channels", None)
        )
        if version != "v1":
            kwargs["version"] = version
        return invocation

    def invoke(
        self,
        input: Any,
        config: Any = None,
        *,
        stream_mode: str = "values",
        output_keys: Any = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        """The wrapped graph's ``invoke``, guarded; raises ``NoProgressError`` to stop it."""
        invocation = self._invocation(stream_mode, output_keys, version, kwargs)
        for chunk in self.stream(input, config, **kwargs):
            invocation.add(chunk)
        return invocation.result()

    async def ainvoke(
        self,
        input: Any,
        config: Any = None,
        *,
        stream_mode: str = "values",
        output_keys: Any = None,
        version: str = "v1",
        **kwargs: Any,
    ) -> Any:
        """The wrapped graph's ``ainvoke``, guarded; raises ``NoProgressError`` to stop it."""
        invocation = self._invocation(stream_mode, output_keys, version, kwargs)
        async for chunk in self.astream(input, config, **kwargs):
            invocation.add(chunk)
        return invocation.result()

    # -- passthrough ----------------------------------------------------------------------------
    def get_graph(self, *args: Any, **kwargs: Any) -> Any:
        return self._graph.get_graph(*args, **kwargs)

    def get_state(self, *args: Any, **kwargs: Any) -> Any:
        return self._graph.get_state(*args, **kwargs)

    def get_state_history(self, *args: Any, **kwargs: Any) -> Any:
        return self._graph.get_state_history(*args, **kwargs)

    def with_config(self, config: Any = None, **kwargs: Any) -> GuardedGraph:
        """The wrapped graph's ``with_config``, guarded with the same settings."""
        return GuardedGraph(
            self._graph.with_config(config, **kwargs),
            policy=self.policy,
            allow_set=self.allow_set,
            on_violation=self.on_violation,
            severity=self.severity,
        )

    def __getattr__(self, name: str) -> Any:
        if name == "_graph":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self._graph, name)

    def __repr__(self) -> str:
        name = getattr(self._graph, "name", type(self._graph).__name__)
        return f"GuardedGraph({name!r}, on_violation={self.on_violation!r}, severity={self.severity!r})"


def guard(
    graph: Any,
    *,
    policy: Policy | None = None,
    allow_set: AllowSet | None = None,
    on_violation: OnViolation = "raise",
    severity: SeverityFloor = "hard",
) -> GuardedGraph:
    """Wrap a compiled LangGraph graph so its runs stop at the first liveness violation.

    ``policy`` defaults to :func:`default_policy` (the workflow preset, or the tool-agent
    preset for a ``create_agent`` graph, with environment overrides). Arguments are
    validated here: a bad policy or allow-set fails now, not mid-run.
    """
    if on_violation not in ("raise", "warn"):
        raise ValueError(f"on_violation must be 'raise' or 'warn', got {on_violation!r}")
    if severity not in ("hard", "soft"):
        raise ValueError(f"severity must be 'hard' or 'soft', got {severity!r}")
    if isinstance(graph, GuardedGraph):
        graph = graph.graph
    if not callable(getattr(graph, "stream", None)):
        raise TypeError(f"guard() needs a compiled LangGraph graph, got {type(graph).__name__}")
    policy = default_policy(graph) if policy is None else policy
    Monitor(policy, allow_set)  # fail fast on a policy the allow-set cannot refine
    return GuardedGraph(
        graph, policy=policy, allow_set=allow_set, on_violation=on_violation, severity=severity
    )
