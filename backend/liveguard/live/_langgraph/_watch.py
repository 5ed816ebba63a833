"""Watching inside a run: subgraph nodes and Functional API tasks, judged in their own thread."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from liveguard.core.model import Violation
from liveguard.errors import NoProgressError
from liveguard.live._langgraph._shapes import PUSH, StreamRun, input_digest

if TYPE_CHECKING:
    from liveguard.live._langgraph._graph import GuardSettings

__all__ = ["run_control", "subgraph_stop", "watched"]


_RUNTIME_KEY: Final = "__pregel_runtime"
_HANDLER: Final = "LiveguardWatch"


class _QuietStops(logging.Filter):
    """Drops LangChain's "Error in LiveguardWatch.<event> callback" lines for the guard's own stop.

    The watcher stops a node by raising :class:`~liveguard.errors.NoProgressError` from a
    callback (``raise_error``); LangChain's callback manager logs every exception a handler
    raises before re-raising it. That stop is no error of the callback: the guard logs it
    itself, once (``liveguard.guard``). Any other exception of the handler is still logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (isinstance(args, tuple) and len(args) == 3 and args[0] == _HANDLER
                    and str(args[2]).startswith("NoProgressError("))


_QUIET = _QuietStops()


def _quiet_callback_log() -> None:
    """Install :class:`_QuietStops` on LangChain's callback-manager logger (once)."""
    logger = logging.getLogger("langchain_core.callbacks.manager")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


def subgraph_stop(run: StreamRun, exc: BaseException) -> Violation | None:
    """The stop behind an exception out of the graph, when a subgraph's watcher caused it."""
    if run.pending is None:
        return None
    if isinstance(exc, NoProgressError) or type(exc).__name__ == "GraphDrained":
        return run.pending
    return None


def watched(config: Any, run: StreamRun, control: Any, settings: GuardSettings) -> Any:
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

    _quiet_callback_log()
    configurable = (config or {}).get("configurable") or {}
    base = len([s for s in str(configurable.get("checkpoint_ns") or "").split("|") if s])
    nested = run.nested
    nodes = settings.node_names

    class LiveguardWatch(BaseCallbackHandler):
        raise_error = True
        run_inline = True

        def __init__(self) -> None:
            self.names: dict[Any, tuple[str, str]] = {}  # run id -> (step node, namespace)
            self.tasks: dict[Any, tuple[str, str]] = {}
            self.pushes: dict[Any, str] = {}  # run id of a pushed node -> its namespace
            self.roots: dict[Any, tuple[str, str]] = {}  # run id of a pushed task of this graph's
            # own superstep -> (node, input digest)

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
            pushed = PUSH in (meta.get("langgraph_triggers") or ())
            if pushed and len(names) == 1:  # a Send to a node of this graph: its update is
                self.roots[run_id] = (node, input_digest(inputs))  # judged with its input
            if nested and pushed:  # a Send's target: its input reaches every step under it
                self.pushes[run_id] = ns
                run.push(ns, inputs)
            if (not nested and len(names) == 2 and names[0] in nodes and node not in nodes
                    and pushed):
                self.tasks[run_id] = (node, input_digest(inputs))  # a @task of the entrypoint
            elif nested and len(names) > 1:  # a node of a subgraph, not of this graph
                self.names[run_id] = (":".join(names), ns)

        def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
            root = self.roots.pop(run_id, None)
            if root is not None:  # before LangGraph streams the task's update, in this thread
                run.pushed_ended(root[0], root[1], outputs)
            task = self.tasks.pop(run_id, None)
            if task is not None:
                stop = run.task_step(task[0], task[1], outputs) if run.pending is None else None
                if stop is not None:
                    run.pending = stop
                    control.request_drain("liveguard")
                    raise NoProgressError(stop)
                return
            named = self.names.pop(run_id, None)
            try:
                if named is None or run.pending is not None:
                    return
                stop = run.subgraph_step(named[0], outputs, named[1])
            finally:
                pushed = self.pushes.pop(run_id, None)
                if pushed is not None:
                    run.pushed_done(pushed)
            if stop is None:
                return
            run.pending = stop
            control.request_drain("liveguard")
            if settings.exit_behavior == "error":
                raise NoProgressError(stop)

        def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            self.roots.pop(run_id, None)
            self.names.pop(run_id, None)
            self.tasks.pop(run_id, None)
            pushed = self.pushes.pop(run_id, None)
            if pushed is not None:
                run.pushed_done(pushed)

    return merge_configs(config, {"callbacks": [LiveguardWatch()]})


def run_control(config: Any, kwargs: Mapping[str, Any]) -> Any:
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
