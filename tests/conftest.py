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
    "AGENT_EVAL_ALLOW_HTTP_HOSTS",
    "AGENT_EVAL_MODEL",
    "AGENT_EVAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "LLM_KILL_SWITCH",
    "LANGSMITH_TRACING",
    "LANGCHAIN_TRACING_V2",
    "LANGSMITH_API_KEY",
)


# Under pytest-xdist (`make test` runs two workers), tests that start Ray share one worker:
# `ray.init()` joins a cluster started on this machine by `ray start`, so the local-engine
# tests and the two-node cluster test must never run side by side.
_ONE_WORKER = {"test_ray.py": "ray", "test_ray_cluster.py": "ray", "test_install.py": "ray"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        group = _ONE_WORKER.get(item.path.name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
