"""LangSmith run trees and their JSON exports → :class:`~liveguard.model.Trajectory`.

One step convention (the one of :mod:`liveguard.readers.stream`, so a run
gets the same verdict however it was recorded):

* **Run trees** (:func:`run_to_trajectory`): a root run with its child runs, as
  ``langsmith.Client.read_run(id, load_child_runs=True)`` returns it, as a
  ``langchain_core`` tracer builds it in memory (``RunCollectorCallbackHandler``), or as
  a JSON export of those objects (``child_runs`` nested, or a flat list whose children
  name their ``parent_run_id``). :func:`load_export` reads such a file.
* **Checkpoint histories** (:func:`thread_to_trajectory`): ``graph.get_state_history``
  of one thread.
* **A LangSmith project**, online (:func:`list_project_trajectories`), with verdicts
  written back as feedback (:func:`push_feedback`). Both are thin layers over
  ``langsmith.Client``.

How a run tree becomes steps
----------------------------

* A **node run** is the outermost run of a LangGraph task: its metadata has
  ``langgraph_node`` and a ``langgraph_checkpoint_ns`` that differs from the enclosing
  node run's (the chat model, tool and chain runs inside a node inherit the node's
  metadata and namespace: they are not node runs). Without namespaces, a new
  ``(langgraph_node, langgraph_step)`` pair marks a node run. Sibling runs are taken in
  the order ``(langgraph_step, start_time, dotted_order)``.
* A node run's **update** is what ``stream_mode="updates"`` would have shown for the
  task, rebuilt from its traced return value the way LangGraph turns a return value into
  channel writes: a dict; a ``Command``'s ``update`` (none for ``graph=PARENT``); a list
  with ``Command`` objects, concatenated; a channel written twice makes a list of
  one-key updates. The tracer records a non-dict return value as ``{"output": value}``;
  that wrapper is removed when ``value`` is ``None``, a scalar, a ``Command`` or a list
  holding one (a dict return value whose only key is ``output`` is otherwise ambiguous
  and kept as it is). The update then goes through
  :class:`~liveguard.readers.stream.UpdateStepper`, one per run, so a tool result gets
  the arguments of its call by id exactly as in a stream.
* A node run **containing tool runs** (``run_type == "tool"``) gives one tool step per
  tool run: ``tool`` = the tool run's name. When the node's update holds the tool
  messages (a ``ToolNode``), each tool run is matched to its message by
  ``tool_call_id`` (``extra.tool_call_id`` or its output message) and the step is the
  stream's step for that message (``args`` from the calling AI message, ``result`` =
  the message content, ``error`` = the content when the message's status is
  ``error``); ``args`` falls back to the tool run's inputs. Otherwise the step is read
  from the tool run alone: ``args`` = its inputs (the tracer records a StructuredTool
  call's arguments as the inputs dict, not as JSON text; a plain string input is
  recorded as ``{"input": text}``, unwrapped here when the run has no tool call id),
  ``result`` = ``outputs["output"]`` (its content when it is a message) or the outputs,
  ``error`` = the run's error, cut before its traceback.
* A node run whose task **failed** (``error`` set) gives no step, as in a stream: only
  its tool runs, if any, give steps.
* **Subgraphs keep their namespace.** A node run that contains node runs of its own (a
  compiled subgraph added as a node, or a node function that invokes a graph) is a
  container: it gives the steps of its inner node runs, in their own order, and no
  step of its own. A step's node is the chain of node names of its
  ``langgraph_checkpoint_ns`` joined by ``":"`` (the task ids dropped): node ``a`` of
  the subgraph run by node ``sub`` is ``"sub:a"``, one level deeper ``"outer:sub:a"``.
  Without namespaces the enclosing node runs' names are used.
* Messages are plain dicts without ids or provider metadata (the keys in
  :data:`MESSAGE_KEYS`, empty ones dropped; ``dumpd`` constructor dicts are unwrapped).
  Payloads are first put in JSON form with the LangSmith client's own serializer, so an
  in-memory tracer run and its JSON export give identical steps.
* Runs that are not node runs (the graph's own run, a parent app's chains) are walked
  through in their own order, so an app that runs two graphs gives the first graph's
  steps, then the second's.

Nothing from LangSmith, LangChain or LangGraph is imported at module import time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from liveguard.errors import TrajectoryReadError
from liveguard.messages import dumpd_kwargs, field, is_tool_message, tool_step
from liveguard.model import Expected, Step, Trajectory
from liveguard.readers.stream import UpdateStepper
from liveguard.readers.updates import (
    MAX_DEPTH,
    MESSAGE_KEYS,
    _clean,
    _clean_step,
    _is_command,
    _metadata,
    _node_update,
    _to_json,
)

__all__ = ["MAX_DEPTH", "MESSAGE_KEYS", "load_export", "run_to_dict", "run_to_trajectory"]

SOURCE_LANGSMITH = "langsmith"
_TRACEBACK = "Traceback (most recent call last):"


# ============================================================================ run trees


@dataclass
class _Run:
    """A run in one normalized shape, whatever object it came from."""

    id: str
    name: str
    run_type: str
    extra: dict[str, Any]
    inputs: Any
    outputs: Any
    error: str | None
    status: str | None
    start: float
    dotted_order: str
    session_id: str | None
    children: list[_Run] = dc_field(default_factory=list)

    @property
    def metadata(self) -> Mapping[str, Any]:
        md = self.extra.get("metadata")
        return md if isinstance(md, Mapping) else {}

    @property
    def node(self) -> str | None:
        node = self.metadata.get("langgraph_node")
        return node if isinstance(node, str) and node else None

    @property
    def step(self) -> int | None:
        step = self.metadata.get("langgraph_step")
        return step if isinstance(step, int) and not isinstance(step, bool) else None

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("langgraph_checkpoint_ns")
        return ns if isinstance(ns, str) and ns else None

    def sort_key(self) -> tuple[int, float, str]:
        step = self.step
        return (-1 if step is None else step, self.start, self.dotted_order)


def _with_start_time(metadata: dict[str, Any], start: float) -> dict[str, Any]:
    """The root run's ``start_time`` (ISO 8601, UTC) in ``metadata``: the gate's window order."""
    if math.isfinite(start) and "start_time" not in metadata:
        metadata["start_time"] = datetime.fromtimestamp(start, UTC).isoformat()
    return metadata


def _timestamp(value: Any) -> float:
    """Seconds since the epoch; ``inf`` (sorts last) when missing or unreadable."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return float("inf")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        stamp: float = value.timestamp()
        return stamp
    return float("inf")


def _run_id(obj: Any) -> str | None:
    ident = field(obj, "id")
    return str(ident) if ident is not None and str(ident) else None


def _status_of(obj: Any, error: str | None) -> str | None:
    status = field(obj, "status")
    if isinstance(status, str) and status:
        return status
    if error:
        return "error"
    if field(obj, "end_time") is not None:
        return "success"
    return None


class _OddRunError(ValueError):
    """A run that cannot be read; the message is the whole reason."""


def _normalize(obj: Any, adopted: Mapping[str, list[Any]], depth: int, seen: set[str]) -> _Run:
    """One run (and its subtree) in the :class:`_Run` shape; raises ``_OddRunError`` on odd data.

    Problems below the root name the run they are about (``run <id>: ...``).
    """
    if depth > MAX_DEPTH:
        raise _OddRunError(f"run tree deeper than {MAX_DEPTH} levels (a cycle?)")
    if obj is None or isinstance(obj, str | int | float | bool | list):
        raise _OddRunError(f"expected a run, got {type(obj).__name__}")
    ident = _run_id(obj)
    if ident is None:
        raise _OddRunError("a run has no id")
    if ident in seen:
        raise _OddRunError(f"run {ident} appears twice in the tree (a cycle?)")
    seen.add(ident)
    where = f"run {ident}: " if depth else ""
    extra = _to_json(field(obj, "extra")) or {}
    if not isinstance(extra, dict):
        raise _OddRunError(f"{where}extra is {type(extra).__name__}, not an object")
    error = field(obj, "error")
    error = None if error is None else str(error)
    name, run_type = field(obj, "name"), field(obj, "run_type")
    session = field(obj, "session_id")
    children_in = field(obj, "child_runs") or []
    if not isinstance(children_in, list | tuple):
        raise _OddRunError(f"{where}child_runs is {type(children_in).__name__}, not a list")
    children = list(children_in) + list(adopted.get(ident, ()))
    run = _Run(
        id=ident,
        name=name if isinstance(name, str) else "",
        run_type=run_type if isinstance(run_type, str) else "",
        extra=extra,
        inputs=_to_json(field(obj, "inputs")),
        outputs=_to_json(field(obj, "outputs")),
        error=error,
        status=_status_of(obj, error),
        start=_timestamp(field(obj, "start_time")),
        dotted_order=str(field(obj, "dotted_order") or ""),
        session_id=None if session is None else str(session),
    )
    known: set[str] = set()
    for child in children:
        child_id = _run_id(child)
        if child_id is not None and child_id in known:
            continue  # nested and also listed flat: the same run
        if child_id is not None:
            known.add(child_id)
        run.children.append(_normalize(child, adopted, depth + 1, seen))
    run.children.sort(key=_Run.sort_key)
    return run


def _is_new_task(run: _Run, enclosing: _Run | None) -> bool:
    """Whether ``run`` is a node run of its own, not a run inside ``enclosing``'s task."""
    if run.node is None:
        return False
    if enclosing is None:
        return True
    if run.namespace is not None and enclosing.namespace is not None:
        return run.namespace != enclosing.namespace
    return (run.node, run.step) != (enclosing.node, enclosing.step)


def _node_runs(run: _Run, enclosing: _Run | None) -> list[_Run]:
    """The node runs below ``run`` (not below those), in execution order."""
    found: list[_Run] = []
    for child in run.children:
        if _is_new_task(child, enclosing):
            found.append(child)
        else:
            found += _node_runs(child, enclosing)
    return found


def _tool_runs(run: _Run) -> list[_Run]:
    """The outermost tool runs below ``run``, by start time."""
    found: list[_Run] = []
    for child in run.children:
        if child.run_type == "tool":
            found.append(child)
        else:
            found += _tool_runs(child)
    return sorted(found, key=lambda r: (r.start, r.dotted_order))


def _node_name(run: _Run, parents: Sequence[str]) -> str:
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


class _TreeReader:
    """Turns one normalized run tree into steps (one stepper: call memory spans the run)."""

    def __init__(self) -> None:
        self.stepper = UpdateStepper()

    def steps(self, root: _Run) -> list[Step]:
        # Siblings are already in (langgraph_step, start_time, dotted_order) order; runs that
        # are not node runs (a parent app's chains) keep their own order around them.
        units = [root] if root.node is not None else _node_runs(root, None)
        steps: list[Step] = []
        for unit in units:
            steps += self._unit(unit, ())
        return [_clean_step(step) for step in steps]

    def _unit(self, run: _Run, parents: tuple[str, ...]) -> list[Step]:
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

    def _tool_steps(self, name: str, update: Any, stream_steps: list[Step], tools: list[_Run]) -> list[Step]:
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
    def _tool_step(name: str, tool: _Run) -> Step:
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


def _tool_call_id(tool: _Run) -> str | None:
    call_id = tool.extra.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        return call_id
    output = tool.outputs.get("output") if isinstance(tool.outputs, Mapping) else None
    call_id = output.get("tool_call_id") if isinstance(output, Mapping) else None
    return call_id if isinstance(call_id, str) and call_id else None


def _tool_args(tool: _Run) -> Any:
    inputs = tool.inputs
    if (
        isinstance(inputs, Mapping)
        and set(inputs) == {"input"}
        and isinstance(inputs["input"], str)
        and _tool_call_id(tool) is None
    ):
        return inputs["input"]  # a plain string input, wrapped by the tracer
    return inputs


def _graph_name(explicit: str | None, md: Mapping[str, Any], name: str, is_graph: bool) -> str | None:
    if explicit is not None:
        return explicit
    tagged = md.get("graph")
    if isinstance(tagged, str) and tagged:
        return tagged
    return name if is_graph and name and name != "LangGraph" else None


def _expected_of(md: Mapping[str, Any]) -> Expected | None:
    data = md.get("expected")
    if data is None:
        return None
    return Expected.model_validate(data)


def _source_of(run: Any) -> str:
    try:
        return _run_id(run) or "<run>"
    except Exception:  # an object whose id property raises
        return "<run>"


def _build_tree(run: Any) -> tuple[Any, dict[str, list[Any]]]:
    """A run object, or the root of a flat list of runs that name their parents."""
    if not isinstance(run, list | tuple):
        return run, {}
    roots, adopted, problems = _forest(run)
    if problems:
        index, reason = problems[0]
        raise _OddRunError(f"runs[{index}]: {reason}")
    if len(roots) != 1:
        raise _OddRunError(f"a flat run list needs exactly one root run, found {len(roots)}")
    return roots[0][1], adopted


_Forest = tuple[list[tuple[int, Any]], dict[str, list[Any]], list[tuple[int, str]]]


def _forest(items: Sequence[Any]) -> _Forest:
    """Split runs into roots and (parent id → children) links; problems by list index."""
    problems: list[tuple[int, str]] = []
    ids: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            problems.append((index, f"expected a run object, got {type(item).__name__}"))
            continue
        ident = _run_id(item)
        if ident is not None:
            ids.setdefault(ident, index)
    roots: list[tuple[int, Any]] = []
    adopted: dict[str, list[Any]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        parent = item.get("parent_run_id")
        parent_id = None if parent is None else str(parent)
        if parent_id is not None and parent_id in ids and parent_id != _run_id(item):
            adopted.setdefault(parent_id, []).append(item)
        else:
            roots.append((index, item))
    # Runs reachable from no root (their parent chain loops) are reported, not dropped.
    reachable: set[str] = set()
    stack = [item for _, item in roots]
    while stack:
        item = stack.pop()
        ident = _run_id(item)
        if ident is None or ident in reachable:
            continue
        reachable.add(ident)
        stack += adopted.get(ident, [])
        nested = item.get("child_runs")
        stack += [c for c in nested if isinstance(c, Mapping)] if isinstance(nested, list) else []
    problems += [
        (index, f"run {_run_id(item)} is not reachable from a root run (parent_run_id cycle)")
        for index, item in enumerate(items)
        if isinstance(item, Mapping) and _run_id(item) not in reachable
    ]
    return roots, adopted, problems


def run_to_trajectory(
    run: Any,
    *,
    graph: str | None = None,
    expected: Expected | None = None,
) -> Trajectory:
    """One run tree → a Trajectory; raises :class:`TrajectoryReadError` (source = run id).

    ``run`` is a ``langsmith.schemas.Run`` with ``child_runs``, a ``langchain_core``
    tracer run (a ``RunTree``), a dict of its JSON export (``child_runs`` nested), or a
    flat list of such dicts whose children name their ``parent_run_id``.

    The trajectory's ``run_id`` is the root run's id, ``status`` the root's (``success``
    / ``error``), ``outcome`` the root's outputs, ``metadata`` ``{"source": "langsmith"}``
    plus the root's ``scenario`` / ``policy`` metadata and its project (``session_id``).
    ``graph`` defaults to the root's ``graph`` metadata, else the root run's name when it
    is a graph's run (not the generic ``"LangGraph"``); ``expected`` to the root's
    ``expected`` metadata.
    """
    source = "<run>" if isinstance(run, list | tuple) else _source_of(run)
    try:
        top, adopted = _build_tree(run)
        source = _source_of(top)
        root = _normalize(top, adopted, 0, set())
        steps = _TreeReader().steps(root)
        md = root.metadata
        is_graph = root.node is None and any(child.node is not None for child in root.children)
        metadata = _metadata(md, SOURCE_LANGSMITH, root.session_id)
        if not steps and not root.children:
            # A root without its child runs (``list_runs`` without ``load_child_runs``): its
            # final messages are the only record of the run; read them, or it has no steps
            # (missing evidence, never "no loop").
            steps = _steps_from_root_messages(root)
            if steps:
                metadata["steps_from"] = "outputs.messages"
                metadata.setdefault("policy", "tool_agent")
        return Trajectory(
            run_id=root.id,
            graph=_graph_name(graph, md, root.name, is_graph),
            steps=steps,
            status=root.status,
            outcome=_clean(root.outputs),
            metadata=_with_start_time(metadata, root.start),
            expected=expected if expected is not None else _expected_of(md),
        )
    except TrajectoryReadError:
        raise
    except _OddRunError as exc:
        raise TrajectoryReadError(source, str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise TrajectoryReadError(source, f"{loc}: {first['msg']}") from None
    except Exception as exc:  # odd runs never crash a batch: they become read errors
        raise TrajectoryReadError(source, f"{type(exc).__name__}: {exc}") from None


def _steps_from_root_messages(root: _Run) -> list[Step]:
    """The steps of the root's ``outputs.messages`` (a ``create_agent``-style message list,
    read as :func:`liveguard.readers.message_list.steps_from_messages` does), or none."""
    from liveguard.readers.message_list import steps_from_messages

    outputs = root.outputs
    messages = outputs.get("messages") if isinstance(outputs, Mapping) else None
    if not isinstance(messages, list) or not messages:
        return []
    return steps_from_messages({"messages": messages})


def run_to_dict(run: Any) -> dict[str, Any]:
    """A run tree as LangSmith-style JSON (``child_runs`` nested), for exports and tests.

    Fields: ``id``, ``name``, ``run_type``, ``start_time``, ``end_time``, ``status``,
    ``error``, ``extra``, ``inputs``, ``outputs``, ``events``, ``tags``,
    ``parent_run_id``, ``trace_id``, ``dotted_order``, ``session_id``, ``child_runs``.
    Payloads are serialized with the LangSmith client's serializer; ``serialized`` (the
    object that ran) is left out, as LangSmith's run reads leave it out.
    """
    error = field(run, "error")
    data: dict[str, Any] = {
        "id": _run_id(run),
        "name": field(run, "name"),
        "run_type": field(run, "run_type"),
        "start_time": _to_json(field(run, "start_time")),
        "end_time": _to_json(field(run, "end_time")),
        "status": _status_of(run, None if error is None else str(error)),
        "error": error,
        "extra": _to_json(field(run, "extra")),
        "inputs": _to_json(field(run, "inputs")),
        "outputs": _to_json(field(run, "outputs")),
        "events": _to_json(field(run, "events")),
        "tags": _to_json(field(run, "tags")),
        "parent_run_id": _to_json(field(run, "parent_run_id")),
        "trace_id": _to_json(field(run, "trace_id")),
        "dotted_order": field(run, "dotted_order"),
        "session_id": _to_json(field(run, "session_id")),
    }
    data["child_runs"] = [run_to_dict(child) for child in (field(run, "child_runs") or [])]
    return data


def load_export(path: str | Path) -> Iterator[Trajectory | TrajectoryReadError]:
    """Every run of a LangSmith JSON export: one run, a list of runs, or ``{"runs": [...]}``.

    Runs nest their ``child_runs``, or the list is flat and children name their
    ``parent_run_id`` (both may be mixed). A run that cannot be read becomes a
    :class:`TrajectoryReadError` located ``file:index`` (its position in the list); a
    file that cannot be read or parsed, one located at the file.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        yield TrajectoryReadError(str(path), f"cannot open: {exc.strerror or exc}")
        return
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        yield TrajectoryReadError(str(path), f"invalid JSON: {exc}")
        return
    if isinstance(data, Mapping) and isinstance(data.get("runs"), list):
        data = data["runs"]
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list):
        yield TrajectoryReadError(str(path), f"expected a run or a list of runs, got {type(data).__name__}")
        return
    roots, adopted, problems = _forest(data)
    located = dict(problems)
    order = sorted({index for index, _ in roots} | set(located))
    by_index = dict(roots)
    for index in order:
        where = f"{path}:{index}"
        if index in located:
            yield TrajectoryReadError(where, located[index])
            continue
        item = by_index[index]
        try:
            root = _normalize_checked(item, adopted)
            yield run_to_trajectory(root)
        except TrajectoryReadError as exc:
            yield TrajectoryReadError(where, f"run {exc.source}: {exc.reason}")


def _normalize_checked(item: Any, adopted: Mapping[str, list[Any]]) -> Any:
    """``item`` with its adopted (flat-listed) descendants nested, ready for conversion."""
    if not adopted:
        return item

    def nest(obj: Any, depth: int) -> Any:
        if depth > MAX_DEPTH or not isinstance(obj, Mapping):
            return obj
        ident = _run_id(obj)
        nested = obj.get("child_runs")
        if nested is not None and not isinstance(nested, list):
            return obj  # reported by the conversion
        children = list(nested or [])
        known = {_run_id(c) for c in children if isinstance(c, Mapping)}
        children += [c for c in adopted.get(ident or "", []) if _run_id(c) not in known]
        return {**obj, "child_runs": [nest(c, depth + 1) for c in children]}

    return nest(item, 0)
