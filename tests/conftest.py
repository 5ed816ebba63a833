"""Shared fixtures. Tests import the installed ``liveguard`` package, never backend/ paths."""

from __future__ import annotations

import pytest

from fake_langsmith import fake_langsmith  # noqa: F401 - the local LangSmith API server fixture
from fake_openai import fake_openai  # noqa: F401 - the local OpenAI-compatible server fixture


@pytest.fixture(autouse=True)
def _clean_policy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Env overrides and keys from the developer's shell must not leak into tests."""
    for name in _ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)


_ISOLATED_ENV = (
    "AGENT_EVAL_MAX_REVISITS",
    "AGENT_EVAL_LOOP_GUARD",
    "AGENT_EVAL_SEMANTIC",
    "AGENT_EVAL_EMBEDDING_MODEL",
    "AGENT_EVAL_TRAJECTORY_ANOMALY",
    "AGENT_EVAL_AUTOAPPROVE",
    "AGENT_EVAL_BASE_URL",
    "AGENT_EVAL_MODEL",
    "AGENT_EVAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "LLM_KILL_SWITCH",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGSMITH_API_KEY",
)
