"""Readers turn recorded runs into :class:`~liveguard.core.model.Trajectory` objects."""
