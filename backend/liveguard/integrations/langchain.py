"""``LivenessMiddleware`` for ``langchain.agents.create_agent``.

::

    from langchain.agents import create_agent
    from liveguard import NoProgressError
    from liveguard.integrations.langchain import LivenessMiddleware

    agent = create_agent(model, tools, middleware=[LivenessMiddleware()])
    try:
        agent.invoke({"messages": [{"role": "user", "content": "..."}]})
    except NoProgressError as exc:
        print(exc.violation.code)          # e.g. tool_no_progress

What it observes, in order, through one :class:`~liveguard.monitor.Monitor` per agent run
    * every model response (``wrap_model_call``): ``Step(node="model", output=<AIMessage>)``;
      a tool-call request is judged by the tool rule, a plain answer by the content rules;
    * every tool result (``wrap_tool_call``): ``Step(node="tools", tool=<name>,
      args=<call args>, result=<ToolMessage content>, error=<content if status is
      "error">)``. A tool that returns a ``Command`` is read through the ``ToolMessage`` in
      its update (or, without one, the rest of its update).

On a hard violation
    ``on_violation="raise"`` (default) raises :class:`~liveguard.errors.NoProgressError`
    and the error propagates out of ``agent.invoke`` / ``ainvoke`` / ``stream``. ``"end"``
    ends the run gracefully with an ``AIMessage`` naming the stop by code only
    (``"Stopped by liveguard: tool_no_progress at step 3"``, the violation in
    ``response_metadata["liveguard"]``); it has no tool calls, so ``create_agent`` routes
    to the end. Either way no further model call is made and the thread stays valid
    (every tool call keeps its answer):

    * a violating *model response* is dropped before it is committed (its tool calls
      never run): ``"raise"`` raises from the model node, ``"end"`` replaces the
      response with the stop message;
    * a violating *tool result* is returned as usual (the tool has already run, and the
      other calls of the same turn finish); the next model call then raises or returns
      the stop message instead of calling the model.

Per-run scoping
    A run is one top-level ``invoke`` / ``ainvoke`` / ``stream`` / ``astream`` / ``batch``
    item. LangGraph gives each such call a fresh ``RunControl`` (``Runtime.control``; the
    tool hooks reach the same ``Runtime`` through their ``ToolRuntime.config``); the
    middleware keys its Monitors by that object, so two invocations, even on the same
    thread, never share state, and concurrent runs through one agent stay apart. At most
    ``max_runs`` (1024) runs are tracked at once; the least recently active is forgotten
    first. An agent used as a subgraph node inherits its parent's ``RunControl``: all its
    calls within one parent run share one Monitor. Without a ``RunControl`` (a runtime
    that does not provide one) the middleware scopes by ``thread_id`` and logs that once.

Placement
    Put it *first* in ``middleware=[...]`` when you also use retry or fallback middleware:
    the first middleware is the outermost, and ``ModelRetryMiddleware`` retries any
    exception raised inside it, a ``NoProgressError`` included (a stopped run stays
    stopped, so retries only burn the retry budget; with ``on_failure="continue"`` the
    run then ends on the retry middleware's error message rather than the error). It
    adds no graph node (``wrap_*`` hooks only); like any ``wrap_model_call`` middleware,
    it makes ``create_agent`` draw a ``model -> model`` edge.

Policy
    ``Policy.from_env(Policy.tool_agent())`` by default (no revisit counting on ``model``
    and ``tools``; ``AGENT_EVAL_LOOP_GUARD=0`` turns the rules off). With ``allow_set`` the
    transition rules see the steps as ``model`` / ``tools`` visits. End-of-run findings
    (``dead_end``) are not checked: the middleware has no end-of-run hook.

The guard's own failures (an unfingerprintable payload, a bug) are logged on the
``liveguard.guard`` logger by code and exception type, and the guard stands down for the
rest of that run; the agent continues. Logs carry codes, counts, digest prefixes, node
names and step indices, never step text.

Importing this module imports LangChain; ``import liveguard`` never does.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from liveguard.errors import NoProgressError
from liveguard.integrations.langgraph import RunGuard, log, log_guard_failure
from liveguard.model import Step, Violation
from liveguard.monitor import Monitor
from liveguard.policy import Policy

if TYPE_CHECKING:
    from liveguard.allowset import AllowSet

__all__ = ["MODEL_NODE", "TOOLS_NODE", "LivenessMiddleware", "stop_message"]

MODEL_NODE: Final = "model"
"""Node name of model steps (``create_agent``'s model node)."""
TOOLS_NODE: Final = "tools"
"""Node name of tool steps (``create_agent``'s tool node)."""

OnViolation = Literal["raise", "end"]
ToolResult = ToolMessage | Command[Any]


def stop_message(violation: Violation) -> AIMessage:
    """The final message of a run ended by the guard: the stop by code, no step text."""
    return AIMessage(
        content=f"Stopped by liveguard: {violation.code} at step {violation.step}",
        response_metadata={"liveguard": violation.model_dump(mode="json")},
    )


class _Run:
    """One agent run: its guard and the violation that stopped it, once one has."""

    __slots__ = ("guard", "stopped")

    def __init__(self, guard: RunGuard) -> None:
        self.guard = guard
        self.stopped: Violation | None = None


class LivenessMiddleware(AgentMiddleware[Any, Any, Any]):
    """Stops a ``create_agent`` run at the first hard liveness violation.

    See the module docstring for what is observed, how runs are scoped and what
    ``on_violation`` does.
    """

    max_runs: int = 1024
    """Runs tracked at once; the least recently active is forgotten first."""

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        allow_set: AllowSet | None = None,
        on_violation: OnViolation = "raise",
    ) -> None:
        super().__init__()
        if on_violation not in ("raise", "end"):
            raise ValueError(f"on_violation must be 'raise' or 'end', got {on_violation!r}")
        self.policy = Policy.from_env(Policy.tool_agent()) if policy is None else policy
        self.allow_set = allow_set
        self.on_violation: OnViolation = on_violation
        Monitor(self.policy, allow_set)  # fail fast on a policy the allow-set cannot refine
        self._runs: OrderedDict[Hashable, _Run] = OrderedDict()
        self._lock = threading.Lock()
        self._warned_unscoped = False

    # -- hooks: sync and async share everything but the await ----------------------------------
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        run = self._run(request.runtime)
        if run is not None and run.stopped is not None:
            return self._stop(run, run.stopped)
        return self._after_model(run, handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        run = self._run(request.runtime)
        if run is not None and run.stopped is not None:
            return self._stop(run, run.stopped)
        return self._after_model(run, await handler(request))

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolResult],
    ) -> ToolResult:
        run = self._run(request.runtime)
        return self._after_tool(run, request, handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        run = self._run(request.runtime)
        return self._after_tool(run, request, await handler(request))

    # -- shared logic ---------------------------------------------------------------------------
    def _after_model(self, run: _Run | None, response: ModelResponse[Any]) -> ModelResponse[Any]:
        if run is None:
            return response
        violation = run.guard.check(lambda: [Step(node=MODEL_NODE, output=_last_ai(response))])
        return response if violation is None else self._stop(run, violation)

    def _after_tool(self, run: _Run | None, request: ToolCallRequest, result: ToolResult) -> ToolResult:
        if run is not None:
            violation = run.guard.check(lambda: [_tool_step(request.tool_call, result)])
            if violation is not None and run.stopped is None:
                run.stopped = violation  # acted on at the next model call
        return result

    def _stop(self, run: _Run, violation: Violation) -> ModelResponse[Any]:
        """In place of a model call: raise, or the response that ends the run.

        The run stays stopped: a retry middleware that re-calls the model gets the same
        answer, never a fresh Monitor.
        """
        run.stopped = violation
        if self.on_violation == "raise":
            raise NoProgressError(violation)
        return ModelResponse(result=[stop_message(violation)])

    # -- per-run scoping ------------------------------------------------------------------------
    def _run(self, runtime: Any) -> _Run | None:
        """This run's state, created on its first step; None if the scope cannot be found."""
        try:
            key = self._key(runtime)
            with self._lock:
                run = self._runs.get(key)
                if run is None:
                    run = self._runs[key] = _Run(
                        RunGuard(self.policy, self.allow_set, severity="hard")
                    )
                    while len(self._runs) > self.max_runs:
                        self._runs.popitem(last=False)
                else:
                    self._runs.move_to_end(key)
                return run
        except Exception as exc:  # the guard's own failure never kills the agent
            log_guard_failure(exc)
            return None

    def _key(self, runtime: Any) -> Hashable:
        """The run's ``RunControl`` (identity-hashed), else ``("thread", thread_id)``."""
        control = getattr(runtime, "control", None)  # Runtime: model hooks
        if control is None:
            config = getattr(runtime, "config", None)  # ToolRuntime: tool hooks
            configurable = config.get("configurable") if isinstance(config, Mapping) else None
            if isinstance(configurable, Mapping):
                graph_runtime = next(
                    (v for v in configurable.values() if isinstance(v, Runtime)), None
                )
                control = getattr(graph_runtime, "control", None)
        if control is not None:
            return control  # type: ignore[no-any-return]
        if not self._warned_unscoped:
            self._warned_unscoped = True
            log.warning("liveguard: no RunControl in the runtime; runs are scoped by thread_id")
        info = getattr(runtime, "execution_info", None)
        return ("thread", getattr(info, "thread_id", None))


# -- steps ----------------------------------------------------------------------------------------
def _last_ai(response: Any) -> AIMessage | None:
    messages = response.result if isinstance(response, ModelResponse) else [response]
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _tool_step(call: Mapping[str, Any], result: Any) -> Step:
    name = call.get("name") or "unknown_tool"
    args = call.get("args")
    message = _tool_message(result, call.get("id"))
    if message is None:
        update = getattr(result, "update", None)
        rest = {k: v for k, v in update.items() if k != "messages"} if isinstance(update, Mapping) else None
        return Step(node=TOOLS_NODE, tool=name, args=args, result=rest or None)
    content = message.content
    error = content if message.status == "error" else None
    return Step(node=TOOLS_NODE, tool=name, args=args, result=content, error=error)


def _tool_message(result: Any, call_id: Any) -> ToolMessage | None:
    if isinstance(result, ToolMessage):
        return result
    update = getattr(result, "update", None)
    messages = update.get("messages") if isinstance(update, Mapping) else None
    if isinstance(messages, ToolMessage):
        messages = [messages]
    if not isinstance(messages, list | tuple):
        return None
    found = [m for m in messages if isinstance(m, ToolMessage)]
    return next((m for m in found if m.tool_call_id == call_id), found[-1] if found else None)
