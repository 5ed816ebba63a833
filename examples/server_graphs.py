"""The graphs `langgraph dev` serves from ``examples/langgraph.json``.

* ``guarded``: the job poller of ``guarded_graph.py`` wrapped in ``guard()``; the server gives
  it its own checkpointer, and the guard keeps the thread's liveness there.
  ``{"job": "stuck"}`` loops and is stopped; any other job finishes.
* ``agent``: the ``create_agent`` agent of ``agent_middleware.py`` with ``LivenessMiddleware``
  (a scripted model that repeats one failing tool call).
* ``campaign``: the outreach campaign of ``graphs/campaign.py`` with its draft-first approval
  step (``liveguard.approval.approval_gate``); with no judge configured, every draft is held.

Run from this directory: ``langgraph dev`` (the config's dependencies ``"."`` and ``".."``
put this directory and the repository root on the path).
"""

from __future__ import annotations

from agent_middleware import build_agent
from graphs.campaign import build_graph
from guarded_graph import build_poller

from liveguard.integrations.langgraph import guard

guarded = guard(build_poller().compile(name="guarded"))
agent = build_agent()
campaign = build_graph("healthy")
