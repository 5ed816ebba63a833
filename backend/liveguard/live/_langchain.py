"""``LivenessMiddleware`` for ``langchain.agents.create_agent``: thread-level liveness.

::

    from langchain.agents import create_agent
    from liveguard import NoProgressError
    from liveguard.integrations.langchain import LivenessMiddleware

    agent = create_agent(model, tools, middleware=[LivenessMiddleware()], checkpointer=saver)
    try:
        agent.invoke({"messages": [{"role": "user", "content": "..."}]}, config)
    except NoProgressError as exc:
        print(exc.violation.code)          # e.g. tool_no_progress

Liveness is thread state
    The Monitor's bounded state (:meth:`~liveguard.core._monitor.Monitor.snapshot`), the stop
    and the tool-call ledger live in the agent state under ``"liveguard"`` (a private
    channel of the middleware's ``state_schema``, as LangChain's ``ToolCallLimitMiddleware``
    keeps ``thread_tool_call_count``). With a checkpointer they are saved with the thread:
    one thread has one liveness history across invokes, human-in-the-loop resumes and
    process restarts. Without a checkpointer every invocation starts fresh. What belongs
    to one invocation (its live :class:`~liveguard.live.thread_guard.ThreadSession`, its
    debounce count, whether the guard stood down) lives under ``"liveguard_run"``, a
    private ``UntrackedValue`` channel (as ``run_tool_call_count``): never checkpointed,
    empty at the start of every invocation. The middleware itself keeps nothing between
    calls: no cache, no lock, so one instance serves any number of threads and processes.
    The decisions are :mod:`liveguard.live.thread_guard`'s, the same as ``guard()``'s.

What it observes, at each model call (``wrap_model_call``), from the state
    * the last tool turn: the ``ToolMessage``\\ s answering the last ``AIMessage``'s tool
      calls, once per turn, as ``Step(node="tools", tool=, args=, result=, error=)``; a
      parallel turn is one turn (see :class:`~liveguard.core._monitor.Monitor`);
    * the model's response: ``Step(node="model", output=<AIMessage>)``.

    Reading tool results from the checkpointed state, not from the tool hooks, is what
    makes the result the same in one process or one process per resume, and the same
    whatever order parallel calls finish in.

At a violation: ``exit_behavior`` (LangChain's vocabulary) and ``severity``
    ``severity="hard"`` (default) acts on hard violations only; ``"soft"`` on every one,
    as ``guard(severity=...)``.
    ``"error"`` (default)
        The run ends with a stop message (``"Stopped by liveguard: <code> at step <n> ..."``:
        the rule in words, the steps that repeat and how to clear the thread; the violation
        in ``response_metadata["liveguard"]``), the stop is saved with the
        thread, and :class:`~liveguard.errors.NoProgressError` is raised by the
        middleware's ``after_model`` hook. A violating model response is dropped (its
        tool calls never run).
    ``"end"``
        The same stop message and saved stop, without raising.
    ``"continue"``
        The debounce. On ``tool_no_progress`` the repeated (tool, args) is blocked: every
        later identical call is answered with a ``ToolMessage`` (status ``"error"``) saying
        that this exact call was already tried N times with the same outcome and was not
        run again, and that the model should change the input or stop. The debounced
        call never reaches the tool. After ``ceiling`` debounced calls in one run (default
        3), or at any other hard violation, the run ends as with ``"end"``.
    ``"interrupt"``
        A person decides: the model call interrupts with a LangChain ``HITLRequest``
        (:func:`liveguard.live.hitl.liveness_request`, ``edit_key="message"``: codes, counts
        and steps, never text) through :func:`liveguard.live.hitl.ask`. Resume with
        ``Command(resume={"decisions": [{"type": "approve"}]})`` (the windows are cleared
        and the run goes on), an ``edit`` whose ``edited_action.args.message`` is added as
        a human turn before the model is called, or a ``reject`` (ends as ``"end"``);
        ``by`` / ``note`` go into the thread's audit (codes, who, when; never text). A
        malformed answer re-asks with ``error`` and never stands the guard down.
        ``notifiers`` are called once per hold, off the model call, once the hold is stored
        (:func:`liveguard.live.notify.notify_later`): a slow receiver never delays it.
    ``"warn"``
        A WARNING on the ``liveguard.guard`` logger; the run goes on.

    ``on_violation=`` is the deprecated name of ``exit_behavior`` (``"raise"`` means
    ``"error"``).

A stopped thread stays stopped
    A later invoke or resume on a thread whose last stop was hard answers at once from
    the saved stop, without calling the model or a tool (``"error"`` ends with the stop
    message and raises the same ``NoProgressError`` from ``after_model``, so a retry
    middleware around it sees the message, never the exception; ``"end"`` / ``"continue"``
    return the stop message;
    ``"interrupt"`` asks the person again), until someone clears it:
    :func:`liveguard.clear` or ``liveguard threads clear``.

The tool-call ledger
    Each executed (tool, args digest) pair gets one entry: the outcome flag (``ok``,
    ``failed``, ``nonretryable`` for ``"retryable": false``), how often, and whether it is
    blocked. The last ``ledger_size`` (16) entries are kept in the state and appended to
    the system message of every model request, a part of the context that
    ``SummarizationMiddleware`` does not rewrite: the model still sees the earlier
    identical failure after the bulky result was summarised away. The ledger itself is
    :mod:`liveguard.live._ledger` (framework-free).

Run and thread limits
    ``Policy(run_steps=..., thread_steps=...)``: ``run_*`` resets per invocation (a resume
    is a new invocation), ``thread_*`` persists with the thread (``step_limit``).

Placement
    First in ``middleware=[...]``. It adds one graph node (``LivenessMiddleware.after_model``,
    which raises in ``"error"`` mode) and wraps model and tool calls; a retry middleware
    around it sees the stop message, never an exception, so it cannot restart a stopped run.

The guard's own failures (an unfingerprintable payload, a bug) are logged on the
``liveguard.guard`` logger by code and exception type, and the guard stands down for that
call; the agent continues. Logs carry codes, counts, digest prefixes, node names and step
indices, never step text.

Importing this module imports LangChain; ``import liveguard`` never does.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Final, NotRequired

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.types import Command

from liveguard.core._monitor import Monitor, _nonretryable
from liveguard.core.messages import UNKNOWN_TOOL, tool_call_args, tool_call_name, tool_message_step
from liveguard.core.model import Step, Violation
from liveguard.core.policy import Policy
from liveguard.core.stop_text import stop_text
from liveguard.errors import NoProgressError
from liveguard.live._ledger import Ledger, args_digest, debounce_text
from liveguard.live.hitl import Edit, HoldRequest, InvalidDecision, ReviewDecision, aask, ask
from liveguard.live.thread_guard import (
    DAMAGED,
    EXIT_BEHAVIORS,
    ExitBehavior,
    SeverityFloor,
    ThreadSession,
    audit_value,
    hold_request,
    input_step,
    live_settings,
    log,
    log_guard_failure,
    read_audit,
    read_stop,
    read_windows,
    stop_value,
    windows_value,
)
from liveguard.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from liveguard.core.allowset import AllowSet
    from liveguard.live.notify import Notifier

__all__ = [
    "EXIT_BEHAVIORS",
    "MODEL_NODE",
    "STATE_KEY",
    "TOOLS_NODE",
    "LivenessMiddleware",
    "LivenessState",
    "stop_message",
]

MODEL_NODE: Final = "model"
"""Node name of model steps (``create_agent``'s model node)."""
TOOLS_NODE: Final = "tools"
"""Node name of tool steps (``create_agent``'s tool node)."""
STATE_KEY: Final = "liveguard"
"""The agent-state key holding the thread's liveness state."""
RUN_KEY: Final = "liveguard_run"
"""The agent-state key holding one invocation's state (an ``UntrackedValue``: never saved)."""

_DEBOUNCED: Final = "debounced"
ToolResult = ToolMessage | Command[Any]


class LivenessState(AgentState[Any]):
    """``create_agent`` state plus the thread's liveness state (private, checkpointed)."""

    liveguard: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]
    liveguard_run: NotRequired[Annotated[Any, UntrackedValue, PrivateStateAttr]]


def stop_message(violation: Violation) -> AIMessage:
    """The final message of a run ended by the guard: the stop in words, no step text."""
    return AIMessage(
        content=f"Stopped by liveguard: {stop_text(violation)}",
        response_metadata={"liveguard": violation.model_dump(mode="json")},
    )


# -- the thread's liveness state ------------------------------------------------------------------
class _Thread:
    """The saved value under ``state["liveguard"]``, unpacked: the core's session (windows,
    stop, audit) and the middleware's own ledger and markers."""

    __slots__ = ("debounced", "heard", "ledger", "seen", "session")

    def __init__(self, saved: Any, settings: Any, *, new_run: bool) -> None:
        damaged = saved is not None and not isinstance(saved, Mapping)
        saved = saved if isinstance(saved, Mapping) else {}
        # the core reads the windows: another version, or damaged: logged, they start afresh
        monitor = read_windows(saved, settings.policy, settings.allow_set)
        # the core reads the stop: a damaged record is a logged guard_error that keeps it stopped
        stop = DAMAGED if damaged else read_stop(saved)[0]
        self.session = ThreadSession.load(settings, monitor, (stop, False), audit=read_audit(saved),
                                          new_run=new_run)
        seen, heard = saved.get("seen"), saved.get("heard")
        self.seen: str | None = seen if isinstance(seen, str) else None
        self.heard: str | None = heard if isinstance(heard, str) else None
        self.ledger = Ledger(saved.get("ledger"))
        debounced = saved.get("debounced")
        self.debounced: int = debounced if isinstance(debounced, int) else 0

    @property
    def monitor(self) -> Monitor:
        return self.session.live_monitor

    def dump(self, *, windows: bool = True) -> dict[str, Any]:
        """The saved value: the core's windows and stop values (one record schema, see
        :mod:`liveguard.live.thread_guard`), the audit, and the middleware's own ledger and markers.

        ``windows=False`` (an agent without a checkpointer: the value is never restored, the
        invocation goes on in memory): the windows are left out (``"m": None``)."""
        session = self.session
        return {
            **windows_value(session.monitor if windows else None),
            **stop_value(session.stop),
            "seen": self.seen,
            "heard": self.heard,
            "ledger": self.ledger.dump(),
            "debounced": self.debounced,
            "audit": audit_value(session.audit),
        }


def _flag(message: ToolMessage) -> str:
    if _nonretryable(message.content):
        return "nonretryable"
    return "failed" if message.status == "error" else "ok"


class _Run:
    """One invocation's state, under ``state["liveguard_run"]`` (never checkpointed): the
    thread as this invocation last wrote it, its debounce count, and whether the guard
    stood down in it."""

    __slots__ = ("debounced", "durable", "off", "record", "thread")

    def __init__(self) -> None:
        self.record: Any = None  # the value last written under "liveguard" ...
        self.thread: _Thread | None = None  # ... and what it unpacks to
        self.debounced = 0
        self.off = False  # the guard failed in this run: stand down until it ends
        self.durable = True  # the agent has a checkpointer: the value is saved with the thread


class LivenessMiddleware(AgentMiddleware[LivenessState, Any, Any]):
    """Stops a ``create_agent`` thread at the first hard liveness violation.

    See the module docstring for what is observed, what is kept with the thread and
    what each ``exit_behavior`` does. ``notifiers``: callables ``notifier(payload, coords)``
    called once per ``"interrupt"`` hold; a failing one is logged and never releases it.
    """

    state_schema = LivenessState

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        allow_set: AllowSet | None = None,
        exit_behavior: ExitBehavior | None = None,
        on_violation: str | None = None,
        severity: SeverityFloor = "hard",
        ceiling: int = 3,
        ledger_size: int = 16,
        show_ledger: bool = True,
        notifiers: Sequence[Notifier] = (),
    ) -> None:
        super().__init__()
        if ledger_size < 1:
            raise ValueError("ceiling and ledger_size must be at least 1")
        policy = Settings.from_env().policy(Policy.tool_agent()) if policy is None else policy
        try:
            self.settings = live_settings(policy, allow_set, exit_behavior=exit_behavior,
                                          on_violation=on_violation, severity=severity,
                                          ceiling=ceiling, who="LivenessMiddleware")
        except ValueError as exc:
            if "ceiling" in str(exc):
                raise ValueError("ceiling and ledger_size must be at least 1") from None
            raise
        self.ledger_size = ledger_size
        self.show_ledger = show_ledger
        if not all(callable(n) for n in notifiers):
            raise TypeError("notifiers: expected callables notifier(payload, coords)")
        self.notifiers: tuple[Notifier, ...] = tuple(notifiers)

    @property
    def policy(self) -> Policy:
        return self.settings.policy

    @property
    def allow_set(self) -> AllowSet | None:
        return self.settings.allow_set

    @property
    def exit_behavior(self) -> ExitBehavior:
        return self.settings.exit_behavior

    @property
    def severity(self) -> SeverityFloor:
        return self.settings.severity

    @property
    def ceiling(self) -> int:
        return self.settings.ceiling

    @property
    def on_violation(self) -> str:
        """Deprecated name of :attr:`exit_behavior`."""
        return self.exit_behavior

    # -- hooks ----------------------------------------------------------------------------------
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        call = self._begin(request)
        while True:
            if call.answer is _HOLD:  # a person decides (exit_behavior="interrupt")
                call.answer = self._decided(call, ask(self._request(call), notifiers=self.notifiers,
                                                      on_error=call.errors.append))
            if call.answer is not None:
                return call.answer
            call.response = handler(call.request)
            call.answer = self._after_model(call, call.response)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        call = self._begin(request)
        while True:
            if call.answer is _HOLD:  # the notifiers are queued, off the event loop (aask)
                call.answer = self._decided(call, await aask(
                    self._request(call), notifiers=self.notifiers, on_error=call.errors.append))
            if call.answer is not None:
                return call.answer
            call.response = await handler(call.request)
            call.answer = self._after_model(call, call.response)

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """``"error"`` mode: raise once the stop is saved with the thread."""
        if self.exit_behavior != "error":
            return None
        saved = state.get(STATE_KEY) if isinstance(state, Mapping) else None
        stop = saved.get("stop") if isinstance(saved, Mapping) else None
        if stop:
            raise NoProgressError(Violation.model_validate(stop))
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolResult],
    ) -> ToolResult:
        answer = self._debounce(request)
        return handler(request) if answer is None else answer

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        answer = self._debounce(request)
        return await handler(request) if answer is None else answer

    # -- the model call -------------------------------------------------------------------------
    def _begin(self, request: ModelRequest[Any]) -> _Call:
        """Restore the thread, observe the last tool turn, act on a stop; or stand down."""
        call = _Call(request)
        state = request.state if isinstance(request.state, Mapping) else {}
        found_run = state.get(RUN_KEY)
        new_run = call.new_run = not isinstance(found_run, _Run)
        run: _Run = found_run if isinstance(found_run, _Run) else _Run()
        call.run = run
        if run.off:
            return call
        try:
            saved = state.get(STATE_KEY)
            if run.thread is not None and saved is run.record:
                thread = call.thread = run.thread  # what this invocation wrote last: go on in memory
            else:
                thread = call.thread = _Thread(saved, self.settings, new_run=new_run)
                if new_run:
                    run.durable = _tell_per_call()
            if thread.session.stop is not None:  # a stopped thread stays stopped
                call.answer = self._act(call, thread.session.stop, saved=True)
                return call
            messages = state.get("messages") or []
            found = self._observe_input(call, messages) + self._observe_turn(call, messages)
            call.answer = self._decide(call, found)
            if call.answer is not None:
                return call
            if self.show_ledger and thread.ledger:
                call.request = _with_ledger(call.request, thread.ledger.text)
        except NoProgressError:
            raise
        except Exception as exc:
            if _is_graph_bubble(exc):
                raise
            self._stand_down(call, exc)
        return call

    def _stand_down(self, call: _Call, exc: Exception) -> None:
        """The guard's own failure: the core's one stand-down path, for the rest of this run."""
        thread = call.thread
        if thread is not None:
            thread.session.stand_down(exc)
        else:
            log_guard_failure(exc)
        call.thread = None
        if call.run is not None:
            call.run.off = True

    def _after_model(self, call: _Call, response: Any) -> Any:
        thread = call.thread
        if thread is None:
            return response
        try:
            message = _last_ai(response)
            found = thread.monitor.observe(Step(node=MODEL_NODE, output=message))
            answer = self._decide(call, found)
            if answer is not None:
                return answer
            return self._respond(call, response)
        except NoProgressError:
            raise
        except Exception as exc:
            if _is_graph_bubble(exc):
                raise
            self._stand_down(call, exc)
            return self._respond(call, response)

    def _observe_input(self, call: _Call, messages: list[Any]) -> list[Violation]:
        """A new user request on a thread with history: the rules see the user's turn.

        The last ``HumanMessage`` after the last ``AIMessage`` is fed once (by message id)
        as ``Step(node="__input__", output=<its text>)``; the first request of a thread is
        not (the steps of a first turn are numbered as offline).
        """
        thread = call.thread
        assert thread is not None
        human = _new_human(messages)
        if human is None or thread.monitor.steps_seen == 0:
            return []
        marker = str(human.id)
        if human.id is None or marker == thread.heard:
            return []
        thread.heard = marker
        step = input_step({"messages": [human]})
        return thread.monitor.observe(step) if step is not None else []

    def _observe_turn(self, call: _Call, messages: list[Any]) -> list[Violation]:
        """Feed the last tool turn (once) to the Monitor and the ledger."""
        thread = call.thread
        assert thread is not None
        turn = _last_turn(messages)
        if turn is None:
            return []
        marker, pairs = turn
        if marker == thread.seen:
            return []
        thread.seen = marker
        found: list[Violation] = []
        debounced = 0
        for tool_call, message in pairs:
            if message.additional_kwargs.get("liveguard") == _DEBOUNCED:
                debounced += 1
                continue
            args = tool_call_args(tool_call)
            step = tool_message_step(TOOLS_NODE, message, name=tool_call_name(tool_call), args=args)
            name = step.tool or UNKNOWN_TOOL
            digest = args_digest(args)
            thread.ledger.record(name, digest, _flag(message), self.ledger_size)
            if self.exit_behavior == "continue":
                call.sigs[thread.monitor.digest(step)[:12]] = (name, digest)
            found += thread.monitor.observe(step)
        thread.debounced += debounced
        if debounced:
            run = call.run
            if run is not None:
                run.debounced += debounced
                ceiling = thread.session.decider.debounce_ceiling(
                    run.debounced, step=max(thread.monitor.steps_seen - 1, 0), node=TOOLS_NODE)
                if ceiling is not None:
                    return [ceiling]
        return found

    # -- acting on a violation: the core decides, the middleware carries it out ------------------
    def _decide(self, call: _Call, found: list[Violation]) -> Any:
        """The answer in place of the model call, or None to call the model anyway.

        The core (:class:`~liveguard.live.thread_guard.Decider`) picks the violation to act on
        and logs it; in ``"continue"`` mode the middleware debounces what it can block.
        """
        if not found or call.thread is None:
            return None
        debounce = functools.partial(self._block, call) if self.exit_behavior == "continue" else None
        stop = call.thread.session.act(found, debounce)
        return None if stop is None else self._act(call, stop)

    def _block(self, call: _Call, violation: Violation) -> bool:
        """Debounce a repeated (tool, args) whose outcome repeated: later identical calls are
        answered, not run. Only ``tool_no_progress`` of a call this turn executed."""
        if violation.code != "tool_no_progress" or call.thread is None:
            return False
        blocked = call.sigs.get(str(violation.detail.get("digest")))
        if blocked is None:
            return False
        call.thread.ledger.block(*blocked)
        return True

    def _act(self, call: _Call, violation: Violation, *, saved: bool = False) -> Any:
        """Carry out a stop (``saved``: the thread's saved one, found at the call's start).

        The answer is a response (the stop message), never an exception: ``"error"`` raises
        from ``after_model`` once the stop is saved, so a retry middleware around this one
        never retries a stop.
        """
        thread = call.thread
        assert thread is not None
        if saved:
            action = thread.session.on_saved_stop()
            if action == "run":  # a stop saved under another behaviour: warn never stops
                return None
            if action == "ask":
                return self._interrupt(call, violation)
            return self._respond(call, ModelResponse(result=[stop_message(violation)]))
        if self.exit_behavior == "interrupt":
            return self._interrupt(call, violation)
        thread.session.stop = violation
        return self._respond(call, ModelResponse(result=[stop_message(violation)]))

    def _interrupt(self, call: _Call, violation: Violation) -> Any:
        """Hold the thread for a person: the model call asks (:func:`liveguard.live.hitl.ask`)."""
        call.held = violation
        return _HOLD

    def _request(self, call: _Call) -> HoldRequest:
        assert call.held is not None
        return hold_request(call.held, edit="message")

    def _decided(self, call: _Call, decision: ReviewDecision) -> Any:
        """Apply a person's decision: the answer in place of the model call, or None to call it.

        reject: the run ends with the stop message and the thread stays stopped. approve:
        the stop and the windows are cleared (the ledger and counters kept) and the run
        goes on: a response the model already gave is used. edit: the same, with
        ``edited_action.args.message`` added as a human turn, and the model is called with
        it (a response it gave before is dropped). Each answer, and each malformed one
        before it, goes into the thread's audit (codes, who, when; never text).
        """
        thread, violation = call.thread, call.held
        assert thread is not None
        assert violation is not None
        call.held = None
        session = thread.session
        session.stop = violation  # the session's answer is about this stop
        errors, call.errors = list(call.errors), []
        session.answer(decision, at=_now(), errors=errors)
        if decision.type == "reject":
            return self._respond(call, ModelResponse(result=[stop_message(violation)]))
        # approve / edit: the core cleared the stop and the windows; the ledger and counters stay
        response, call.response = call.response, None
        if isinstance(decision, Edit):
            human = HumanMessage(content=str(decision.value))
            call.extra.append(human)
            call.request = call.request.override(messages=[*call.request.messages, human])
            return None
        return None if response is None else self._respond(call, response)

    def _respond(self, call: _Call, response: Any) -> Any:
        """The response plus the thread's liveness state (and any edit) as a state update."""
        thread = call.thread
        if isinstance(response, ExtendedModelResponse):
            return response
        if isinstance(response, AIMessage):
            response = ModelResponse(result=[response])
        if call.extra:  # an edit: the person's message goes before the model's answer
            response = ModelResponse(
                result=[*call.extra, *response.result],
                structured_response=response.structured_response,
            )
        run = call.run
        update: dict[str, Any] = {}
        if thread is not None and (run is None or run.durable or self._needs_value(thread)):
            value = update[STATE_KEY] = thread.dump(windows=run is None or run.durable)
            if run is not None:  # the next model call of this invocation goes on in memory
                run.record, run.thread = value, thread
        elif run is not None and thread is not None:  # no checkpointer: in memory, nothing to save
            run.thread = thread
        if run is not None and (run.durable or call.new_run):
            update[RUN_KEY] = run
        if not update:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def _needs_value(self, thread: _Thread) -> bool:
        """Without a checkpointer, whether this invocation's later hooks read the thread's
        value from the state: ``after_model`` the stop, the tool-call debounce the ledger."""
        return thread.session.stop is not None or self.exit_behavior == "continue"

    # -- tool calls: the debounce ---------------------------------------------------------------
    def _debounce(self, request: ToolCallRequest) -> ToolMessage | None:
        if self.exit_behavior != "continue":
            return None
        try:
            state = request.state if isinstance(request.state, Mapping) else {}
            saved = state.get(STATE_KEY)
            ledger = Ledger(saved.get("ledger") if isinstance(saved, Mapping) else None)
            if not ledger:
                return None
            call = request.tool_call
            name = tool_call_name(call) or UNKNOWN_TOOL
            digest = args_digest(tool_call_args(call))
            entry = ledger.blocked(name, digest)
            if entry is None:
                return None
            log.warning("liveguard: debounced %s args#%s (tried %d times)", name, digest, entry[3])
            return ToolMessage(
                content=debounce_text(name, digest, entry),
                tool_call_id=call.get("id") or "",
                name=name,
                status="error",
                additional_kwargs={"liveguard": _DEBOUNCED},
            )
        except Exception as exc:
            log_guard_failure(exc)
            return None


class _Call:
    """One model call's working set."""

    __slots__ = ("answer", "errors", "extra", "held", "new_run", "request", "response", "run", "sigs",
                 "thread")

    def __init__(self, request: ModelRequest[Any]) -> None:
        self.request = request
        self.new_run = True  # the invocation's first model call (its run is not in the state yet)
        self.held: Violation | None = None  # the stop a person is asked about
        self.errors: list[InvalidDecision] = []  # malformed answers before the decision
        self.response: Any = None  # the model's response, while a person decides on it
        self.run: _Run | None = None
        self.sigs: dict[str, tuple[str, str]] = {}  # digest prefix -> (tool, args digest)
        self.thread: _Thread | None = None
        self.answer: Any = None
        self.extra: list[Any] = []


_HOLD: Any = object()
"""``_Call.answer`` while a person is to decide (the model call asks, outside the guard's
own failure handling: a malformed answer re-asks and never stands the guard down)."""


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _is_graph_bubble(exc: BaseException) -> bool:
    """LangGraph's interrupt / control-flow exceptions must pass through untouched."""
    from langgraph.errors import GraphBubbleUp

    return isinstance(exc, GraphBubbleUp)


def _tell_per_call() -> bool:
    """Whether the agent has a checkpointer, at an invocation's first model call; without one,
    say so (INFO): liveness is then per call (and nothing is written that no one reads)."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a graph run: nothing to say, and keep writing the value
        return True
    if configurable.get("__pregel_checkpointer") is None:
        log.info("liveguard: the agent has no checkpointer: liveness is per call, nothing "
                 "is kept between invocations")
        return False
    return True


def _with_ledger(request: ModelRequest[Any], text: str) -> ModelRequest[Any]:
    system = request.system_message
    if system is None:
        return request.override(system_message=SystemMessage(content=text))
    content = system.content
    if isinstance(content, str):
        new: Any = f"{content}\n\n{text}" if content else text
    else:
        new = [*content, {"type": "text", "text": text}]
    return request.override(system_message=SystemMessage(content=new))


# -- reading the state ------------------------------------------------------------------------------
def _last_ai(response: Any) -> AIMessage | None:
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    if isinstance(response, AIMessage):
        return response
    messages = response.result if isinstance(response, ModelResponse) else [response]
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _new_human(messages: list[Any]) -> HumanMessage | None:
    """The last human message after the last AI message (the request this call answers)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message
        if isinstance(message, AIMessage):
            return None
    return None


def _last_turn(messages: list[Any]) -> tuple[str, list[tuple[Mapping[str, Any], ToolMessage]]] | None:
    """(marker, [(tool call, its ToolMessage)]) of the last AI message's answered tool calls."""
    answers: dict[str, ToolMessage] = {}
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            answers.setdefault(message.tool_call_id, message)
            continue
        if isinstance(message, AIMessage):
            calls = message.tool_calls
            if not calls:
                return None
            pairs: list[tuple[Mapping[str, Any], ToolMessage]] = [
                (c, answers[c["id"]]) for c in calls if c["id"] is not None and c["id"] in answers
            ]
            if not pairs:
                return None
            marker = f"{message.id}|{calls[0].get('id')}|{len(pairs)}"
            return marker, pairs
        return None  # a human / system message after the last turn: nothing new
    return None
