"""Evaluation: the eval graph, the judges, the verdict and its aggregate, the release gate, the
scoring engines (local processes and Ray, the same scoring functions), LangSmith evaluators.

Imports only :mod:`liveguard.core` and :mod:`liveguard.readers` below it.
"""

__all__: list[str] = []
