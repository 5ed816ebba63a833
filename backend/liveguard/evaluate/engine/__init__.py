"""Scoring engines: the per-process :class:`~liveguard.evaluate.engine.scorer.Scorer`, the graph-free
:class:`~liveguard.evaluate.engine.floor.Floor`, and the local streaming / multi-process engine.
The Ray engine is :mod:`liveguard.evaluate.engine.ray` (extra ``liveguard[ray]``)."""
