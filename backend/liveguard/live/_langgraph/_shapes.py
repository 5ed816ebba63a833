"""Stream shapes: what the caller asked to see, what the guard streams, and one call's feed.

:class:`Shape` gives the caller exactly the parts, in exactly the shape, the unguarded
graph would yield, while the guard streams ``updates`` and ``checkpoints`` too.
:class:`StreamRun` turns the parts of one call into steps for its :class:`RunGuard`
(a pushed task judged with its input) and notes each checkpoint the graph writes.
:func:`interrupt_parts` streams a hold as LangGraph streams an interrupt."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from liveguard.core.fingerprint import fingerprint
from liveguard.core.messages import tool_calls
from liveguard.core.model import Step, Violation
from liveguard.live._langgraph._run_guard import RunGuard
from liveguard.readers.stream import UpdateStepper

__all__ = [
    "GUARD_MODES",
    "INTERRUPT",
    "PENDING",
    "PUSH",
    "SKIP",
    "Many",
    "Shape",
    "StreamRun",
    "each_part",
    "input_digest",
    "interrupt_parts",
]


_LIVEGUARD: Final = "__liveguard__"


INTERRUPT: Final = "__interrupt__"


SKIP: Any = object()


GUARD_MODES: Final = ("updates", "checkpoints")
"""What the guard streams besides what the caller asked for. Not ``"tasks"``: a pushed task's
input reaches the guard through the watcher (:meth:`StreamRun.pushed_ended`), so a graph that
pushes nothing pays nothing for it."""


PENDING: Final = "pending:"
"""Row-id prefix of the windows saved during the superstep that follows a checkpoint."""


PUSH: Final = "__pregel_push"


MAX_PUSHED: Final = 4096
"""Running pushed tasks whose inputs a run remembers at once."""


class Shape:
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
        # "checkpoints": the guard saves its windows with each checkpoint.
        self.request = [*self.modes, *(m for m in GUARD_MODES if m not in self.modes)]

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


class StreamRun:
    """One guarded call: reshapes parts for the caller and feeds every update to the guard.

    Root ``updates`` become steps (:class:`~liveguard.readers.stream.UpdateStepper`). The
    message step of a pushed task (a ``Send`` to a node of this graph) is judged together
    with the task's input (``{"input": <digest>, "output": ...}``): identical outputs of
    different inputs are not a repeat. The watcher, in the task's own thread, hands over the
    task's input digest as the task ends (:meth:`pushed_ended`), before LangGraph streams the
    task's update; the update takes the input of the ended task of its node whose output it
    holds (the same objects), else of the first to end. The same holds inside subgraphs:
    every step a subgraph makes under a pushed task (the ``Send``'s target is the subgraph,
    or a node that invokes one), at any depth, is judged with the inputs of the pushed tasks
    above it (:meth:`push`). Each root ``checkpoints`` event hands the checkpoint's id to
    ``on_checkpoint`` (the guard saves its windows with it).
    """

    __slots__ = ("_ended", "_ended_lock", "_guard", "_pushed", "_shape", "_stepper", "base",
                 "interrupted", "nested", "on_checkpoint", "pending", "request", "request_subgraphs",
                 "values", "watched")

    def __init__(self, shape: Shape, run_guard: RunGuard) -> None:
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
        # node -> (input digest, output) of its pushed tasks that ended, their updates not yet seen
        self._ended: dict[str, list[tuple[str, Any]]] = {}
        self._ended_lock = threading.Lock()
        self._pushed: dict[str, str] = {}  # namespace of a running pushed task -> input digest
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
                if INTERRUPT in payload:
                    self.interrupted = True
                violation = self._update(payload)
            elif mode == "checkpoints":
                checkpoint_id = _checkpoint_id(payload)
                if checkpoint_id is not None:
                    self.base = checkpoint_id
                    if self.on_checkpoint is not None:
                        self.on_checkpoint(checkpoint_id)
            if mode == "updates" and self.base is not None and self.on_checkpoint is not None:
                # the steps of the superstep under way, saved as they come: a process killed
                # before the graph's next checkpoint event reaches the guard keeps them
                self.on_checkpoint(PENDING + self.base)
        return (shape.outward(part, ns, mode, payload) if shape.wants(ns, mode) else SKIP), violation

    def _update(self, payload: Mapping[str, Any]) -> Violation | None:
        names = [k for k in payload if isinstance(k, str) and not k.startswith("__")]
        if len(names) == 1:
            name = names[0]
            if self.watched.get(name, 0) > 0:
                self.watched[name] -= 1  # the watcher judged it in the task's own thread
                return None
            if self._ended:
                digest = self._pushed_ended_input(name, payload[name])
                if digest is not None:  # a pushed task's update: judged with the task's input
                    return self._guard.check(lambda: [_with_input(step, digest)
                                                      for step in self._task_steps(name, payload[name])])
        return self._guard.check(lambda: self._stepper.feed(payload))

    def pushed_ended(self, name: str, digest: str, output: Any) -> None:
        """A pushed task of node ``name`` ended with ``output`` (from the watcher, in the task's
        own thread, before LangGraph streams its update): its update is judged with ``digest``."""
        with self._ended_lock:
            ended = self._ended.setdefault(name, [])
            ended.append((digest, output))
            if len(ended) > MAX_PUSHED:  # an update that never came: the oldest goes
                del ended[0]

    def _pushed_ended_input(self, name: str, value: Any) -> str | None:
        """The input digest of the ended pushed task of ``name`` whose update ``value`` is: the
        one whose output holds the same objects, else the first to end; None when none ended."""
        with self._ended_lock:
            ended = self._ended.get(name)
            if not ended:
                return None
            pick = 0
            if len(ended) > 1 and isinstance(value, Mapping):
                pick = next((i for i, (_, output) in enumerate(ended) if _holds(output, value)), 0)
            digest = ended.pop(pick)[0]
            if not ended:
                del self._ended[name]
            return digest

    def finish(self) -> Violation | None:
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

    def subgraph_step(self, node: str, output: Any, ns: str | None = None) -> Violation | None:
        """A subgraph node's output (from the watcher, in the node's own thread), judged with
        the inputs of the ``Send`` tasks it runs under (``ns``: its checkpoint namespace)."""
        digest = self._pushed_input(ns)
        if digest is None:
            return self._guard.check(lambda: self._stepper.feed({node: output}))
        return self._guard.check(lambda: [_with_input(step, digest)
                                          for step in self._stepper.feed({node: output})])

    def push(self, ns: str, value: Any) -> None:
        """A pushed task (a ``Send``'s target) starts at namespace ``ns`` with input ``value``:
        every step made under ``ns``, at any depth, is judged with it."""
        pushed = self._pushed
        pushed[ns] = input_digest(value)
        while len(pushed) > MAX_PUSHED:  # a task whose end never came: the oldest goes
            del pushed[next(iter(pushed))]

    def pushed_done(self, ns: str) -> None:
        """The pushed task at ``ns`` ended."""
        self._pushed.pop(ns, None)

    def _pushed_input(self, ns: str | None) -> str | None:
        """The input digest of the pushed tasks a step at ``ns`` runs under (the namespace
        and its ancestors); None when it runs under none."""
        pushed = self._pushed
        if not ns or not pushed:
            return None
        segments = ns.split("|")
        found = [digest for k in range(1, len(segments) + 1)
                 if (digest := pushed.get("|".join(segments[:k]), "?")) != "?"]
        if not found:
            return None
        return found[0] if len(found) == 1 else input_digest(found)

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
        """An ``updates`` part naming the stop, in the caller's shape (or SKIP)."""
        shape = self._shape
        payload = {_LIVEGUARD: value}
        if "updates" not in shape.modes:
            return SKIP
        if shape.v2:
            return {"type": "updates", "ns": (), "data": payload}
        return shape.outward(None, (), "updates", payload)


def _holds(output: Any, value: Mapping[str, Any]) -> bool:
    """Whether a node's update ``value`` is made of ``output``'s own values (the same objects)."""
    return isinstance(output, Mapping) and all(
        output.get(key, SKIP) is item for key, item in value.items())


def _checkpoint_id(payload: Mapping[str, Any]) -> str | None:
    config = payload.get("config")
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    found = configurable.get("checkpoint_id") if isinstance(configurable, Mapping) else None
    return found if isinstance(found, str) else None


def input_digest(value: Any) -> str:
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


class Many(tuple):  # type: ignore[type-arg]
    """Several parts to yield in order."""

    __slots__ = ()


def each_part(extra: Any) -> tuple[Any, ...]:
    """The parts in ``extra``: none (``SKIP``), several (:class:`Many`) or one."""
    if extra is SKIP:
        return ()
    return tuple(extra) if isinstance(extra, Many) else (extra,)


def interrupt_parts(shape: Shape, interrupt: Any, values: Any) -> Any:
    """An interrupt as LangGraph streams one: an ``updates`` part ``{"__interrupt__": (...)}``
    and a ``values`` part, the current values plus the interrupt (v2: in ``interrupts``),
    each when the caller asked for that mode (``values``: when the values are known)."""
    parts: list[Any] = []
    if "updates" in shape.modes:
        payload = {INTERRUPT: (interrupt,)}
        parts.append({"type": "updates", "ns": (), "data": payload} if shape.v2
                     else shape.outward(None, (), "updates", payload))
    if "values" in shape.modes and isinstance(values, Mapping):
        if shape.v2:
            parts.append({"type": "values", "ns": (), "data": dict(values),
                          "interrupts": (interrupt,)})
        else:
            parts.append(shape.outward(None, (), "values", {**values, INTERRUPT: (interrupt,)}))
    return Many(parts) if parts else SKIP
