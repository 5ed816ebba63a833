"""Live guards: stop a running agent at the second or third identical step, and keep it stopped.

* :mod:`liveguard.integrations.langgraph`: ``guard(graph)`` guards any compiled LangGraph
  graph (it returns a guarded ``Pregel``: every entry point, subgraphs included); the
  thread's liveness is saved in the graph's checkpointer.
* :mod:`liveguard.integrations.langchain`: ``LivenessMiddleware`` for
  ``langchain.agents.create_agent``: the thread's liveness lives in the agent state; the
  debounce and the tool-call ledger.

Both use the same Monitor as offline scoring (one rule set, never forked), the same
``exit_behavior`` vocabulary (``error``, ``end``, ``continue``, ``interrupt``, ``warn``), and
:func:`liveguard.clear` to lift a saved stop. Neither kills the agent it guards when the
guard itself fails: the failure is logged by code and exception type, and the guard stands
down. Logs (logger ``liveguard.guard``) carry codes, counts, digest prefixes, node names and
step indices, never step text.

Importing this package imports no framework; each module imports its framework when used.
"""
