"""One body, two drivers: the sync and async twins of an entry point share one generator.

The body is a generator that yields an :class:`Op` wherever it needs I/O and receives the
op's result (or has the op's exception thrown in, so its own ``try`` blocks see it).
:func:`run` does each op with its blocking callable, :func:`arun` awaits its async one; the
decisions between the ops are written once, so the twins cannot disagree.

::

    def _body(saver, config) -> Body[Any]:
        target = yield Op(saver.get_tuple, saver.aget_tuple, (config,))
        return target

    run(_body(saver, config))          # sync
    await arun(_body(saver, config))   # async
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Body", "Op", "arun", "blocking", "run"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Op:
    """One I/O step: ``sync(*args)`` for the sync driver, ``await async_(*args)`` for the async one."""

    sync: Callable[..., Any]
    async_: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()


Body = Generator[Op, Any, T]
"""A generator that yields ops and returns the entry point's result."""


def blocking(fn: Callable[..., Any], *args: Any) -> Op:
    """An op that blocks: called directly by :func:`run`, in a worker thread by :func:`arun`."""
    return Op(fn, functools.partial(asyncio.to_thread, fn), args)


def _advance(body: Body[Any], result: Any, error: BaseException | None) -> tuple[bool, Any]:
    """``(False, next op)``, or ``(True, the body's return value)``."""
    try:
        return False, body.send(result) if error is None else body.throw(error)
    except StopIteration as stop:
        return True, stop.value


def run(body: Body[T]) -> T:
    """Drive ``body`` with the ops' blocking callables."""
    done, got = _advance(body, None, None)
    while not done:
        try:
            result, error = got.sync(*got.args), None
        except BaseException as exc:  # thrown into the body: its own handlers decide
            result, error = None, exc
        done, got = _advance(body, result, error)
    return got  # type: ignore[no-any-return]


async def arun(body: Body[T]) -> T:
    """Drive ``body`` awaiting the ops' async callables."""
    done, got = _advance(body, None, None)
    while not done:
        try:
            result, error = await got.async_(*got.args), None
        except BaseException as exc:  # thrown into the body: its own handlers decide
            result, error = None, exc
        done, got = _advance(body, result, error)
    return got  # type: ignore[no-any-return]
