"""Compatibility names: the evaluators live in :mod:`liveguard.integrations.langsmith`."""

from __future__ import annotations

from liveguard.integrations.langsmith import (
    GATE_SCORES,
    create_async_gate_evaluator,
    create_async_liveness_evaluator,
    create_async_verdict_evaluator,
    create_gate_evaluator,
    create_liveness_evaluator,
    create_verdict_evaluator,
)

__all__ = [
    "GATE_SCORES",
    "create_async_gate_evaluator",
    "create_async_liveness_evaluator",
    "create_async_verdict_evaluator",
    "create_gate_evaluator",
    "create_liveness_evaluator",
    "create_verdict_evaluator",
]
