"""Waking a person after the hold is stored: whether the checkpointer holds an interrupt yet.

A node raises its interrupt (``langgraph.types.interrupt``); LangGraph stores it after the
node has returned (``put_writes`` of ``__interrupt__`` on the checkpoint the task started from,
in the background). The notifiers run on :mod:`liveguard.live.notify`'s worker, which first
polls the check made here, so that a person who answers the moment they are woken finds the
thread waiting. The approval step, :func:`liveguard.live.hitl.ask` / ``aask`` and the
middleware's holds (which go through ``ask``) all use it. ``guard(graph)`` stores its hold
itself before it notifies and needs no check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Final

from liveguard.readers.checkpoints import thread_config

_READ_WAIT: Final = 2.0  # seconds one read of an async saver may take from the worker thread
_CONF: Final = "configurable"
_CHECKPOINTER_KEY: Final = "__pregel_checkpointer"
_TASK_ID_KEY: Final = "__pregel_task_id"
_INTERRUPT: Final = "__interrupt__"


def _read(saver: Any, config: dict[str, Any]) -> Any:
    """The checkpoint tuple at ``config``; an async saver is asked on its own loop, bounded."""
    loop = getattr(saver, "loop", None)
    if isinstance(loop, asyncio.AbstractEventLoop):
        if loop.is_closed() or not loop.is_running():
            raise RuntimeError("the saver's event loop is not running")
        future = asyncio.run_coroutine_threadsafe(saver.aget_tuple(config), loop)
        try:
            return future.result(_READ_WAIT)
        except BaseException:
            future.cancel()
            raise
    return saver.get_tuple(config)


def _raised_by(target: Any, task_id: str, interrupt_id: str) -> bool:
    """Whether the checkpoint tuple ``target`` holds the interrupt ``interrupt_id`` of ``task_id``."""
    for write_task, channel, value in getattr(target, "pending_writes", None) or ():
        if write_task != task_id or channel != _INTERRUPT:
            continue
        for item in value if isinstance(value, list | tuple) else [value]:
            if str(getattr(item, "id", "")) == interrupt_id:
                return True
    return False


def interrupt_stored(
    saver: Any, thread: str, *, ns: str, checkpoint_id: str, task_id: str, interrupt_id: str
) -> Callable[[], bool] | None:
    """A check that the task ``task_id`` (running on ``checkpoint_id`` of namespace ``ns`` of
    ``thread``) has its interrupt ``interrupt_id`` stored; None without a saver to ask."""
    if saver is None or not checkpoint_id or not task_id or not interrupt_id:
        return None
    config = thread_config(thread, ns, checkpoint_id)

    def ready() -> bool:
        target = _read(saver, config)
        return target is not None and _raised_by(target, task_id, interrupt_id)

    return ready


def raised_stored(config: Mapping[str, Any] | None, interrupt_id: str | None) -> Callable[[], bool] | None:
    """:func:`interrupt_stored` for the node whose runnable ``config`` this is (default: the
    running node's); None outside a graph, without a checkpointer or a thread."""
    if config is None:
        try:
            from langgraph.config import get_config

            config = get_config()
        except Exception:  # outside a runnable context: nothing to wait for
            return None
    conf = config.get(_CONF) or {}
    thread, task_id = conf.get("thread_id"), conf.get(_TASK_ID_KEY)
    ns = str(conf.get("checkpoint_ns") or "")
    parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
    checkpoint_id = (conf.get("checkpoint_map") or {}).get(parent_ns)
    if thread is None or task_id is None or checkpoint_id is None or interrupt_id is None:
        return None
    return interrupt_stored(conf.get(_CHECKPOINTER_KEY), str(thread), ns=parent_ns,
                            checkpoint_id=str(checkpoint_id), task_id=str(task_id),
                            interrupt_id=str(interrupt_id))
