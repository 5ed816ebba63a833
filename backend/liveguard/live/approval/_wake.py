"""Waking a person after the hold is stored: whether the checkpointer holds the interrupt yet.

The approval step raises its interrupt; LangGraph stores it after the step has returned
(``put_writes`` on the checkpoint the step started from, in the background). The notifiers
run on :mod:`liveguard.live.notify`'s worker, which first polls :func:`hold_stored`, so that a
person who answers the moment they are woken finds the thread waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from liveguard.live.approval._visit import Visit, stored_request
from liveguard.readers.checkpoints import thread_config

_READ_WAIT = 2.0  # seconds one read of an async saver may take from the worker thread


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


def hold_stored(visit: Visit, interrupt_id: str) -> Callable[[], bool] | None:
    """A check that the interrupt ``interrupt_id`` this visit raised is stored; None without a saver."""
    if visit.saver is None or not visit.checkpoint_id:
        return None
    config = thread_config(visit.thread, visit.ns, visit.checkpoint_id)

    def ready() -> bool:
        target = _read(visit.saver, config)
        found = None if target is None else stored_request(target, visit.task_id)
        return found is not None and found[1] == interrupt_id

    return ready
