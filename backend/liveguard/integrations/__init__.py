"""Live guards: stop a running agent at the second or third identical step, with a named error.

* :mod:`liveguard.integrations.langgraph`: ``guard(graph)`` wraps any compiled LangGraph
  graph; its ``invoke`` / ``ainvoke`` / ``stream`` / ``astream`` feed every ``"updates"``
  chunk to a fresh :class:`~liveguard.monitor.Monitor` per call and raise
  :class:`~liveguard.errors.NoProgressError` from inside the stream loop.
* :mod:`liveguard.integrations.langchain`: ``LivenessMiddleware`` for
  ``langchain.agents.create_agent``: observes every model response and tool result through
  one Monitor per agent run; raises, or ends the run with a short stop message.

* :mod:`liveguard.integrations.langsmith`: LangSmith's online side (listing a project's
  runs, ``feedback_for`` / ``push_feedback``, and the evaluators for ``langsmith.evaluate``
  and openevals' calling convention).

The two guards use the same Monitor as offline scoring: one rule set, never forked. Neither kills
the agent it guards when the guard itself fails (an unfingerprintable payload, a bug):
the failure is logged by code and exception type, and the guard stands down for the rest
of that run. Logs (logger ``liveguard.guard``) carry codes, counts, digest prefixes,
node names and step indices, never step text.

Importing this package imports no framework; each module imports its framework when used.
"""
