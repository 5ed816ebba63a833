"""The deterministic floor without the per-run LangGraph overhead.

When no judge can run, the eval graph is a straight chain of plain functions over a
dict. :class:`Floor` takes that chain once, either from the node list the graph is built
from (:meth:`Floor.from_chain` over ``eval_graph.eval_chain``: what the scorer uses, with
no LangGraph import) or from a *compiled* graph (:meth:`Floor.from_graph`: its nodes' own
functions, its edges, its channels' reducers; a test checks both give the same floor), and
then runs it per run as a loop over the same functions: no Pregel loop, no checkpoint
tasks, no event loop. The functions are the graph's, so there is one rule path; a test
compares both paths' verdicts run by run.

With judges, :meth:`Floor.ainvoke` runs the same chain and awaits the judge nodes, so the
deterministic part costs the same with judges as without them.

The floor declines (:meth:`Floor.from_graph` returns ``None``) when the graph is not a
simple chain a loop can follow (a conditional edge, a fan-out, a node that wants a
``config`` or a store). An async node is driven without an event loop: with no judge
to call it never awaits anything real; if it does, :class:`FloorNeedsLoop` is raised
and the caller uses the graph.
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

__all__ = ["Floor", "FloorNeedsLoop"]

_START = "__start__"
_END = "__end__"


class FloorNeedsLoop(RuntimeError):
    """A node awaited something real (a judge): the run needs the graph and its event loop."""


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that completes without suspending; its return value."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise FloorNeedsLoop("a node of the eval graph suspended (it awaited I/O)")


class Floor:
    """The compiled eval graph's node functions, run in order over a plain dict."""

    def __init__(
        self,
        steps: list[tuple[str, Callable[[dict[str, Any]], Any], bool]],
        reducers: Mapping[str, Callable[[Any, Any], Any]],
        initial: Mapping[str, Any],
        channels: frozenset[str],
    ) -> None:
        self._steps = steps
        self._reducers = dict(reducers)
        self._initial = dict(initial)
        self._channels = channels

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self._steps)

    @classmethod
    def from_graph(cls, compiled: Any) -> Floor | None:
        """The chain of ``compiled`` (a compiled ``StateGraph``), or None when it is not one."""
        builder = getattr(compiled, "builder", None)
        if builder is None or getattr(builder, "branches", None) or getattr(builder, "waiting_edges", None):
            return None
        successors: dict[str, list[str]] = {}
        for a, b in builder.edges:
            successors.setdefault(a, []).append(b)
        order: list[str] = []
        node = _START
        while True:
            nxt = successors.get(node, [])
            if len(nxt) != 1:
                return None
            node = nxt[0]
            if node == _END:
                break
            if node in order or node not in builder.nodes:
                return None
            order.append(node)
        if set(order) != set(builder.nodes):
            return None
        steps: list[tuple[str, Callable[[dict[str, Any]], Any], bool]] = []
        for name in order:
            spec = builder.nodes[name]
            runnable = spec.runnable
            if getattr(runnable, "func_accepts", None) or getattr(spec, "defer", False):
                return None  # wants config/store/writer, or deferred: not a plain function
            func = getattr(runnable, "func", None)
            is_async = func is None
            fn = getattr(runnable, "afunc", None) if is_async else func
            if fn is None:
                return None
            steps.append((name, fn, is_async))
        reducers: dict[str, Callable[[Any, Any], Any]] = {}
        initial: dict[str, Any] = {}
        for key, channel in builder.channels.items():
            operator = getattr(channel, "operator", None)
            if operator is not None:
                reducers[key] = operator
                value = getattr(channel, "value", None)
                if isinstance(value, dict | list | set):
                    initial[key] = value
        return cls(steps, reducers, initial, frozenset(builder.channels))

    @classmethod
    def from_chain(cls, chain: Sequence[tuple[str, Callable[..., Any]]], schema: type) -> Floor:
        """The floor of a chain of ``(name, function)`` over the ``TypedDict`` ``schema``,
        read as LangGraph reads a ``StateGraph``'s state: an ``Annotated[T, reducer]`` key
        is a channel with that reducer, starting from ``T()`` for a dict, list or set.

        This is how the scorer builds its floor without importing LangGraph; a test checks
        it equals :meth:`from_graph` of the compiled eval graph."""
        reducers: dict[str, Callable[[Any, Any], Any]] = {}
        initial: dict[str, Any] = {}
        hints = typing.get_type_hints(schema, include_extras=True)
        for key, hint in hints.items():
            if typing.get_origin(hint) is not typing.Annotated:
                continue
            args: tuple[Any, ...] = typing.get_args(hint)
            base, meta = args[0], args[1:]
            reducer = None
            for item in meta:  # the last callable, as LangGraph reads it
                if callable(item):
                    reducer = item
            if reducer is None:
                continue
            reducers[key] = reducer
            origin = typing.get_origin(base) or base
            if origin in (dict, list, set):
                initial[key] = origin()
        steps = [(name, fn, inspect.iscoroutinefunction(fn)) for name, fn in chain]
        return cls(steps, reducers, initial, frozenset(hints))

    def _fresh(self) -> dict[str, Any]:
        """The channels' initial values, copied (as LangGraph starts each invocation afresh)."""
        return {key: value.copy() if type(value) is dict else copy.copy(value)
                for key, value in self._initial.items()}

    def _apply(self, state: dict[str, Any], update: Any) -> None:
        if type(update) is not dict and not isinstance(update, Mapping):  # dict: skip the ABC check
            if update is None:
                return
            raise TypeError(f"a node returned {type(update).__name__}, expected a dict")
        channels, reducers = self._channels, self._reducers
        for key, value in update.items():
            if key not in channels:
                continue  # LangGraph drops undeclared keys too
            reducer = reducers.get(key)
            if reducer is not None and key in state:
                state[key] = reducer(state[key], value)
            else:
                state[key] = value

    async def ainvoke(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The final state, as ``await compiled.ainvoke(inputs)`` returns it (judges may be awaited)."""
        state = self._fresh()
        self._apply(state, inputs)
        for _name, fn, is_async in self._steps:
            update = (await fn(state)) if is_async else fn(state)
            self._apply(state, update)
        return state

    def invoke(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The final state, as ``compiled.invoke(inputs)`` returns it."""
        state = self._fresh()
        self._apply(state, inputs)
        for _name, fn, is_async in self._steps:
            update = _drive(fn(state)) if is_async else fn(state)
            self._apply(state, update)
        return state
