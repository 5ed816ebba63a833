"""Readers turn recorded runs into :class:`~liveguard.model.Trajectory` objects."""
