"""Scoring engines: the per-process :class:`~liveguard.engine.scorer.Scorer`, the graph-free
:class:`~liveguard.engine.floor.Floor`, and the local streaming / multi-process engine.
The Ray engine is :mod:`liveguard.integrations.ray` (extra ``liveguard[ray]``)."""
