"""The graphs `langgraph dev` serves from ``examples/langgraph.json``.

* ``guarded``: the job poller of ``guarded_graph.py`` wrapped in ``guard()``; the server gives
  it its own checkpointer, and the guard keeps the thread's liveness there.
  ``{"job": "stuck"}`` loops and is stopped; any other job finishes.
* ``agent``: the ``create_agent`` agent of ``agent_middleware.py`` with ``LivenessMiddleware``
  (a scripted model that repeats one failing tool call).
* ``campaign``: the outreach campaign of ``graphs/campaign.py`` with its draft-first approval
  step (``liveguard.live.approval.approval_gate``); with no judge configured, every draft is held.
  Its input names the lead: ``{"lead_id": 17, "lead_name": "Ada Park", "steps": []}``.
* ``liveguard_clear``: clears a stopped thread of one of the graphs above. Its input is
  ``{"thread_id": ..., "graph_id": "guarded"}``; its output's ``cleared`` is the violation that
  had stopped the thread (or None). Run it on a thread of its own (a stateless run gets no
  checkpointer), as ``server_app.py``'s route does. It works through public APIs only: the
  server gives every run its checkpointer, the node finds it in its config
  (``liveguard.live.threads.run_thread_config``), and ``liveguard.clear`` reads and writes the
  thread's record there.

Run from this directory: ``langgraph dev`` (the config's dependencies ``"."`` and ``".."``
put this directory and the repository root on the path).
"""

# no `from __future__ import annotations`: LangGraph reads ClearRequest's hints at run time,
# also where this file is loaded without a sys.modules entry (tests/test_server.py)
from typing import Any, TypedDict

from agent_middleware import build_agent
from graphs.campaign import build_graph
from guarded_graph import build_poller
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

import liveguard
from liveguard.integrations.langgraph import guard
from liveguard.live.threads import run_thread_config

guarded = guard(build_poller().compile(name="guarded"))
agent = build_agent()
campaign = build_graph("healthy")

CLEARABLE: dict[str, Any] = {"guarded": guarded, "agent": agent, "campaign": campaign}


class ClearRequest(TypedDict, total=False):
    thread_id: str
    graph_id: str
    cleared: dict[str, Any] | None
    error: str | None


def _clear(state: ClearRequest, config: RunnableConfig) -> ClearRequest:
    graph = CLEARABLE.get(str(state.get("graph_id")))
    if graph is None:
        return {"cleared": None, "error": "graph_id: expected the id of a served graph"}
    if not isinstance(state.get("thread_id"), str):
        return {"cleared": None, "error": "thread_id: expected a thread id"}
    try:
        cleared = liveguard.clear(graph, run_thread_config(config, state["thread_id"]))
    except ValueError as exc:
        return {"cleared": None, "error": str(exc)}
    return {"cleared": cleared.model_dump(mode="json") if cleared else None, "error": None}


liveguard_clear = (StateGraph(ClearRequest).add_node("clear", _clear)
                   .add_edge(START, "clear").add_edge("clear", END).compile(name="liveguard_clear"))
