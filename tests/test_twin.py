"""liveguard.core._twin: one generator body, driven sync and async: the same result, the same errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from liveguard.core._twin import Body, Op, arun, blocking, run


class Store:
    """A store with a sync and an async twin of each call, counting the calls each driver made."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def get(self, key: str) -> str:
        self.calls.append(f"get {key}")
        if key == "bad":
            raise KeyError(key)
        return key.upper()

    async def aget(self, key: str) -> str:
        return self.get(key)


def body(store: Store, keys: list[str]) -> Body[list[str]]:
    """Reads every key; a failed read is caught by the body's own handler and recorded."""
    out: list[str] = []
    for key in keys:
        try:
            out.append((yield Op(store.get, store.aget, (key,))))
        except KeyError:
            out.append(f"missing {key}")
    out.append((yield blocking(str.lower, "DONE")))
    return out


@pytest.mark.parametrize("keys", [[], ["a"], ["a", "bad", "c"]])
def test_run_and_arun_agree(keys: list[str]) -> None:
    sync_store, async_store = Store(), Store()
    sync = run(body(sync_store, keys))
    asynchronous = asyncio.run(arun(body(async_store, keys)))
    assert sync == asynchronous == [*(f"missing {k}" if k == "bad" else k.upper() for k in keys), "done"]
    assert sync_store.calls == async_store.calls == [f"get {k}" for k in keys]


def raising(store: Store) -> Body[Any]:
    """No handler: an op's error leaves the body, and nothing after it runs."""
    yield Op(store.get, store.aget, ("bad",))
    yield Op(store.get, store.aget, ("never",))


def test_an_uncaught_op_error_leaves_both_drivers_unchanged() -> None:
    sync_store, async_store = Store(), Store()
    with pytest.raises(KeyError, match="bad"):
        run(raising(sync_store))
    with pytest.raises(KeyError, match="bad"):
        asyncio.run(arun(raising(async_store)))
    assert sync_store.calls == async_store.calls == ["get bad"]


def test_blocking_runs_off_the_event_loop_only_in_the_async_driver() -> None:
    """``blocking`` ops run on the caller's thread in ``run``, in a worker thread in ``arun``."""
    import threading

    def where() -> Body[bool]:
        return (yield blocking(lambda: threading.current_thread() is threading.main_thread()))

    assert run(where()) is True
    assert asyncio.run(arun(where())) is False
