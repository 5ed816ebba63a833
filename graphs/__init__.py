"""Scripted target graphs that liveguard is evaluated on.

Each module (``campaign``, ``coder_reviewer``, ``sql_agent``) exposes ``GRAPH_NAME``,
``SCENARIOS``, ``build_graph(scenario="healthy", *, checkpointer=None)``,
``initial_input(scenario)`` and a module-level compiled ``graph`` (the healthy build),
so ``liveguard paths derive graphs.campaign:graph`` works. The hand-written allow-sets
are in ``expected_paths/<GRAPH_NAME>.yaml``.
"""

GRAPH_MODULES: tuple[str, ...] = ("graphs.campaign", "graphs.coder_reviewer", "graphs.sql_agent")
"""Import paths of all target graph modules."""
