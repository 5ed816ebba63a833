"""Issue 18, the hardening items: keys only over https, a checked embedder, void judge
evidence on a suspected injection, visible terminal escapes, LangSmith roots without
children, Parquet exports without ``trace_id``, and input faults that are exit 2."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from liveguard.errors import PolicyError
from liveguard.judges import JudgeConfig

# -- keys only over https, except loopback ------------------------------------------------------


@pytest.mark.parametrize("url", ["http://api.example.com/v1", "http://10.0.0.5:8000/v1",
                                 "http://judge.internal/v1"])
def test_a_key_is_never_sent_over_plain_http_to_a_remote_host(url: str) -> None:
    with pytest.raises(ValidationError, match="keys go only over https"):
        JudgeConfig(base_url=url, api_key=SecretStr("sk-secret"))
    with pytest.raises(PolicyError, match="AGENT_EVAL_BASE_URL: refusing to send an API key") as info:
        JudgeConfig.from_env({"AGENT_EVAL_BASE_URL": url, "AGENT_EVAL_API_KEY": "sk-secret"})
    assert "sk-secret" not in str(info.value)


def test_the_remote_embedder_refuses_plain_http_too() -> None:
    from liveguard.semantic.remote import OpenAIEmbedder

    with pytest.raises(PolicyError, match="keys go only over https"):
        OpenAIEmbedder(env={"AGENT_EVAL_BASE_URL": "http://embed.example.com/v1", "AGENT_EVAL_API_KEY": "k"})


@pytest.mark.parametrize("url", ["https://api.example.com/v1", "http://127.0.0.1:8000/v1",
                                 "http://localhost:11434/v1", "http://[::1]:9/v1", "http://127.3.2.1/v1"])
def test_https_and_loopback_http_are_accepted(url: str) -> None:
    assert JudgeConfig(base_url=url, api_key=SecretStr("k")).skip_reason() is None
    assert JudgeConfig.from_env({"AGENT_EVAL_BASE_URL": url, "AGENT_EVAL_API_KEY": "k"}).base_url == url


def test_plain_http_without_a_key_sends_nothing_secret_and_is_allowed() -> None:
    assert JudgeConfig(base_url="http://api.example.com/v1").skip_reason() == "no_api_key"
