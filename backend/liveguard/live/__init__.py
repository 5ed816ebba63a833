"""Live runs: the thread guard (the one live core), ``guard()`` and the middleware as its
drivers, the approval step, human-in-the-loop requests and decisions, notifications,
checkpointers and thread records.

Imports only the layers below it; the public paths of the framework adapters are
:mod:`liveguard.integrations.langgraph` and :mod:`liveguard.integrations.langchain`.
"""

__all__: list[str] = []
