"""The thread's liveness record, kept in the graph's checkpointer along the checkpoint lineage."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from liveguard.core.model import Violation
from liveguard.live._langgraph._shapes import INTERRUPT, PENDING
from liveguard.live.thread_guard import (
    KEYFRAME_EVERY,
    ThreadSession,
    delta_value,
    is_delta,
    read_audit,
    read_hold,
    read_stop,
    stop_value,
    windows_value,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "CHECKPOINTER_KEY",
    "METADATA_KEY",
    "MISSING",
    "THREAD_KEY",
    "THREAD_NS",
    "Chain",
    "Recorder",
    "ThreadStore",
    "athread",
    "recording",
]


THREAD_NS: Final = "__liveguard__"
"""Checkpoint namespace of guard()'s per-thread liveness record."""


THREAD_KEY: Final = "liveguard"
"""Channel name of the record inside that checkpoint."""


_RECORD_ID: Final = "00000000-0000-0000-0000-000000000000"


CHECKPOINTER_KEY: Final = "__pregel_checkpointer"


MISSING: Any = object()


_MAX_WALK: Final = 64
"""How many ancestors (and records) ``load_chain`` looks through."""


METADATA_KEY: Final = "liveguard"
"""The key of guard()'s record in the metadata of a checkpoint the graph writes."""

ROW: Final = "r"
"""Where a record is: a ``__liveguard__`` row under the checkpoint's id ..."""
META: Final = "m"
"""... or the metadata of the graph's checkpoint itself."""


class Chain:
    """What a call starts from: the records to rebuild the windows from (whole windows first,
    then a step's own contributions, oldest first), where the last one is, how many
    contributions follow the whole windows, and the checkpoint the call resumes from."""

    __slots__ = ("at", "depth", "origin", "records")

    def __init__(self, records: list[Any], at: tuple[str, str] | None, depth: int,
                 origin: str | None) -> None:
        self.records = records
        self.at = at
        self.depth = depth
        self.origin = origin


class ThreadStore:
    """The thread's liveness in the checkpointer, beside the graph's own checkpoints.

    Rows live under ``checkpoint_ns="__liveguard__"`` (a namespace LangGraph never uses),
    in the schema of :mod:`liveguard.live.thread_guard`:

    * the **stop**, one row per thread (a fixed checkpoint id), written only when the guard
      stops the thread or a person clears it;
    * the **windows**, kept with the graph's checkpoints: in the metadata of each checkpoint
      the graph writes (:class:`Recorder`, through :func:`recording`: no write of its own), a
      step's own contribution, and the whole windows every :data:`KEYFRAME_EVERY`
      contributions; a row under the checkpoint's own id where the metadata cannot hold it
      (a call's last steps after the graph's last write, a clear, a saver that cannot be
      recorded through). A call starts from the record of the checkpoint it resumes from
      (or its nearest ancestor that has one), rebuilt by :func:`~liveguard.live.thread_guard.read_chain`.

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
    def load_chain(self, checkpoint_id: str | None) -> Chain:
        """The records a call resumes from (see :class:`Chain`).

        ``checkpoint_id=None``: the thread's latest checkpoint. Walks up the parents to the
        nearest checkpoint with a record (a fork made by ``update_state``, a crash between the
        graph's write and the guard's), then back along the record's own chain to the whole
        windows; none: an empty chain (a new thread, or one guarded only now).
        """
        current = self.saver.get_tuple(self._graph_config(checkpoint_id))
        start = _tuple_id(current)
        found: tuple[Any, tuple[str, str]] | None = None
        for _ in range(_MAX_WALK):
            if current is None:
                break
            cid = _tuple_id(current)
            parent = getattr(current, "parent_config", None)
            pid = ((parent or {}).get("configurable") or {}).get("checkpoint_id")
            source = (getattr(current, "metadata", None) or {}).get("source")
            found = self._record_of(cid, current)
            if found is None and pid and source == "loop":  # a v2 row of the superstep under way
                value = self._value(PENDING + pid)
                found = None if value is MISSING else (value, (ROW, PENDING + pid))
            if found is not None or not pid:
                break
            current = self.saver.get_tuple(self._graph_config(pid))
        if found is None:
            return Chain([], None, 0, start)
        value, at = found
        records = [value]
        depth = 0
        while is_delta(records[-1]) and len(records) <= _MAX_WALK:
            where = records[-1].get("p")
            if not isinstance(where, list | tuple) or len(where) != 2:
                break
            prior = self._at(str(where[0]), str(where[1]))
            if prior is MISSING:
                break
            records.append(prior)
            depth += 1
        if is_delta(records[-1]):  # the chain is broken (a damaged or deleted record): start afresh
            return Chain([], None, 0, start)
        records.reverse()
        return Chain(records, at, depth, start)

    def _record_of(self, cid: str | None, found: Any) -> tuple[Any, tuple[str, str]] | None:
        """The record kept for checkpoint ``cid`` (a row wins: it is written after the metadata)."""
        if cid is None:
            return None
        value = self._value(cid)
        if value is not MISSING:
            return value, (ROW, cid)
        meta = (getattr(found, "metadata", None) or {}).get(METADATA_KEY)
        return (meta, (META, cid)) if meta is not None else None

    def _at(self, where: str, cid: str) -> Any:
        if where == ROW:
            return self._value(cid)
        found = self.saver.get_tuple(self._graph_config(cid))
        meta = (getattr(found, "metadata", None) or {}).get(METADATA_KEY) if found is not None else None
        return MISSING if meta is None else meta

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


class Recorder:
    """One call's records, kept in the metadata of the checkpoints the graph writes.

    The graph writes a checkpoint through :func:`recording`'s view of its saver, which asks
    :meth:`annotate` for the record to keep with it: the steps the session observed since
    the last record (its Monitor's journal, up to the checkpoint's own ``checkpoints`` event:
    :meth:`mark`), or the whole windows every :data:`KEYFRAME_EVERY` records, when the
    Monitor cannot be replayed, or when calls share the session. Idempotent per checkpoint
    (an async saver's ``put`` goes through its ``aput``). :meth:`pending` tells the call
    whether steps remain that no checkpoint holds (then a row is written at its end).
    """

    __slots__ = ("_lock", "at", "depth", "force", "journal", "marks", "ns", "session", "taken",
                 "written")

    def __init__(self, session: ThreadSession, ns: str, chain: Chain) -> None:
        self.session = session
        self.ns = ns
        self.at = chain.at  # where the last record along this call's lineage is
        self.depth = chain.depth
        self.journal: list[Any] = []
        self.taken = 0  # journal entries already in a record
        self.marks: dict[str, int] = {}  # checkpoint id -> journal length at its event
        self.written: dict[str, dict[str, Any]] = {}
        self.force = False  # the next record holds the whole windows
        self._lock = threading.Lock()

    def attach(self) -> None:
        """Journal the session's Monitor from now on (a new Monitor: the next record is whole)."""
        monitor = self.session.live_monitor
        if monitor.journal is not self.journal:
            if monitor.journal is not None:  # another call's: calls share this session
                self.force = True
                return
            monitor.journal = self.journal
            self.force = self.force or self.taken > 0 or bool(self.journal)
            self.journal.clear()
            self.taken = 0

    def mark(self, checkpoint_id: str) -> None:
        """The graph's ``checkpoints`` event of ``checkpoint_id``: later steps are not its own."""
        if checkpoint_id.startswith(PENDING):
            return
        with self._lock:
            self.marks.setdefault(checkpoint_id, len(self.journal))

    def pending(self) -> bool:
        return self.force or self.taken < len(self.journal)

    def annotate(self, config: Any, checkpoint: Any, metadata: Any) -> Any:
        """``metadata`` plus this call's record for ``checkpoint`` (a checkpoint of this call's
        namespace), or ``metadata`` itself."""
        configurable = (config or {}).get("configurable") or {}
        if str(configurable.get("checkpoint_ns") or "") != self.ns or not isinstance(metadata, Mapping):
            return metadata
        cid = checkpoint.get("id") if isinstance(checkpoint, Mapping) else None
        if not isinstance(cid, str):
            return metadata
        with self.session.lock, self._lock:
            record = self.written.get(cid)
            if record is None:
                record = self._record(cid)
                if record is None:
                    return metadata
                self.written = {cid: record}  # an async saver's put goes through its aput
                self.marks.pop(cid, None)
        return {**metadata, METADATA_KEY: record}

    def _record(self, cid: str) -> dict[str, Any] | None:
        journal = self.journal
        monitor = self.session.monitor
        end = self.marks.get(cid, len(journal))
        later = end < len(journal)  # the Monitor already saw steps of the next superstep
        events = journal[self.taken:end]
        whole = (self.force or self.at is None or self.depth + 1 >= KEYFRAME_EVERY
                 or monitor is None or not monitor.replayable or monitor.journal is not journal)
        if whole and later:
            if self.at is None:
                return None  # nothing to start from: the steps go into the next record
            whole = False
        if not whole and not events and self.at is not None and self.at[1] == cid:
            return None
        if whole:
            record = windows_value(monitor)
            self.depth = 0
            self.force = False
        else:
            assert self.at is not None
            self.depth += 1
            record = delta_value(self.at, events, self.depth)
        self.taken = end
        self.at = (META, cid)
        return record

    def row(self, fallback: str) -> tuple[str, dict[str, Any]]:
        """``(checkpoint id, record)`` of the steps no checkpoint holds yet, for a row under the
        last checkpoint this call wrote (``fallback``: the last one it saw, when it wrote none):
        the steps observed after the graph wrote it (a stop, an interrupt, the call's end;
        each superstep with ``durability="sync"``, so a process killed inside the next node
        keeps them). A row wins over the checkpoint's metadata."""
        with self.session.lock, self._lock:
            base = self.at[1] if self.at is not None else fallback
            monitor = self.session.monitor
            events = self.journal[self.taken:]
            whole = (self.force or self.at is None or self.depth + 1 >= KEYFRAME_EVERY
                     or monitor is None or not monitor.replayable or monitor.journal is not self.journal)
            if whole:
                record = windows_value(monitor)
                self.depth = 0
                self.force = False
            else:
                assert self.at is not None
                self.depth += 1
                record = delta_value(self.at, events, self.depth)
            self.taken = len(self.journal)
            self.at = (ROW, base)
            return base, record


_VIEWS: dict[type, type] = {}
_VIEWS_LOCK = threading.Lock()


def recording(saver: Any, recorder: Recorder) -> Any | None:
    """A view of ``saver`` whose ``put`` / ``aput`` keep ``recorder``'s record in the metadata of
    the checkpoints they write (the saver's own state is shared, not copied); ``None`` for a
    saver that cannot be viewed so (then the guard writes rows of its own)."""
    cls = type(saver)
    recorders: tuple[Recorder, ...] = (recorder,)
    if getattr(cls, "_lg_view", False):  # a guarded graph inside a guarded graph
        recorders = (*saver._lg_recorders, recorder)
        cls = cls.__mro__[1]
    try:
        shared = saver.__dict__
    except AttributeError:
        return None
    if not callable(getattr(cls, "put", None)):
        return None
    view_cls = _view_class(cls)
    view: Any = object.__new__(view_cls)
    view.__dict__ = shared
    view._lg_recorders = recorders
    return view


def _view_class(cls: type) -> type:
    with _VIEWS_LOCK:
        found = _VIEWS.get(cls)
        if found is not None:
            return found

        def put(self: Any, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            for recorder in self._lg_recorders:
                metadata = recorder.annotate(config, checkpoint, metadata)
            return cls.put(self, config, checkpoint, metadata, new_versions)  # type: ignore[attr-defined]

        async def aput(self: Any, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            for recorder in self._lg_recorders:
                metadata = recorder.annotate(config, checkpoint, metadata)
            return await cls.aput(self, config, checkpoint, metadata, new_versions)  # type: ignore[attr-defined]

        found = _VIEWS[cls] = type(cls.__name__, (cls,), {
            "__slots__": ("_lg_recorders",), "_lg_view": True, "put": put, "aput": aput,
            "__module__": cls.__module__, "__qualname__": cls.__qualname__})
        return found


def _tuple_id(found: Any) -> str | None:
    if found is None:
        return None
    cid = ((getattr(found, "config", None) or {}).get("configurable") or {}).get("checkpoint_id")
    return cid if isinstance(cid, str) else None


async def athread(fn: Callable[[], Any]) -> Any:
    """``fn()`` for an async caller: sync savers in a worker thread, async-only savers directly."""
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, fn)
