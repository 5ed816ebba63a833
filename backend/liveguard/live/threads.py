"""A stopped thread stays stopped until a person clears it: ``liveguard.clear(graph, config)``.

Both live guards keep a thread's liveness with the thread (see the README's live section):

* ``LivenessMiddleware`` in the agent state, under ``"liveguard"``;
* ``guard(graph)`` in the graph's checkpointer, under ``checkpoint_ns="__liveguard__"``
  (the stop row, and the windows saved along the checkpoint lineage).

Both are read through :mod:`liveguard.live.thread_guard`, the one record schema: a damaged
record reads as a stop (``guard_error``), never as an exception. :func:`thread_status`
reads what is saved (the windows of the thread's latest checkpoint); :func:`clear` drops
the saved stop and the rule windows (the next call starts counting afresh), keeps the
tool-call ledger (the facts) but unblocks its entries, and returns the violation it
cleared. It always works, whatever the record holds. The CLI twin is
``liveguard threads clear MODULE:ATTR --thread ID [--checkpoint URL]``. :func:`aclear` and
:func:`athread_status` are the async twins (an async saver, a graph served async): one body
each, driven by :mod:`liveguard.core._twin`.

Framework-free at import; the graph brings LangGraph.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from liveguard.core._twin import Body, Op, arun, blocking, run
from liveguard.core.model import Violation
from liveguard.errors import UnknownThreadError
from liveguard.live.thread_guard import DAMAGED, chain_steps, read_audit, read_stop, windows_value

__all__ = ["UnknownThreadError", "aclear", "athread_status", "clear", "run_thread_config", "thread_status"]


_STATE_KEY = "liveguard"
_DAMAGED_KEY = "__damaged__"


def _run_key() -> str:
    """Where LangGraph passes a run's checkpointer to the run's nodes."""
    from liveguard.live._langgraph._record import CHECKPOINTER_KEY

    return CHECKPOINTER_KEY


def run_thread_config(run_config: Any, thread_id: str) -> dict[str, Any]:
    """The config of thread ``thread_id`` in the checkpointer of a running graph.

    ``run_config`` is the ``RunnableConfig`` a node receives. The LangGraph server gives each
    run its own checkpointer (graphs are served compiled without one), and a node sees it
    only in its config: a node of a graph served beside a guarded one clears a thread with
    ``liveguard.clear(guarded, run_thread_config(config, thread_id))``
    (``examples/server_graphs.py``). Raises ``ValueError`` when the run has no checkpointer.
    """
    configurable = (run_config or {}).get("configurable") if isinstance(run_config, Mapping) else None
    saver = configurable.get(_run_key()) if isinstance(configurable, Mapping) else None
    if saver is None or not callable(getattr(saver, "put", None)):
        raise ValueError("run_thread_config: the run has no checkpointer (call it from a node of a "
                         "graph run with one, such as a graph served by the LangGraph server)")
    return {"configurable": {"thread_id": str(thread_id), _run_key(): saver}}


def _config(config: Any) -> dict[str, Any]:
    configurable = (config or {}).get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(configurable, Mapping) or configurable.get("thread_id") is None:
        raise ValueError("clear/thread_status: config needs configurable.thread_id")
    key = _run_key()
    return {"configurable": {"thread_id": configurable["thread_id"],
                             **({"checkpoint_ns": configurable["checkpoint_ns"]}
                                if configurable.get("checkpoint_ns") else {}),
                             **({key: configurable[key]} if configurable.get(key) is not None else {})}}


def _checkpointer(graph: Any, config: dict[str, Any]) -> Any:
    """The run's checkpointer carried by ``config`` (:func:`run_thread_config`), else the graph's."""
    saver = config["configurable"].get(_run_key()) or getattr(graph, "checkpointer", None)
    if saver is None or isinstance(saver, bool) or not callable(getattr(saver, "put", None)):
        raise ValueError("clear/thread_status: the graph has no checkpointer, so no thread state")
    return saver


def _agent_state(graph: Any, config: dict[str, Any]) -> Body[dict[str, Any] | None]:
    """The middleware's saved value, if the graph has the channel and the thread has it."""
    channels = getattr(graph, "channels", None)
    if not isinstance(channels, Mapping) or _STATE_KEY not in channels:
        return None
    values = (yield Op(graph.get_state, graph.aget_state, (config,))).values
    saved = values.get(_STATE_KEY) if isinstance(values, Mapping) else None
    if saved is None:
        return None
    return dict(saved) if isinstance(saved, Mapping) else {_DAMAGED_KEY: True}


def _guard_store(graph: Any, config: dict[str, Any]) -> Any:
    from liveguard.live._langgraph import GuardedGraph
    from liveguard.live._langgraph._record import ThreadStore

    if not isinstance(graph, GuardedGraph):
        return None
    return ThreadStore.of(graph, config)


def _agent_stop(agent: Mapping[str, Any]) -> Violation | None:
    """The middleware's saved stop, read by the core (a damaged one reads as a stop)."""
    if agent.get(_DAMAGED_KEY):
        return read_stop(None)[0]  # logged: a damaged record reads as a stop
    stop, _ = read_stop(agent, present=True)
    return stop


def _steps(windows: Any) -> int:
    snapshot = windows.get("m") if isinstance(windows, Mapping) else None
    steps = snapshot.get("n", 0) if isinstance(snapshot, Mapping) else 0
    return steps if isinstance(steps, int) else 0


def thread_status(graph: Any, config: Any) -> dict[str, Any]:
    """What is saved for this thread (see :func:`athread_status`, its async twin)."""
    return run(_status(graph, config))


async def athread_status(graph: Any, config: Any) -> dict[str, Any]:
    """What is saved for this thread: ``{"agent": {...} | None, "guard": {...} | None}``.

    Each part carries ``stop`` (the violation as a dict, or None), ``held`` and
    ``interrupt_id`` (guard, ``exit_behavior="interrupt"``: the pending hold), ``audit``
    (a person's decisions: codes, who, when, digests of any text), ``steps`` (steps
    observed along the thread's latest checkpoint lineage) and ``ledger`` (agent). Codes,
    counts and digests only. A damaged record shows its stop as ``guard_error``
    (``detail.reason = "damaged_record"``).
    Raises :class:`UnknownThreadError` when the checkpointer has nothing for the thread.
    """
    return await arun(_status(graph, config))


def _status(graph: Any, config: Any) -> Body[dict[str, Any]]:
    cfg = _config(config)
    saver = _checkpointer(graph, cfg)
    out: dict[str, Any] = {"agent": None, "guard": None}
    agent = yield from _agent_state(graph, cfg)
    if agent is not None:
        stop = _agent_stop(agent)
        out["agent"] = {"stop": None if stop is None else stop.model_dump(mode="json"),
                        "steps": _steps(agent),
                        "ledger": agent.get("ledger", []), "debounced": agent.get("debounced", 0),
                        "audit": read_audit(agent)}
    store = _guard_store(graph, cfg)
    if store is not None:
        stop, held, hold, audit = yield blocking(store.load_record)
        chain = yield blocking(store.load_chain, None)
        if stop is not None or chain.origin is not None:
            out["guard"] = {"stop": None if stop is None else stop.model_dump(mode="json"),
                            "held": held, "interrupt_id": hold.get("id"),
                            "steps": chain_steps(chain.records), "audit": audit}
    if out["agent"] is None and out["guard"] is None and (yield blocking(saver.get_tuple, cfg)) is None:
        raise UnknownThreadError(f"thread {cfg['configurable']['thread_id']!r}: no checkpoint "
                                 "in this checkpointer")
    return out


def clear(graph: Any, config: Any) -> Violation | None:
    """Clear a stopped thread (see :func:`aclear`, its async twin)."""
    return run(_clear(graph, config))


async def aclear(graph: Any, config: Any) -> Violation | None:
    """Clear a stopped thread; return the violation that had stopped it (None if none had).

    ``graph`` is the guarded graph (``guard(...)``) or the ``create_agent`` graph with
    ``LivenessMiddleware``, compiled with the thread's checkpointer; ``config`` names the
    thread (``{"configurable": {"thread_id": ...}}``), or is :func:`run_thread_config` of a
    running graph (the LangGraph server's checkpointer, the graph compiled without one).
    Raises ``ValueError`` when the graph has no checkpointer or the config no thread id. A
    damaged record is cleared too (it is overwritten, never parsed for anything but the stop
    it held).
    """
    return await arun(_clear(graph, config))


def _clear(graph: Any, config: Any) -> Body[Violation | None]:
    cfg = _config(config)
    _checkpointer(graph, cfg)
    cleared: Violation | None = None
    agent = yield from _agent_state(graph, cfg)
    if agent is not None:
        cleared = _agent_stop(agent)
        raw = agent.get("ledger")
        entries = raw if isinstance(raw, list) else []
        ledger = [[*entry[:4], False] for entry in entries
                  if isinstance(entry, list | tuple) and len(entry) >= 4]
        # no token: no in-memory copy is reused
        value = {k: v for k, v in agent.items() if k not in ("k", _DAMAGED_KEY)}
        value.update(stop=None, m=None, ledger=ledger)
        yield Op(functools.partial(graph.update_state, as_node="model"),
                 functools.partial(graph.aupdate_state, as_node="model"), (cfg, {_STATE_KEY: value}))
    store = _guard_store(graph, cfg)
    if store is not None:
        stop = yield blocking(_clear_guard, store)
        if stop is not None and cleared is None:
            cleared = stop
    return cleared


def _clear_guard(store: Any) -> Violation | None:
    """Clear guard()'s record: the stop row (the audit kept), any hold, the windows."""
    stop, _, hold, audit = _safe_record(store)
    if hold:  # a person's hold: its pending interrupt goes too
        store.set_hold(hold, None)
    store.save_stop(None, audit=audit)
    origin = store.load_chain(None).origin
    if origin is not None:  # the windows start afresh from the thread's latest checkpoint
        store.save_windows(origin, windows_value(None))
    stop_found: Violation | None = stop
    return stop_found


def _safe_record(store: Any) -> tuple[Violation | None, bool, dict[str, Any], list[dict[str, Any]]]:
    """The saved stop row; a row that cannot even be read is treated as a damaged stop."""
    try:
        found: tuple[Violation | None, bool, dict[str, Any], list[dict[str, Any]]] = store.load_record()
    except Exception:
        return DAMAGED, False, {}, []
    return found
