"""LangGraph checkpoint history → :class:`~liveguard.core.model.Trajectory`.

:func:`thread_to_trajectory` reads ``graph.get_state_history`` of one thread with the step
convention of :mod:`liveguard.readers.langsmith` (run trees) and
:mod:`liveguard.readers.stream` (live updates), so a run gets the same verdict however it
was recorded.

Checkpoint histories use the same rules: each task of each checkpoint (oldest first)
with a result is one update (``PregelTask.result``: the task's channel writes; a channel
written twice is ``{"$writes": [...]}``, read as several updates); a task whose
subgraph left checkpoints under ``<node>:<task id>`` gives its inner steps, namespaced
like the run trees. For the target graphs in ``graphs/`` the three sources give exactly
the steps of a ``stream_mode="updates"`` run. Where they can differ: a checkpoint holds
no tool runs (a node that calls tools itself shows only its update there), parallel
tasks of one superstep come in task order (stream: completion order; run trees: start
order), cached tasks have no recorded result, and a ``checkpointer=True`` subgraph
(one history per thread, not per task) is read as its parent node's update.

From a checkpointer alone (no compiled graph: what a node sees in its config),
:func:`saver_history` follows one checkpoint chain back and reads each finished task from
the pending writes, into ``{node: update}`` chunks for the same
:class:`~liveguard.readers.stream.UpdateStepper`; :func:`read_saver_thread` is that reader
for a whole thread (the approval step's reader; a test checks it gives
:func:`thread_to_trajectory`'s steps on every campaign scenario). A superstep that ran
several nodes in parallel is attributed by node name order (its content is exact).

Nothing from LangSmith, LangChain or LangGraph is imported at module import time.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping, Sequence
from typing import Any

from liveguard.core._twin import Body, Op
from liveguard.core.model import Step, Trajectory
from liveguard.core.schema_errors import withheld
from liveguard.errors import TrajectoryReadError
from liveguard.readers.stream import UpdateStepper, steps_from_updates
from liveguard.readers.updates import (
    COPIED_METADATA,
    MAX_RUN_DEPTH,
    _clean,
    _clean_step,
    _metadata,
    _task_update,
    _to_json,
)

__all__ = ["read_saver_thread", "saver_history", "thread_to_trajectory"]

SOURCE_CHECKPOINT = "checkpoint"


# ============================================================================ checkpoints


def _snapshot_history(graph: Any, config: Mapping[str, Any]) -> list[Any]:
    """``graph.get_state_history(config)``, oldest first."""
    return list(graph.get_state_history(dict(config)))[::-1]


class _HistoryReader:
    def __init__(self, graph: Any, base: Mapping[str, Any]) -> None:
        self.graph = graph
        self.base = base
        self.stepper = UpdateStepper()

    def steps(self, snapshots: list[Any], parents: tuple[str, ...], ns: str, depth: int) -> list[Step]:
        steps: list[Step] = []
        for snapshot in snapshots:
            for task in getattr(snapshot, "tasks", ()) or ():
                name = getattr(task, "name", None)
                result = getattr(task, "result", None)
                if not isinstance(name, str) or not name or name.startswith("__"):
                    continue
                if result is None or getattr(task, "error", None) is not None:
                    continue  # not finished (pending, interrupted) or failed: no update
                inner = self._subgraph(task, parents, ns, depth)
                if inner:
                    steps += inner
                    continue
                node = ":".join([*parents, name])
                steps += self.stepper.feed({node: _task_update(_clean(_to_json(result)))})
        return steps

    def _subgraph(self, task: Any, parents: tuple[str, ...], ns: str, depth: int) -> list[Step]:
        if depth >= MAX_RUN_DEPTH:
            return []
        task_ns = f"{task.name}:{task.id}"
        child_ns = f"{ns}|{task_ns}" if ns else task_ns
        config = {**self.base, "configurable": {**self.base.get("configurable", {}),
                                                "checkpoint_ns": child_ns}}
        try:
            snapshots = _snapshot_history(self.graph, config)
        except ValueError:
            return []
        if not snapshots:
            return []
        return self.steps(snapshots, (*parents, task.name), child_ns, depth + 1)


def thread_to_trajectory(
    graph: Any,
    config: Mapping[str, Any],
    *,
    graph_name: str | None = None,
) -> Trajectory:
    """One thread's checkpoint history (``graph.get_state_history(config)``) → a Trajectory.

    ``graph`` is the compiled graph with its checkpointer; ``config`` names the thread
    (``{"configurable": {"thread_id": ...}}``). Each finished task of each checkpoint,
    oldest first, is one update, read like a stream update; tasks that failed or have not
    finished give no step, as in a stream. The run id is the thread id, ``outcome`` the
    last checkpoint's values, ``status`` ``error`` / ``interrupted`` / ``success``,
    ``metadata`` ``{"source": "checkpoint"}`` plus ``scenario`` / ``policy`` from the
    checkpoints' metadata. Raises :class:`TrajectoryReadError` (source = thread id).
    """
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    source = str(thread) if thread is not None and str(thread) else "<thread>"
    if thread is None:
        raise TrajectoryReadError(source, "config has no configurable.thread_id")
    base = {"configurable": {k: v for k, v in configurable.items()  # type: ignore[union-attr]
                             if k not in ("checkpoint_id", "checkpoint_ns")}}
    try:
        snapshots = _snapshot_history(graph, config)
        if not snapshots:
            raise TrajectoryReadError(source, "the thread has no checkpoints")
        steps = [_clean_step(s) for s in _HistoryReader(graph, base).steps(snapshots, (), "", 0)]
        last = snapshots[-1]
        md: dict[str, Any] = {}
        for snapshot in snapshots:
            snap_md = getattr(snapshot, "metadata", None) or {}
            md.update({k: v for k, v in snap_md.items() if k in COPIED_METADATA})
        tasks = getattr(last, "tasks", ()) or ()
        if any(getattr(t, "error", None) is not None for t in tasks):
            status = "error"
        elif getattr(last, "next", ()) or getattr(last, "interrupts", ()):
            status = "interrupted"
        else:
            status = "success"
        name = graph_name if graph_name is not None else getattr(graph, "name", None)
        return Trajectory(
            run_id=source,
            graph=name if isinstance(name, str) and name and name != "LangGraph" else None,
            steps=steps,
            status=status,
            outcome=_clean(_to_json(getattr(last, "values", None))),
            metadata=_metadata(md, SOURCE_CHECKPOINT, None),
        )
    except TrajectoryReadError:
        raise
    except Exception as exc:
        raise TrajectoryReadError(source, withheld(exc)) from None


# ============================================================================ from a checkpointer

_CONF = "configurable"
_POLL = 0.005
"""Seconds between two looks for a checkpoint not yet written (LangGraph writes in the background)."""


def thread_config(thread: str, ns: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """The saver config of one namespace of a thread (at ``checkpoint_id`` when given)."""
    conf = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {_CONF: conf}


def _step_chunks(chain: Sequence[Any]) -> list[dict[str, Any]]:
    """``{node: update}`` chunks from a checkpoint chain (oldest first), one per finished task."""
    chunks: list[dict[str, Any]] = []
    for older, newer in itertools.pairwise(chain):
        seen_old = older.checkpoint.get("versions_seen", {})
        seen_new = newer.checkpoint.get("versions_seen", {})
        ran = sorted(n for n, v in seen_new.items() if not n.startswith("__") and seen_old.get(n) != v)
        tasks: dict[str, dict[str, Any]] = {}
        for task_id, channel, value in older.pending_writes or ():
            if channel.startswith(("__", "branch:")):
                continue
            tasks.setdefault(str(task_id), {})[channel] = value
        if not ran:
            continue
        if len(ran) == 1:
            updates: list[dict[str, Any] | None] = [*tasks.values()] or [None]
            chunks += [{ran[0]: update} for update in updates]
            continue
        ordered = [tasks[t] for t in sorted(tasks)]
        for index, node in enumerate(ran):
            chunks.append({node: ordered[index] if index < len(ordered) else None})
    return chunks


def _unwritten(chain: Sequence[Any]) -> bool:
    """Some task that ran has no write stored yet (not even LangGraph's ``__no_writes__``).

    LangGraph persists a step's writes apart from its checkpoint, in the background under
    the default ``durability="async"``: a reader that comes too early sees the node ran
    but not what it wrote, and would read its step as empty (a draft it never saw)."""
    for older, newer in itertools.pairwise(chain):
        seen_old = older.checkpoint.get("versions_seen", {})
        seen_new = newer.checkpoint.get("versions_seen", {})
        ran = [n for n, v in seen_new.items() if not n.startswith("__") and seen_old.get(n) != v]
        if ran and len({str(w[0]) for w in older.pending_writes or ()}) < len(ran):
            return True
    return False


def _chain(tuples: Sequence[Any], target_id: str) -> list[Any]:
    by_id = {t.config[_CONF]["checkpoint_id"]: t for t in tuples}
    chain: list[Any] = []
    current = by_id.get(target_id)
    while current is not None:
        chain.append(current)
        parent = (current.parent_config or {}).get(_CONF, {}).get("checkpoint_id")
        current = by_id.get(parent) if parent else None
    chain.reverse()
    return chain


async def _alist(saver: Any, config: Mapping[str, Any]) -> list[Any]:
    return [t async for t in saver.alist(config)]


def _get(saver: Any, config: Mapping[str, Any]) -> Op:
    return Op(saver.get_tuple, saver.aget_tuple, (config,))


def _list(saver: Any, config: Mapping[str, Any]) -> Op:
    return Op(lambda c: list(saver.list(c)), lambda c: _alist(saver, c), (config,))


def saver_history(
    saver: Any, thread: str, ns: str, checkpoint_id: str, wait: float,
    *, ancestors: Sequence[tuple[str, str]] = (),
) -> Body[tuple[Any, list[dict[str, Any]]]]:
    """The target checkpoint and the chunks of the whole thread up to it.

    A :data:`liveguard.core._twin.Body`: drive it with ``_twin.run`` (sync saver calls) or ``arun``.
    Waits up to ``wait`` seconds for the target checkpoint and for the writes of every task
    before it (:func:`_unwritten`), else raises :class:`TrajectoryReadError` (source: the
    thread id; the only error it raises itself).
    In a subgraph, the graphs above (``ancestors``: namespace and checkpoint id, root first)
    come first, each up to the checkpoint the subgraph was called
    from, so the chunks cover the whole thread, not the subgraph alone.
    """
    chunks: list[dict[str, Any]] = []
    for above_ns, above_id in ancestors:
        chunks += (yield from saver_history(saver, thread, above_ns, above_id, wait))[1]
    deadline = time.monotonic() + wait
    target = yield _get(saver, thread_config(thread, ns, checkpoint_id))
    while target is None and time.monotonic() < deadline:
        yield Op(time.sleep, asyncio.sleep, (_POLL,))
        target = yield _get(saver, thread_config(thread, ns, checkpoint_id))
    if target is None:
        raise TrajectoryReadError(thread, "history_unavailable")
    chain = _chain((yield _list(saver, thread_config(thread, ns))), checkpoint_id)
    while _unwritten(chain) and time.monotonic() < deadline:
        yield Op(time.sleep, asyncio.sleep, (_POLL,))
        chain = _chain((yield _list(saver, thread_config(thread, ns))), checkpoint_id)
    if _unwritten(chain):  # never an empty step where a write is still missing: fail closed
        raise TrajectoryReadError(thread, "history_incomplete")
    return target, chunks + _step_chunks(chain)


def read_saver_thread(
    saver: Any, thread_id: str, *, checkpoint_id: str | None = None, graph_name: str | None = None
) -> Trajectory:
    """The steps of a thread from its checkpointer alone (no compiled graph needed).

    Follows the checkpoint chain back from ``checkpoint_id`` (default: the thread's latest
    root checkpoint) and reads every finished task. Raises :class:`TrajectoryReadError`
    (source = thread id) for a thread with no checkpoint.
    """
    target = saver.get_tuple(thread_config(thread_id, "", checkpoint_id))
    if target is None:
        raise TrajectoryReadError(thread_id, "no checkpoint")
    chain = _chain(list(saver.list(thread_config(thread_id, ""))), target.config[_CONF]["checkpoint_id"])
    return Trajectory(run_id=thread_id, graph=graph_name, steps=steps_from_updates(_step_chunks(chain)),
                      metadata={"source": SOURCE_CHECKPOINT})
