"""Judges on local and self-hosted OpenAI-compatible servers (issue 31, item 4; docs/judges.md).

Each recipe of docs/judges.md is run as written: its ``export`` lines become the environment
of ``liveguard score`` (the console path a user takes), its host and port pointed at a local
fake on 127.0.0.1 (tests/fake_openai.py) that answers in that server's own response shape,
through the real ``openai`` client. The run is judged, with the recipe's model, and with no
key where the recipe gives none.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import pytest

from fake_openai import FakeOpenAI, RecordedRequest, Reply
from liveguard.errors import PolicyError
from liveguard.evaluate.judges import JudgeConfig
from liveguard.evaluate.judges._parse import parse_answer
from liveguard.testing import messages, trajectory

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "judges.md"
ANSWER = {"score": 0.95, "confidence": 0.9, "reason": "the run reached its goal"}


def _recipes() -> dict[str, dict[str, str]]:
    """``heading -> {VAR: value}`` from the ``export`` lines of each ``##`` section's sh block."""
    out: dict[str, dict[str, str]] = {}
    for section in re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]:
        heading, _, body = section.partition("\n")
        env: dict[str, str] = {}
        for block in re.findall(r"```sh\n(.*?)```", body, flags=re.DOTALL):
            for var, value in re.findall(r"^export (\w+)=(\S+)", block, flags=re.MULTILINE):
                env[var] = value
        out[heading.strip()] = env
    return out


# -- each server's answer shape (its /v1/chat/completions body), around the judge's content -------
def _ollama(model: str, content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-494", "object": "chat.completion", "created": int(time.time()), "model": model,
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 412, "completion_tokens": 31, "total_tokens": 443}}


def _vllm(model: str, content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-9f1c0e", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": None,
                                                 "content": content, "tool_calls": []},
                         "logprobs": None, "finish_reason": "stop", "stop_reason": None}],
            "usage": {"prompt_tokens": 412, "total_tokens": 443, "completion_tokens": 31,
                      "prompt_tokens_details": None},
            "prompt_logprobs": None, "kv_transfer_params": None}


def _litellm(model: str, content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-2b7e", "created": int(time.time()), "model": model, "object": "chat.completion",
            "system_fingerprint": None,
            "choices": [{"finish_reason": "stop", "index": 0,
                         "message": {"content": content, "role": "assistant", "tool_calls": None,
                                     "function_call": None}}],
            "usage": {"completion_tokens": 31, "prompt_tokens": 412, "total_tokens": 443}}


OLLAMA, VLLM, PROXY = "Ollama", "vLLM", "An OpenAI-compatible proxy on your own network"
_FENCED = "```json\n" + json.dumps(ANSWER, indent=2) + "\n```"
_FENCES_PARSE = not isinstance(parse_answer(_FENCED), str)
CASES = [
    pytest.param(OLLAMA, _ollama, json.dumps(ANSWER), id="ollama"),
    pytest.param(OLLAMA, _ollama, _FENCED, id="ollama-fenced-answer", marks=pytest.mark.xfail(
        not _FENCES_PARSE, strict=True,
        reason="answers in ```json fences are read by judges/_parse.py from helper judge's branch")),
    pytest.param(VLLM, _vllm, json.dumps(ANSWER), id="vllm"),
    pytest.param(PROXY, _litellm, json.dumps(ANSWER), id="proxy"),
]


def _pointed_at(url: str, fake: FakeOpenAI) -> str:
    """The recipe's URL with its host and port those of the fake (path kept)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"127.0.0.1:{fake.port}", parts.path, "", ""))


def _score(tmp_path: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    steps = messages(("planner", "plan the refund"), ("writer", "refund sent, ticket closed"))
    run = trajectory("healthy-1", steps, graph="support")
    path = tmp_path / "runs.jsonl"
    path.write_bytes(orjson.dumps(run.model_dump(mode="json", exclude_none=True)) + b"\n")
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AGENT_EVAL_", "OPENAI_", "DEEPSEEK_", "LLM_", "LANGSMITH_"))}
    done = subprocess.run([sys.executable, "-m", "liveguard.cli", "score", str(path), "--format", "jsonl"],
                          env={**base, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "judges: not run" not in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_every_recipe_is_found() -> None:
    recipes = _recipes()
    assert {OLLAMA, VLLM, PROXY} <= set(recipes)
    for name in (OLLAMA, VLLM, PROXY):
        assert {"AGENT_EVAL_BASE_URL", "AGENT_EVAL_MODEL"} <= set(recipes[name]), name


@pytest.mark.parametrize(("recipe", "shape", "content"), CASES)
def test_the_recipe_judges_a_run(tmp_path: Path, recipe: str, shape: Any, content: str) -> None:
    env = dict(_recipes()[recipe])
    with FakeOpenAI(responder=lambda req: Reply.completion(
            shape(req.body.get("model", "?") if isinstance(req.body, dict) else "?", content))) as fake:
        env["AGENT_EVAL_BASE_URL"] = _pointed_at(env["AGENT_EVAL_BASE_URL"], fake)
        (row,) = _score(tmp_path, env)
        requests: list[RecordedRequest] = fake.requests
    assert row.get("error") is None, row
    assert row["provenance"]["judged"] is True, row["provenance"]
    assert row["passed"] is True
    assert requests, "no judge was asked"
    assert {r.path for r in requests} == {urlsplit(env["AGENT_EVAL_BASE_URL"]).path + "/chat/completions"}
    assert {r.body["model"] for r in requests} == {env["AGENT_EVAL_MODEL"]}
    key = env.get("AGENT_EVAL_API_KEY")
    assert {r.headers.get("authorization") for r in requests} == {f"Bearer {key or 'no-key'}"}


def test_the_proxy_recipe_sends_its_key_over_http_only_to_the_allowed_host() -> None:
    """The recipe as written (its own host, not loopback): allowed by AGENT_EVAL_ALLOW_HTTP_HOSTS,
    refused without it, and a host not in the list is refused too."""
    env = _recipes()[PROXY]
    config = JudgeConfig.from_env(env)
    assert config.skip_reason() is None
    assert config.api_key is not None
    assert config.api_key.get_secret_value() == env["AGENT_EVAL_API_KEY"]
    without = {k: v for k, v in env.items() if k != "AGENT_EVAL_ALLOW_HTTP_HOSTS"}
    with pytest.raises(PolicyError, match=r"refusing to send an API key .*AGENT_EVAL_ALLOW_HTTP_HOSTS"):
        JudgeConfig.from_env(without)
    with pytest.raises(PolicyError, match="refusing"):
        JudgeConfig.from_env({**env, "AGENT_EVAL_ALLOW_HTTP_HOSTS": "other.internal"})


def test_no_key_is_needed_on_loopback_or_an_allowed_host_and_remote_hosts_still_need_one() -> None:
    for url in ("http://localhost:11434/v1", "http://127.0.0.1:8000/v1", "http://[::1]:8080/v1"):
        assert JudgeConfig.from_env({"AGENT_EVAL_BASE_URL": url}).skip_reason() is None, url
    lan = {"AGENT_EVAL_BASE_URL": "http://gpu-box.lan:11434/v1", "AGENT_EVAL_ALLOW_HTTP_HOSTS": "gpu-box.lan"}
    assert JudgeConfig.from_env(lan).skip_reason() is None
    assert JudgeConfig.from_env({"AGENT_EVAL_BASE_URL": "http://gpu-box.lan:11434/v1"}).skip_reason() == \
        "no_api_key"
    assert JudgeConfig.from_env({"AGENT_EVAL_BASE_URL": "https://api.example.com/v1"}).skip_reason() == \
        "no_api_key"
    assert JudgeConfig.from_env({}).skip_reason() == "no_api_key"  # DeepSeek by default: a key needed


@pytest.mark.parametrize("bad", ["http://gpu-box.lan", "gpu-box.lan:11434", "10.0.0.0/8"])
def test_allowed_hosts_are_names_or_addresses(bad: str) -> None:
    with pytest.raises(PolicyError, match="AGENT_EVAL_ALLOW_HTTP_HOSTS"):
        JudgeConfig.from_env({"AGENT_EVAL_ALLOW_HTTP_HOSTS": bad})


def test_openai_key_alone_is_documented_as_not_enough() -> None:
    """docs/ci.md and docs/judges.md say what OPENAI_API_KEY needs beside it, as the program does."""
    assert JudgeConfig.from_env({"OPENAI_API_KEY": "sk-x"}).skip_reason() == "no_api_key"
    assert JudgeConfig.from_env({"OPENAI_API_KEY": "sk-x",
                                 "AGENT_EVAL_BASE_URL": "https://api.openai.com/v1"}).skip_reason() is None
    ci = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "AGENT_EVAL_BASE_URL=https://api.openai.com/v1" in ci
