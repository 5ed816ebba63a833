"""Shared fixtures. Tests import the installed ``liveguard`` package, never backend/ paths."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clean_policy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Policy env overrides from the developer's shell must not leak into tests."""
    for name in ("AGENT_EVAL_MAX_REVISITS", "AGENT_EVAL_LOOP_GUARD"):
        monkeypatch.delenv(name, raising=False)
