"""The thread's liveness record, kept in the graph's checkpointer along the checkpoint lineage."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from liveguard.integrations.langgraph._shapes import INTERRUPT, PENDING
from liveguard.model import Violation
from liveguard.thread_guard import read_audit, read_hold, read_stop, stop_value

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["CHECKPOINTER_KEY", "MISSING", "THREAD_KEY", "THREAD_NS", "ThreadStore", "athread"]


THREAD_NS: Final = "__liveguard__"
"""Checkpoint namespace of guard()'s per-thread liveness record."""


THREAD_KEY: Final = "liveguard"
"""Channel name of the record inside that checkpoint."""


_RECORD_ID: Final = "00000000-0000-0000-0000-000000000000"


CHECKPOINTER_KEY: Final = "__pregel_checkpointer"


MISSING: Any = object()


_MAX_WALK: Final = 64
"""How many ancestors ``load_windows`` looks through for a row."""


class ThreadStore:
    """The thread's liveness in the checkpointer, beside the graph's own checkpoints.

    Rows live under ``checkpoint_ns="__liveguard__"`` (a namespace LangGraph never uses),
    in the schema of :mod:`liveguard.thread_guard`:

    * the **stop**, one row per thread (a fixed checkpoint id), written only when the guard
      stops the thread or a person clears it;
    * the **windows**, one row per graph checkpoint, under the graph checkpoint's own id,
      written as the graph writes the checkpoint. A call starts from the row of the
      checkpoint it resumes from (or its nearest ancestor that has one).

    ``delete_thread`` removes them with the thread. Any ``BaseCheckpointSaver`` works
    (memory, SQLite, Postgres).
    """

    __slots__ = ("ns", "saver", "thread_id")

    def __init__(self, saver: Any, thread_id: str, ns: str) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self.ns = ns

    @property
    def config(self) -> dict[str, Any]:
        """The stop row's config."""
        return self._row(_RECORD_ID)

    def _row(self, checkpoint_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": THREAD_NS + self.ns,
                                 "checkpoint_id": checkpoint_id}}

    def _graph_config(self, checkpoint_id: str | None) -> dict[str, Any]:
        conf: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        if checkpoint_id:
            conf["checkpoint_id"] = checkpoint_id
        return {"configurable": conf}

    @classmethod
    def of(cls, graph: Any, config: Any) -> ThreadStore | None:
        configurable = {**(getattr(graph, "config", None) or {}).get("configurable", {}),
                        **((config or {}).get("configurable") or {})}
        thread_id = configurable.get("thread_id")
        saver = configurable.get(CHECKPOINTER_KEY) or getattr(graph, "checkpointer", None)
        if thread_id is None or saver is None or isinstance(saver, bool):
            return None
        if not callable(getattr(saver, "put", None)):
            return None
        return cls(saver, str(thread_id), str(configurable.get("checkpoint_ns") or ""))

    # -- the stop ---------------------------------------------------------------------------------
    def load_record(self) -> tuple[Violation | None, bool, dict[str, Any], list[dict[str, Any]]]:
        """(stop, held, where the hold's interrupt is, the audit) of the stop row."""
        found = self.saver.get_tuple(self.config)
        if found is None:
            return None, False, {}, []
        values = found.checkpoint.get("channel_values", {})
        raw = values.get(THREAD_KEY)
        stop, held = read_stop(raw, present=THREAD_KEY in values)
        return stop, held, read_hold(raw) if held else {}, read_audit(raw)

    def save_stop(self, stop: Violation | None, held: bool = False, *,
                  hold: Mapping[str, Any] | None = None,
                  audit: Sequence[Mapping[str, Any]] = ()) -> None:
        value = stop_value(stop, held=held, hold=hold, audit=audit)
        self.saver.put(*self._put_args(_RECORD_ID, value))

    # -- the hold: a pending interrupt of the thread's latest checkpoint ------------------------
    def put_hold(self, snapshot: Any, value: Mapping[str, Any], interrupt_id: str) -> dict[str, Any]:
        """Write the hold as LangGraph writes an ``interrupt()``: a pending write of channel
        ``__interrupt__`` for a task of the checkpoint's next step (one that has no question
        of its own pending, else beside that task's question). ``get_state(config).interrupts``
        and a server's thread list then show it. Returns where it was written (``{"id"}``
        alone when the graph has no next task: the hold is then in the stream and the record).
        """
        from langgraph.types import Interrupt

        hold: dict[str, Any] = {"id": interrupt_id}
        tasks = list(getattr(snapshot, "tasks", None) or ())
        config = getattr(snapshot, "config", None) or {}
        checkpoint_id = (config.get("configurable") or {}).get("checkpoint_id")
        if not tasks or not checkpoint_id or self.ns:
            return hold
        task = next((t for t in tasks if not t.interrupts), tasks[0])
        interrupts = [*task.interrupts, Interrupt(value=dict(value), id=interrupt_id)]
        self.saver.put_writes(self._graph_config(checkpoint_id), [(INTERRUPT, interrupts)], task.id)
        hold.update(checkpoint_id=checkpoint_id, task_id=task.id)
        return hold

    def set_hold(self, hold: Mapping[str, Any], value: Mapping[str, Any] | None) -> None:
        """Replace the hold's pending interrupt with ``value`` (a re-ask), or drop it (None);
        any other question pending on the same task is kept."""
        from langgraph.types import Interrupt

        checkpoint_id, task_id = hold.get("checkpoint_id"), hold.get("task_id")
        if not isinstance(checkpoint_id, str) or not isinstance(task_id, str):
            return
        config = self._graph_config(checkpoint_id)
        found = self.saver.get_tuple(config)
        others = [i for tid, channel, items in (getattr(found, "pending_writes", None) or ())
                  if tid == task_id and channel == INTERRUPT
                  for i in (items if isinstance(items, list | tuple) else [items])
                  if getattr(i, "id", None) != hold.get("id")]
        mine = [] if value is None else [Interrupt(value=dict(value), id=str(hold.get("id")))]
        self.saver.put_writes(config, [(INTERRUPT, [*others, *mine])], task_id)

    # -- the windows, along the lineage ----------------------------------------------------------
    def load_windows(self, checkpoint_id: str | None) -> tuple[Any, str | None]:
        """(the windows value the call starts from, the checkpoint id it resumes from).

        ``checkpoint_id=None``: the thread's latest checkpoint. Walks up the parents to the
        nearest checkpoint with a row (a fork made by ``update_state``, a crash between the
        graph's write and the guard's); none: ``None`` (a new thread, or one guarded only now).
        """
        current = self.saver.get_tuple(self._graph_config(checkpoint_id))
        start = _tuple_id(current)
        for _ in range(_MAX_WALK):
            if current is None:
                break
            cid = _tuple_id(current)
            parent = getattr(current, "parent_config", None)
            pid = ((parent or {}).get("configurable") or {}).get("checkpoint_id")
            source = (getattr(current, "metadata", None) or {}).get("source")
            keys = [cid] if cid is not None else []
            if pid and source == "loop":  # written by the superstep that followed its parent
                keys.append(PENDING + pid)
            for key in keys:
                value = self._value(key)
                if value is not MISSING:
                    return value, start
            if not pid:
                break
            current = self.saver.get_tuple(self._graph_config(pid))
        return None, start

    def _value(self, row_id: str) -> Any:
        row = self.saver.get_tuple(self._row(row_id))
        if row is None:
            return MISSING
        values = row.checkpoint.get("channel_values", {})
        return values.get(THREAD_KEY, MISSING)

    def save_windows(self, checkpoint_id: str, value: dict[str, Any]) -> None:
        self.saver.put(*self._put_args(checkpoint_id, value))

    def _put_args(self, checkpoint_id: str, value: Any) -> tuple[Any, ...]:
        from langgraph.checkpoint.base import empty_checkpoint

        checkpoint = empty_checkpoint()
        checkpoint["id"] = checkpoint_id
        checkpoint["channel_values"] = {THREAD_KEY: value}
        # savers that keep channel values apart (memory, Postgres) key them by version, and
        # Postgres never overwrites one: every write of every row gets its own version
        version = uuid.uuid4().hex
        checkpoint["channel_versions"] = {THREAD_KEY: version}
        config = {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": THREAD_NS + self.ns}}
        return config, checkpoint, {"source": "update", "step": -1, "parents": {}}, {THREAD_KEY: version}


def _tuple_id(found: Any) -> str | None:
    if found is None:
        return None
    cid = ((getattr(found, "config", None) or {}).get("configurable") or {}).get("checkpoint_id")
    return cid if isinstance(cid, str) else None


async def athread(fn: Callable[[], Any]) -> Any:
    """``fn()`` for an async caller: sync savers in a worker thread, async-only savers directly."""
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, fn)
