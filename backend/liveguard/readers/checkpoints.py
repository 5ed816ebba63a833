"""LangGraph checkpoint history → :class:`~liveguard.model.Trajectory`.

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

Nothing from LangSmith, LangChain or LangGraph is imported at module import time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from liveguard.errors import TrajectoryReadError
from liveguard.model import Step, Trajectory
from liveguard.readers.stream import UpdateStepper
from liveguard.readers.updates import (
    COPIED_METADATA,
    MAX_RUN_DEPTH,
    _clean,
    _clean_step,
    _metadata,
    _task_update,
    _to_json,
)

__all__ = ["thread_to_trajectory"]

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
        raise TrajectoryReadError(source, f"{type(exc).__name__}: {exc}") from None
