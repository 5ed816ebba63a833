"""A stopped thread stays stopped until a person clears it: ``liveguard.clear(graph, config)``.

Both live guards keep a thread's liveness with the thread (see the README's live section):

* ``LivenessMiddleware`` in the agent state, under ``"liveguard"``;
* ``guard(graph)`` in the graph's checkpointer, under ``checkpoint_ns="__liveguard__"``.

:func:`thread_status` reads what is saved; :func:`clear` drops the saved stop and the rule
windows (the next call starts counting afresh), keeps the tool-call ledger (the facts) but
unblocks its entries, and returns the violation it cleared. The CLI twin is
``liveguard threads clear MODULE:ATTR --thread ID [--sqlite FILE]``.

Framework-free at import; the graph brings LangGraph.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from liveguard.model import Violation

__all__ = ["clear", "thread_status"]

_STATE_KEY = "liveguard"


def _config(config: Any) -> dict[str, Any]:
    configurable = (config or {}).get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(configurable, Mapping) or configurable.get("thread_id") is None:
        raise ValueError("clear/thread_status: config needs configurable.thread_id")
    return {"configurable": {"thread_id": configurable["thread_id"],
                             **({"checkpoint_ns": configurable["checkpoint_ns"]}
                                if configurable.get("checkpoint_ns") else {})}}


def _checkpointer(graph: Any) -> Any:
    saver = getattr(graph, "checkpointer", None)
    if saver is None or isinstance(saver, bool) or not callable(getattr(saver, "put", None)):
        raise ValueError("clear/thread_status: the graph has no checkpointer, so no thread state")
    return saver


def _agent_state(graph: Any, config: dict[str, Any]) -> dict[str, Any] | None:
    """The middleware's saved value, if the graph has the channel and the thread has it."""
    channels = getattr(graph, "channels", None)
    if not isinstance(channels, Mapping) or _STATE_KEY not in channels:
        return None
    values = graph.get_state(config).values
    saved = values.get(_STATE_KEY) if isinstance(values, Mapping) else None
    return dict(saved) if isinstance(saved, Mapping) else None


def _guard_store(graph: Any, config: dict[str, Any]) -> Any:
    from liveguard.integrations.langgraph import GuardedGraph, _ThreadStore

    if not isinstance(graph, GuardedGraph):
        return None
    return _ThreadStore.of(graph, config)


def thread_status(graph: Any, config: Any) -> dict[str, Any]:
    """What is saved for this thread: ``{"agent": {...} | None, "guard": {...} | None}``.

    Each part carries ``stop`` (the violation as a dict, or None), ``held`` (guard,
    ``exit_behavior="interrupt"``), ``steps`` (steps observed) and ``ledger`` (agent).
    Codes, counts and digests only.
    """
    cfg = _config(config)
    _checkpointer(graph)
    out: dict[str, Any] = {"agent": None, "guard": None}
    agent = _agent_state(graph, cfg)
    if agent is not None:
        out["agent"] = {"stop": agent.get("stop"), "steps": (agent.get("m") or {}).get("n", 0),
                        "ledger": agent.get("ledger", []), "debounced": agent.get("debounced", 0)}
    store = _guard_store(graph, cfg)
    record = store.load() if store is not None else None
    if record is not None:
        out["guard"] = {"stop": record.get("stop"), "held": bool(record.get("held")),
                        "steps": (record.get("m") or {}).get("n", 0)}
    return out


def clear(graph: Any, config: Any) -> Violation | None:
    """Clear a stopped thread; return the violation that had stopped it (None if none had).

    ``graph`` is the guarded graph (``guard(...)``) or the ``create_agent`` graph with
    ``LivenessMiddleware``, compiled with the thread's checkpointer; ``config`` names the
    thread (``{"configurable": {"thread_id": ...}}``). Raises ``ValueError`` when the graph
    has no checkpointer or the config no thread id.
    """
    cfg = _config(config)
    _checkpointer(graph)
    cleared: Violation | None = None
    agent = _agent_state(graph, cfg)
    if agent is not None:
        if agent.get("stop"):
            cleared = Violation.model_validate(agent["stop"])
        ledger = [[*entry[:4], False] for entry in agent.get("ledger", [])]
        value = {k: v for k, v in agent.items() if k != "k"}  # no token: no in-memory copy is reused
        value.update(stop=None, m=None, ledger=ledger)
        graph.update_state(cfg, {_STATE_KEY: value}, as_node="model")
    store = _guard_store(graph, cfg)
    record = store.load() if store is not None else None
    if record is not None:
        if record.get("stop") and cleared is None:
            cleared = Violation.model_validate(record["stop"])
        store.save({k: v for k, v in record.items() if k not in ("stop", "held", "m", "violations")})
    return cleared
