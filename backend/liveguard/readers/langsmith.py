"""LangSmith run trees and their JSON exports → :class:`~liveguard.core.model.Trajectory`.

One step convention (the one of :mod:`liveguard.readers.stream`, so a run
gets the same verdict however it was recorded):

* **Run trees** (:func:`run_to_trajectory`): a root run with its child runs, as
  ``langsmith.Client.read_run(id, load_child_runs=True)`` returns it, as a
  ``langchain_core`` tracer builds it in memory (``RunCollectorCallbackHandler``), or as
  a JSON export of those objects (``child_runs`` nested, or a flat list whose children
  name their ``parent_run_id``). :func:`load_export` reads such a file.
* Checkpoint histories are :mod:`liveguard.readers.checkpoints`; a LangSmith project,
  online, with verdicts written back as feedback, is :mod:`liveguard.integrations.langsmith`.
* The tree's shape is :mod:`liveguard.readers._run_tree`; the steps below are read by
  :mod:`liveguard.readers._run_steps`.

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
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from liveguard.core.messages import field
from liveguard.core.model import Expected, Step, Trajectory
from liveguard.core.schema_errors import describe, withheld
from liveguard.errors import TrajectoryReadError
from liveguard.readers._run_steps import TreeReader
from liveguard.readers._run_tree import (
    OddRunError,
    Run,
    build_tree,
    forest,
    nest_adopted,
    normalize,
    run_id,
    status_of,
)
from liveguard.readers.updates import MAX_RUN_DEPTH, MESSAGE_KEYS, _clean, _metadata, _to_json

__all__ = ["MAX_RUN_DEPTH", "MESSAGE_KEYS", "load_export", "run_to_dict", "run_to_trajectory"]

SOURCE_LANGSMITH = "langsmith"


def _with_start_time(metadata: dict[str, Any], start: float) -> dict[str, Any]:
    """The root run's ``start_time`` (ISO 8601, UTC) in ``metadata``: the gate's window order."""
    if math.isfinite(start) and "start_time" not in metadata:
        metadata["start_time"] = datetime.fromtimestamp(start, UTC).isoformat()
    return metadata


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
        return run_id(run) or "<run>"
    except Exception:  # an object whose id property raises
        return "<run>"


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
        top, adopted = build_tree(run)
        source = _source_of(top)
        root = normalize(top, adopted, 0, set())
        steps = TreeReader().steps(root)
        md = root.metadata
        is_graph = root.node is None and any(child.node is not None for child in root.children)
        metadata = _metadata(md, SOURCE_LANGSMITH, root.session_id)
        graph_name = _graph_name(graph, md, root.name, is_graph)
        if isinstance(root.name, str) and root.name not in ("", "LangGraph", graph_name):
            metadata["run_name"] = root.name  # the run's name in LangSmith, beside its id
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
            graph=graph_name,
            steps=steps,
            status=root.status,
            outcome=_clean(root.outputs),
            metadata=_with_start_time(metadata, root.start),
            expected=expected if expected is not None else _expected_of(md),
        )
    except TrajectoryReadError:
        raise
    except OddRunError as exc:
        raise TrajectoryReadError(source, str(exc)) from None
    except ValidationError as exc:  # keys and positions, every error, never a value
        raise TrajectoryReadError(source, describe(exc, Trajectory)) from None
    except Exception as exc:  # odd runs never crash a batch: they become read errors
        raise TrajectoryReadError(source, withheld(exc)) from None


def _steps_from_root_messages(root: Run) -> list[Step]:
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
        "id": run_id(run),
        "name": field(run, "name"),
        "run_type": field(run, "run_type"),
        "start_time": _to_json(field(run, "start_time")),
        "end_time": _to_json(field(run, "end_time")),
        "status": status_of(run, None if error is None else str(error)),
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
    roots, adopted, problems = forest(data)
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
            root = nest_adopted(item, adopted)
            yield run_to_trajectory(root)
        except TrajectoryReadError as exc:
            yield TrajectoryReadError(where, f"run {exc.source}: {exc.reason}")
