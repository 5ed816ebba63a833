"""A normalized run tree → steps, by the one step convention (see :mod:`liveguard.readers.langsmith`).

Node runs are found by their LangGraph metadata; a node run's traced return value is
rebuilt into the update ``stream_mode="updates"`` would have shown and fed to one
:class:`~liveguard.readers.stream.UpdateStepper` per tree; tool runs become tool steps,
matched to their tool messages by call id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from liveguard.core.messages import dumpd_kwargs, is_tool_message, tool_step
from liveguard.core.model import Step
from liveguard.readers._run_tree import Run
from liveguard.readers.stream import UpdateStepper
from liveguard.readers.updates import _clean, _clean_step, _is_command, _node_update

__all__ = ["TreeReader"]

_TRACEBACK = "Traceback (most recent call last):"


def _is_new_task(run: Run, enclosing: Run | None) -> bool:
    """Whether ``run`` is a node run of its own, not a run inside ``enclosing``'s task."""
    if run.node is None:
        return False
    if enclosing is None:
        return True
    if run.namespace is not None and enclosing.namespace is not None:
        return run.namespace != enclosing.namespace
    return (run.node, run.step) != (enclosing.node, enclosing.step)


def _node_runs(run: Run, enclosing: Run | None) -> list[Run]:
    """The node runs below ``run`` (not below those), in execution order."""
    found: list[Run] = []
    for child in run.children:
        if _is_new_task(child, enclosing):
            found.append(child)
        else:
            found += _node_runs(child, enclosing)
    return found


def _tool_runs(run: Run) -> list[Run]:
    """The outermost tool runs below ``run``, by start time."""
    found: list[Run] = []
    for child in run.children:
        if child.run_type == "tool":
            found.append(child)
        else:
            found += _tool_runs(child)
    return sorted(found, key=lambda r: (r.start, r.dotted_order))


def _node_name(run: Run, parents: Sequence[str]) -> str:
    node = run.node or run.name or "unknown_node"
    ns = run.namespace
    if ns is None:
        fallback = run.metadata.get("checkpoint_ns")  # the enclosing graph's namespace
        ns = f"{fallback}|{node}:" if isinstance(fallback, str) and fallback else None
    if ns is None:
        return ":".join([*parents, node])
    names = [part.rpartition(":")[0] or part for part in ns.split("|")]
    names[-1] = node
    return ":".join(n for n in names if n)


def _error_text(error: Any) -> Any:
    """A traced error without its traceback (``repr(exc)`` as the tracer records it)."""
    if not isinstance(error, str):
        return error
    if not error.strip():
        return error
    head = error.split(_TRACEBACK, 1)[0].strip()
    return head or error.strip().splitlines()[0]


def _message_content(value: Any) -> tuple[Any, bool]:
    """(content, failed) of a tool output: a message's content, else the value."""
    if isinstance(value, Mapping):
        kwargs = dumpd_kwargs(value)
        message = kwargs if kwargs is not None else value
        if "content" in message and is_tool_message(message):
            return message.get("content"), message.get("status") == "error"
    return value, False


class TreeReader:
    """Turns one normalized run tree into steps (one stepper: call memory spans the run)."""

    def __init__(self) -> None:
        self.stepper = UpdateStepper()

    def steps(self, root: Run) -> list[Step]:
        # Siblings are already in (langgraph_step, start_time, dotted_order) order; runs that
        # are not node runs (a parent app's chains) keep their own order around them.
        units = [root] if root.node is not None else _node_runs(root, None)
        steps: list[Step] = []
        for unit in units:
            steps += self._unit(unit, ())
        return [_clean_step(step) for step in steps]

    def _unit(self, run: Run, parents: tuple[str, ...]) -> list[Step]:
        name = _node_name(run, parents)
        inner = _node_runs(run, run)
        if inner:
            prefix = (*parents, run.node or name)
            return [step for unit in inner for step in self._unit(unit, prefix)]
        tools = _tool_runs(run)
        if run.error is not None:
            return [self._tool_step(name, tool) for tool in tools]
        update = _clean(_node_update(run.outputs))
        stream_steps = self.stepper.feed({name: update})
        if not tools:
            return stream_steps
        return self._tool_steps(name, update, stream_steps, tools)

    def _tool_steps(self, name: str, update: Any, stream_steps: list[Step], tools: list[Run]) -> list[Step]:
        messages = _tool_messages(update)
        if not messages or len(messages) != len(stream_steps) or any(s.tool is None for s in stream_steps):
            return [self._tool_step(name, tool) for tool in tools]
        by_call = {_tool_call_id(tool): tool for tool in tools}
        steps: list[Step] = []
        matched: set[str] = set()
        for message, stream_step in zip(messages, stream_steps, strict=True):
            call_id = message.get("tool_call_id")
            tool = by_call.get(call_id) if isinstance(call_id, str) else None
            step = stream_step
            if tool is not None:
                matched.add(tool.id)
                if step.args is None:
                    step = step.model_copy(update={"args": _tool_args(tool)})
            steps.append(step)
        steps += [self._tool_step(name, tool) for tool in tools if tool.id not in matched]
        return steps

    @staticmethod
    def _tool_step(name: str, tool: Run) -> Step:
        outputs = tool.outputs
        result: Any = outputs or None  # a failed tool run records no outputs ({})
        failed = False
        if isinstance(outputs, Mapping) and "output" in outputs:
            result, failed = _message_content(outputs["output"])
            if _is_command(result):
                result = result.get("update")
        return tool_step(name, tool.name, _tool_args(tool), result, failed=failed,
                         error=_error_text(tool.error))


def _tool_messages(update: Any) -> list[Mapping[str, Any]]:
    """The tool messages of an update (dicts, as in JSON form), in stream order."""
    found: list[Mapping[str, Any]] = []
    for item in update if isinstance(update, list) else [update]:
        if not isinstance(item, Mapping):
            continue
        messages = item.get("messages")
        messages = messages if isinstance(messages, list) else [messages]
        found += [m for m in messages if isinstance(m, Mapping) and is_tool_message(m)]
    return found


def _tool_call_id(tool: Run) -> str | None:
    call_id = tool.extra.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        return call_id
    output = tool.outputs.get("output") if isinstance(tool.outputs, Mapping) else None
    call_id = output.get("tool_call_id") if isinstance(output, Mapping) else None
    return call_id if isinstance(call_id, str) and call_id else None


def _tool_args(tool: Run) -> Any:
    inputs = tool.inputs
    if (
        isinstance(inputs, Mapping)
        and set(inputs) == {"input"}
        and isinstance(inputs["input"], str)
        and _tool_call_id(tool) is None
    ):
        return inputs["input"]  # a plain string input, wrapped by the tracer
    return inputs
