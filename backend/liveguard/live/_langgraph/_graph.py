"""The guarded graph: ``guard(graph)`` and the class whose ``stream`` / ``astream`` are guarded."""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final

from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.errors import NoProgressError
from liveguard.live._langgraph._policy import default_policy
from liveguard.live._langgraph._record import (
    CHECKPOINTER_KEY,
    MISSING,
    Chain,
    Recorder,
    ThreadStore,
    athread,
    recording,
)
from liveguard.live._langgraph._shapes import (
    SKIP,
    Shape,
    StreamRun,
    each_part,
    interrupt_parts,
)
from liveguard.live._langgraph._watch import run_control, subgraph_stop, watched
from liveguard.live.hitl import Edit, InvalidDecision, with_error
from liveguard.live.thread_guard import (
    GUARD_ERROR,
    ExitBehavior,
    LiveSettings,
    SeverityFloor,
    ThreadSession,
    decide_hold,
    hold_request,
    input_step,
    live_settings,
    log,
    log_guard_failure,
    log_violation,
    read_chain,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from liveguard.core.allowset import AllowSet
    from liveguard.live.hitl import HoldRequest
    from liveguard.live.notify import Notifier

__all__ = ["GuardSettings", "GuardedGraph", "guard"]


class _Plan:
    """What a call on a held or stopped thread does: run on (``go`` with ``input``), or not.

    ``part`` is yielded to the caller, ``error`` raised; ``record`` (stop, held) is saved
    with the call's hold and audit; ``rewrite`` replaces the hold's pending interrupt
    (``None`` drops it; ``SKIP`` leaves it); ``notify`` is sent to the notifiers.
    """

    __slots__ = ("error", "go", "input", "notify", "part", "record", "rewrite")

    def __init__(self, *, go: bool = False, input: Any = None, part: Any = SKIP,
                 error: NoProgressError | None = None,
                 record: tuple[Violation | None, bool] | None = None, rewrite: Any = SKIP,
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
    """One guarded call: the thread's session (shared with the other calls inside the thread
    right now, if any), its record keeper, and the saved stop it found."""

    __slots__ = ("guarded", "joined", "key", "origin", "recorder", "request", "run", "session",
                 "stop_found", "store")

    def __init__(self, guarded: GuardedGraph, store: ThreadStore | None, chain: Chain,
                 stop: tuple[Violation | None, bool], shape: Shape, *,
                 hold: Mapping[str, Any] | None = None,
                 audit: Sequence[Mapping[str, Any]] = ()) -> None:
        settings = guarded._lg.live
        self.guarded = guarded
        self.store = store
        self.request: HoldRequest | None = None  # the hold this call raises
        self.origin = chain.origin  # the checkpoint the call resumes from
        monitor = read_chain(chain.records, settings.policy, settings.allow_set)
        session = ThreadSession.load(settings, monitor, stop, hold=hold, audit=audit)
        self.key = None if store is None else (id(store.saver), store.thread_id, store.ns)
        self.session, self.joined = _join(self.key, session)
        self.stop_found = self.session.stop is not None
        self.recorder = None if store is None else Recorder(self.session, store.ns, chain)
        self.run = StreamRun(shape, self.session)

    @property
    def stop(self) -> Violation | None:
        return self.session.stop if self.stop_found else None

    @property
    def held(self) -> bool:
        return self.session.held

    @property
    def hold(self) -> dict[str, Any]:
        return self.session.hold

    @property
    def audit(self) -> list[dict[str, Any]]:
        return self.session.audit

    def leave(self) -> None:
        _leave(self.key, self.session)


_LIVE: dict[tuple[int, str, str], list[Any]] = {}
"""(saver, thread, namespace) -> [session, calls inside]: the threads a call is inside right now."""
_LIVE_LOCK = threading.Lock()


def _join(key: tuple[int, str, str] | None, session: ThreadSession) -> tuple[ThreadSession, bool]:
    """The session of the thread's call under way, if any (overlapping calls are judged with each
    other's steps), else ``session``, registered; ``True`` when joined."""
    if key is None:
        return session, False
    with _LIVE_LOCK:
        live = _LIVE.get(key)
        if live is None:
            _LIVE[key] = [session, 1]
            return session, False
        live[1] += 1
        return live[0], True


def _leave(key: tuple[int, str, str] | None, session: ThreadSession) -> None:
    if key is None:
        return
    with _LIVE_LOCK:
        live = _LIVE.get(key)
        if live is not None and live[0] is session:
            live[1] -= 1
            if live[1] <= 0:
                del _LIVE[key]


class GuardSettings:
    """A guard's settings (kept as one attribute so ``Pregel.copy`` carries them along)."""

    __slots__ = ("_nested", "inner", "live", "node_names", "notifiers", "per_call_told")

    def __init__(self, *, inner: Any, live: LiveSettings, notifiers: Sequence[Notifier] = ()) -> None:
        self.inner = inner
        self.live = live
        self.notifiers: tuple[Notifier, ...] = tuple(notifiers)
        self._nested: bool | None = None
        self.per_call_told = False
        nodes = getattr(inner, "nodes", None)
        self.node_names: frozenset[str] = frozenset(
            n for n in (nodes if isinstance(nodes, Mapping) else ()) if isinstance(n, str))

    @property
    def policy(self) -> Policy:
        return self.live.policy

    @property
    def allow_set(self) -> AllowSet | None:
        return self.live.allow_set

    @property
    def exit_behavior(self) -> ExitBehavior:
        return self.live.exit_behavior

    @property
    def severity(self) -> SeverityFloor:
        return self.live.severity

    @property
    def ceiling(self) -> int:
        return self.live.ceiling

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


class GuardedGraph:
    """A compiled LangGraph graph whose threads stop at the first liveness violation.

    ``guard(graph)`` returns an instance of a subclass of both this class and the graph's
    own class (``CompiledStateGraph``, ``Pregel``): a Pregel whose ``stream`` / ``astream``
    are guarded. Every public execution method of a Pregel (``invoke``, ``ainvoke``,
    ``batch``, ``abatch``, ``stream_events``, ``astream_events``, ...) runs through them,
    ``with_config`` returns a guarded copy, and the object can be a node of another graph
    or the graph served from ``langgraph.json``.
    """

    _lg: GuardSettings

    def __init__(self, *args: Any, _lg: GuardSettings, **kwargs: Any) -> None:
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

    def _begin(self, stream_mode: Any, kwargs: Mapping[str, Any], store: ThreadStore | None,
               chain: Chain, record: tuple[Any, ...]) -> _GuardCall:
        if store is None and not self._lg.per_call_told:
            self._lg.per_call_told = True
            log.info("liveguard: no checkpointer or thread_id: liveness is per call, nothing is "
                     "kept between calls")
        shape = Shape(stream_mode, getattr(self, "stream_mode", "values"), kwargs,
                       nested=self._lg.nested(self))
        stop, held, hold, audit = record
        return _GuardCall(self, store, chain, (stop, held), shape, hold=hold, audit=audit)

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
        answer = resume.get(iid, MISSING) if isinstance(resume, Mapping) and iid else MISSING
        if answer is MISSING:
            answer = resume
        decision = call.session.answer(decide_hold(answer, request), at=_now())
        if isinstance(decision, InvalidDecision):
            again = with_error(request, decision)
            call.hold["error"] = again["error"]
            return _Plan(part=self._hold_part(call, again, values), record=(stop, True), rewrite=again,
                         notify=again)
        if decision.type == "reject":
            return _Plan(record=(stop, False), rewrite=None, part=call.run.stop_part(
                {"code": stop.code, "step": stop.step, "node": stop.node, "count": stop.count}))
        from langgraph.types import Command

        # the core cleared the stop and started the windows afresh: the next record is whole
        if call.recorder is not None:
            call.recorder.force = True
        go = {iid: answer} if iid else None
        if isinstance(decision, Edit):
            return _Plan(go=True, record=(None, False),
                         input=Command(update=decision.value, resume=go))
        return _Plan(go=True, record=(None, False), input=Command(resume=go) if go else None)

    def _hold_part(self, call: _GuardCall, request: HoldRequest, values: Any = None) -> Any:
        """The hold's parts, where LangGraph puts an interrupt's (see :func:`interrupt_parts`)."""
        from langgraph.types import Interrupt

        interrupt = Interrupt(value=dict(request), id=str(call.hold.get("id") or "liveguard"))
        return interrupt_parts(call.run._shape, interrupt, values)

    def _apply(self, call: _GuardCall, plan: _Plan) -> None:
        """The record I/O of a plan (sync; the async path runs it in a worker thread)."""
        store = call.store
        if store is None:
            return
        if plan.record is not None:
            stop, held = plan.record
            _safe(lambda: store.save_stop(stop, held, hold=call.hold if held else None,
                                          audit=call.audit))
        if plan.rewrite is not SKIP and call.hold:
            _safe(lambda: store.set_hold(call.hold, plan.rewrite))
        if plan.notify is not None:
            self._notify(store, plan.notify, str(call.hold.get("id") or ""))

    def _notify(self, store: ThreadStore, request: Mapping[str, Any], interrupt_id: str) -> None:
        """Queue the notifiers (called once the hold is stored); they run off the call, on
        :func:`liveguard.live.notify.notify_later`'s worker: a slow receiver never delays it."""
        notifiers = self._lg.notifiers
        if not notifiers:
            return
        from liveguard.live.notify import Coords, notify_later

        coords = Coords(thread_id=store.thread_id, checkpoint_ns=store.ns,
                        interrupt_id=interrupt_id or None)
        _safe(lambda: notify_later(notifiers, request, coords))

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
            state_config["configurable"][CHECKPOINTER_KEY] = store.saver
            snapshot = _safe(lambda: self.get_state(state_config))  # type: ignore[attr-defined]
            hold = _safe(lambda: store.put_hold(snapshot, request, iid)) or hold
        call.session.hold = hold
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
        if stop.code != GUARD_ERROR:  # calls inside the thread right now see it at once
            call.session.stop = stop
        if behavior == "error":
            return SKIP, NoProgressError(stop)
        if behavior == "interrupt":
            from langgraph.types import Interrupt

            iid = uuid.uuid4().hex  # 32 hex digits: LangGraph accepts it in a resume map
            call.request = request = hold_request(stop, edit="update", interrupt_id=iid)
            interrupt = Interrupt(value=dict(request), id=iid)
            return interrupt_parts(call.run._shape, interrupt, call.run.values), None
        return call.run.stop_part(value), None

    def _prepare(self, call: _GuardCall, input: Any, config: Any,
                 kwargs: Mapping[str, Any]) -> tuple[Any, Any, Violation | None]:
        """(config to run with, the run's control, a stop at the input)."""
        run = call.run
        recorder, store = call.recorder, call.store
        control = run_control(config, kwargs)
        config = watched(config, run, control, self._lg)
        if recorder is not None and store is not None:
            view = recording(store.saver, recorder)
            if view is not None:
                configurable = dict((config or {}).get("configurable") or {})
                configurable[CHECKPOINTER_KEY] = view
                config = {**(config or {}), "configurable": configurable}
                run.on_checkpoint = recorder.mark
            else:  # a saver that cannot be viewed: a row of the whole windows per checkpoint
                call.recorder = None
                run.on_checkpoint = functools.partial(_row_per_checkpoint, call)
            _safe(recorder.attach)
        found = None
        if not _is_resume(input) and self._lg.allow_set is None and call.origin is not None:
            # a new request on a thread with history: the rules see the user's turn
            step = _safe(lambda: input_step(input))
            if step is not None:
                found = run.feed([step])
        return config, control, found

    # -- streaming ------------------------------------------------------------------------------
    def _call(
        self, input: Any, config: Any, stream_mode: Any, kwargs: Mapping[str, Any]
    ) -> Generator[tuple[Any, ...], Any, None]:
        """One guarded call, as a sequence of operations: ``(_OUT, part)`` goes to the caller;
        the others are the call's I/O (the thread record, the graph's state, the inner stream),
        which :meth:`stream` does in this thread and :meth:`astream` awaits (a sync saver in a
        worker thread). One body for both, so the sync and async paths cannot drift apart.
        """
        store = ThreadStore.of(self, config)
        record: tuple[Any, ...] = (None, False, {}, [])
        chain = Chain([], None, 0, None)
        if store is not None:
            record = (yield (_IO, store.load_record, True)) or record
            chain = (yield (_IO, functools.partial(store.load_chain, _checkpoint_of(config)),
                            True)) or chain
        call = self._begin(stream_mode, kwargs, store, chain, record)
        try:
            yield from self._guarded(call, input, config, kwargs)
        finally:
            call.leave()

    def _guarded(  # noqa: PLR0915 - one call's whole life, read top to bottom
        self, call: _GuardCall, input: Any, config: Any, kwargs: Mapping[str, Any]
    ) -> Generator[tuple[Any, ...], Any, None]:
        store = call.store
        stop: Violation | None = None
        if call.stop is not None:
            values = None
            if call.held and "values" in call.run._shape.modes:
                values = getattr((yield (_STATE, config)), "values", None)
            plan = self._resume(call, input, values)
            yield (_IO, functools.partial(self._apply, call, plan), False)  # async: off the event loop
            for out_part in each_part(plan.part):
                yield (_OUT, out_part)
            if plan.error is not None:
                raise plan.error
            if not plan.go:
                return
            input = plan.input  # a person approved or edited: the run goes on
            call.stop_found = False
        run = call.run
        if store is not None and call.origin is not None and _is_resume(input):
            state = yield (_STATE, config)
            _safe(lambda: run.seed(state))
        config, control, stop = self._prepare(call, input, config, kwargs)
        run.base = call.origin
        recorder = call.recorder
        sync = _durability(config, kwargs) == "sync"
        try:
            if stop is not None:
                extra, error = self._on_violation(call, stop)
                for out_part in each_part(extra):
                    yield (_OUT, out_part)
                if error is not None:
                    raise error
                return
            yield (_OPEN, input, config, run.request,
                   {**kwargs, "subgraphs": run.request_subgraphs, "control": control})
            try:
                try:
                    while (part := (yield (_NEXT,))) is not _END:
                        out, found = run.process(part)
                        if sync and run.base is not None and recorder is not None and recorder.pending():
                            yield from self._row(call, run.base)
                        if out is not SKIP:
                            yield (_OUT, out)
                        if (stop := found or run.pending) is not None:
                            run.pending = stop
                            control.request_drain("liveguard")
                            extra, error = self._on_violation(call, stop)
                            for out_part in each_part(extra):
                                yield (_OUT, out_part)
                            if error is not None:
                                raise error
                            return
                except Exception as exc:
                    inside = subgraph_stop(run, exc)
                    if inside is None:
                        raise
                    stop = inside
                    extra, error = self._on_violation(call, stop)
                    for out_part in each_part(extra):
                        yield (_OUT, out_part)
                    if error is not None:
                        raise error from None
                    return
                if (found := run.finish()) is not None:
                    stop = found
                    if self._lg.exit_behavior in ("error", "interrupt"):
                        extra, error = self._on_violation(call, found)
                        for out_part in each_part(extra):
                            yield (_OUT, out_part)
                        if error is not None:
                            raise error
            finally:
                yield (_CLOSE,)
        finally:
            recorder = call.recorder
            if recorder is not None and run.base is not None and recorder.pending():
                # steps after the graph's last checkpoint (a stop, an interrupt, the end)
                yield from self._row(call, run.base)
            if store is not None and stop is not None and stop.code != GUARD_ERROR:
                yield (_IO, functools.partial(self._save_stop, call, stop), False)

    def _row(self, call: _GuardCall, base: str) -> Generator[tuple[Any, ...], Any, None]:
        """A row under ``base`` with the steps no checkpoint holds (:meth:`Recorder.row`)."""
        store, recorder = call.store, call.recorder
        if store is None or recorder is None:
            return
        found = _safe(lambda: recorder.row(base))
        if found is not None:
            yield (_IO, functools.partial(store.save_windows, *found), True)

    # -- streaming: the two drivers of _call ------------------------------------------------------
    def stream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> Iterator[Any]:
        """The graph's ``stream``, guarded; every other execution method runs through it."""
        call = self._call(input, config, stream_mode, kwargs)
        inner: Any = None
        reply: Any = None
        error: BaseException | None = None
        while (op := _advance(call, reply, error)) is not None:
            reply, error = None, None
            kind = op[0]
            try:
                if kind is _OUT:
                    try:
                        yield op[1]
                    except GeneratorExit:  # the caller left: the call still closes and saves
                        error = _Closed()
                elif kind is _IO:
                    reply = _safe(op[1]) if op[2] else op[1]()
                elif kind is _STATE:
                    reply = _safe(functools.partial(self.get_state, op[1]))  # type: ignore[attr-defined]
                elif kind is _OPEN:
                    inner = super().stream(op[1], op[2], stream_mode=op[3], **op[4])  # type: ignore[misc]
                elif kind is _NEXT:
                    reply = next(inner, _END)
                else:
                    _close(inner)
            except BaseException as exc:  # back into the call, where it would have raised (its
                error = exc  # finally blocks then close and save, as for any exit)

    async def astream(
        self, input: Any, config: Any = None, *, stream_mode: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """The graph's ``astream``, guarded; ``ainvoke`` / ``astream_events`` run through it."""
        call = self._call(input, config, stream_mode, kwargs)
        inner: Any = None
        reply: Any = None
        error: BaseException | None = None
        while (op := _advance(call, reply, error)) is not None:
            reply, error = None, None
            kind = op[0]
            try:
                if kind is _OUT:
                    try:
                        yield op[1]
                    except GeneratorExit:  # the caller left: the call still closes and saves
                        error = _Closed()
                elif kind is _IO:
                    reply = await (_asafe(functools.partial(athread, op[1])) if op[2] else athread(op[1]))
                elif kind is _STATE:
                    reply = await _asafe(functools.partial(self.aget_state, op[1]))  # type: ignore[attr-defined]
                elif kind is _OPEN:
                    inner = super().astream(op[1], op[2], stream_mode=op[3], **op[4])  # type: ignore[misc]
                elif kind is _NEXT:
                    reply = await anext(inner, _END)
                else:
                    with suppress(NoProgressError):
                        await inner.aclose()
            except BaseException as exc:  # back into the call, where it would have raised (its
                error = exc  # finally blocks then close and save, as for any exit)

    def __repr__(self) -> str:
        name = getattr(self, "name", type(self).__name__)
        return (f"GuardedGraph({name!r}, exit_behavior={self._lg.exit_behavior!r}, "
                f"severity={self._lg.severity!r})")


_OUT: Final = "out"
"""``(_OUT, part)``: a part for the caller."""
_IO: Final = "io"
"""``(_IO, fn, safe)``: the thread record's I/O (``safe``: a failure is logged, the result None)."""
_STATE: Final = "state"
"""``(_STATE, config)``: the graph's state snapshot (None when it cannot be read)."""
_OPEN: Final = "open"
"""``(_OPEN, input, config, stream_mode, kwargs)``: start the unguarded graph's stream."""
_NEXT: Final = "next"
"""``(_NEXT,)``: the stream's next part, or :data:`_END`."""
_CLOSE: Final = "close"
"""``(_CLOSE,)``: close the stream (a task stopped by the watcher while it closes is expected)."""
_END: Any = object()


class _Closed(BaseException):
    """Thrown into a call whose caller left: its ``finally`` blocks close and save, nothing is yielded."""


def _advance(call: Generator[tuple[Any, ...], Any, None], reply: Any,
             error: BaseException | None) -> tuple[Any, ...] | None:
    """The call's next operation, given the last one's result (or its error); None at its end."""
    try:
        return call.throw(error) if error is not None else call.send(reply)
    except (StopIteration, _Closed):
        return None


def _row_per_checkpoint(call: _GuardCall, checkpoint_id: str) -> None:
    """For a saver that cannot be recorded through: the whole windows in a row per checkpoint."""
    store = call.store
    if store is not None and not checkpoint_id.startswith("pending:"):
        _safe(lambda: store.save_windows(checkpoint_id, call.session.windows_value()))


def _durability(config: Any, kwargs: Mapping[str, Any]) -> str:
    """The call's durability mode, as LangGraph resolves it (the argument, the config, "async")."""
    found = kwargs.get("durability")
    if found is None:
        configurable = (config or {}).get("configurable") or {}
        found = configurable.get("__pregel_durability") if isinstance(configurable, Mapping) else None
    return str(found or "async")


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
    :class:`liveguard.live.notify.WebhookNotifier`) called once per ``"interrupt"`` hold; a
    failing one is logged and never releases the hold. Arguments are validated here: a
    bad policy or allow-set fails now, not mid-run.
    """
    if isinstance(graph, GuardedGraph):
        graph = graph.graph
    if not callable(getattr(graph, "stream", None)) or not hasattr(graph, "__dict__"):
        raise TypeError(f"guard() needs a compiled LangGraph graph, got {type(graph).__name__}")
    policy = default_policy(graph) if policy is None else policy
    live = live_settings(policy, allow_set, exit_behavior=exit_behavior, on_violation=on_violation,
                         severity=severity, ceiling=ceiling, who="guard")
    if not all(callable(n) for n in notifiers):
        raise TypeError("notifiers: expected callables notifier(payload, coords)")
    settings = GuardSettings(inner=graph, live=live, notifiers=notifiers)
    cls = _guarded_class(type(graph))
    guarded: GuardedGraph = object.__new__(cls)
    guarded.__dict__.update({k: v for k, v in graph.__dict__.items() if k != "__orig_class__"})
    guarded._lg = settings
    return guarded
