"""LangGraph task results → ``stream_mode="updates"`` updates, in JSON form.

Shared by the readers that rebuild what a stream would have shown from a record of the
run: :mod:`liveguard.readers.langsmith` (traced node runs) and
:mod:`liveguard.readers.checkpoints` (checkpoint tasks). Payloads are first put in JSON
form with the LangSmith client's own serializer, so an in-memory run and its JSON export
give identical steps; LangChain message dumps are reduced to
:data:`liveguard.core.messages.MESSAGE_KEYS` (what a dump looks like is
:func:`liveguard.core.messages.is_message_dump`'s knowledge).

Nothing from LangSmith, LangChain or LangGraph is imported at module import time.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from liveguard.core.messages import MESSAGE_KEYS, dumpd_kwargs, field, is_message_dump
from liveguard.core.model import Step

__all__ = ["COPIED_METADATA", "MAX_RUN_DEPTH", "MESSAGE_KEYS", "is_command_object", "live_update"]

COPIED_METADATA: tuple[str, ...] = ("scenario", "policy")
"""Root-run (or checkpoint) metadata keys copied into ``Trajectory.metadata``."""

MAX_RUN_DEPTH = 200
"""Deepest run tree accepted (a deeper or cyclic tree is a read error, not a RecursionError)."""

_COMMAND_FIELDS = frozenset({"graph", "update", "resume", "goto"})
_PARENT = "__parent__"


# ============================================================================ JSON form


@functools.cache
def _langsmith_dumps() -> Callable[[Any], bytes] | None:
    """The LangSmith client's serializer (what it uploads), if this langsmith has it."""
    try:
        module = importlib.import_module("langsmith._internal._serde")
    except ImportError:  # pragma: no cover - every supported langsmith has it
        return None
    dumps: Callable[[Any], bytes] | None = getattr(module, "dumps_json", None)
    return dumps


def _default(obj: Any) -> Any:  # pragma: no cover - fallback serializer only
    for method in ("model_dump", "dict", "to_dict"):
        fn = getattr(obj, method, None)
        if callable(fn):
            try:
                return fn()
            except Exception:
                continue
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def _to_json(value: Any) -> Any:
    """``value`` as plain JSON data, serialized the way the LangSmith client uploads it."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    dumps = _langsmith_dumps()
    if dumps is not None:
        return orjson.loads(dumps(value))
    return orjson.loads(  # pragma: no cover
        orjson.dumps(value, default=_default, option=orjson.OPT_NON_STR_KEYS)
    )


def _clean(value: Any) -> Any:
    """JSON data with every LangChain message dump reduced to :data:`MESSAGE_KEYS`."""
    if isinstance(value, Mapping):
        kwargs = dumpd_kwargs(value)
        if kwargs is not None:
            value = kwargs
        if is_message_dump(value):
            return {
                key: _clean(value.get(key))
                for key in MESSAGE_KEYS
                if key in ("type", "content") or value.get(key) not in (None, [], {}, "")
            }
        return {key: _clean(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(item) for item in value]
    return value


def _clean_step(step: Step) -> Step:
    return step.model_copy(
        update={
            "output": _clean(step.output),
            "args": _clean(step.args),
            "result": _clean(step.result),
            "error": _clean(step.error),
        }
    )


# ============================================================================ updates


def _is_command(value: Any) -> bool:
    """A LangGraph ``Command`` in JSON form (a dataclass dump)."""
    return (
        isinstance(value, Mapping)
        and {"update", "goto"} <= value.keys()
        and value.keys() <= _COMMAND_FIELDS
    )


def is_command_object(value: Any) -> bool:
    """A live LangGraph ``Command`` (duck-typed: a ``Command`` with ``update`` and ``goto``)."""
    return type(value).__name__ == "Command" and hasattr(value, "update") and hasattr(value, "goto")


def _command_writes(command: Any) -> list[tuple[str, Any]]:
    """A ``Command``'s channel writes (its ``update``), in JSON form or live; none to the parent."""
    if field(command, "graph") == _PARENT:
        return []
    update = field(command, "update")
    if update is None:
        return []
    if isinstance(update, Mapping):
        return [(str(k), v) for k, v in update.items()]
    if isinstance(update, list | tuple) and all(
        isinstance(pair, list | tuple) and len(pair) == 2 and isinstance(pair[0], str) for pair in update
    ):
        return [(pair[0], pair[1]) for pair in update]
    return [("__root__", update)]


def _return_value(outputs: Any) -> Any:
    """The node's return value from its traced outputs (undoing ``{"output": value}``)."""
    if isinstance(outputs, Mapping) and set(outputs) == {"output"}:
        inner = outputs["output"]
        if (
            inner is None
            or isinstance(inner, str | int | float | bool)
            or _is_command(inner)
            or (isinstance(inner, list) and any(_is_command(i) for i in inner))
        ):
            return inner
    return outputs


def _writes(value: Any, is_command: Callable[[Any], bool] = _is_command) -> list[tuple[str, Any]] | None:
    """Channel writes of a node's return value; ``None`` when it is not a state update."""
    if value is None:
        return []
    if is_command(value):
        return _command_writes(value)
    if isinstance(value, Mapping):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, list | tuple) and any(is_command(i) for i in value):
        writes: list[tuple[str, Any]] = []
        for item in value:
            writes += _writes(item, is_command) or []
        return writes
    return None


def _update_of(writes: list[tuple[str, Any]]) -> Any:
    """What ``stream_mode="updates"`` shows for one task's writes."""
    if not writes:
        return None
    channels = [chan for chan, _ in writes]
    if len(set(channels)) < len(channels):
        return [{chan: value} for chan, value in writes]
    return dict(writes)


def _node_update(outputs: Any) -> Any:
    value = _return_value(outputs)
    writes = _writes(value)
    return value if writes is None else _update_of(writes)


def live_update(value: Any) -> Any:
    """A node's live return value as ``stream_mode="updates"`` shows it: a ``Command`` (or a
    list holding ``Command`` objects, as an agent's model node returns) becomes its update;
    anything else is returned unchanged."""
    if is_command_object(value) or (
        isinstance(value, list | tuple) and any(is_command_object(i) for i in value)
    ):
        return _update_of(_writes(value, is_command_object) or [])
    return value


def _task_update(result: Any) -> Any:
    """A checkpoint task's ``result`` (``{"chan": v}``, ``{"chan": {"$writes": [...]}}``)."""
    if not isinstance(result, Mapping):
        return result
    writes: list[tuple[str, Any]] = []
    for chan, value in result.items():
        if isinstance(value, Mapping) and set(value) == {"$writes"} and isinstance(value["$writes"], list):
            writes += [(str(chan), v) for v in value["$writes"]]
        else:
            writes.append((str(chan), value))
    return _update_of(writes)



# ============================================================================ metadata


def _metadata(root_md: Mapping[str, Any], source: str, session_id: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"source": source}
    for key in COPIED_METADATA:
        if key in root_md and root_md[key] is not None:
            metadata[key] = root_md[key]
    if session_id:
        metadata["session_id"] = session_id
    return metadata
