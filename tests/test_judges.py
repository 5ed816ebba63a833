"""The LLM-judge gateway through the real ``openai`` client against a local fake server.

Nothing here reaches a real API: every gateway points at ``fake_openai`` (or at a closed
port), and the environment's keys and URLs are cleared first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from fake_openai import FakeOpenAI, RecordedRequest, Reply, free_port
from liveguard import LiveguardError, PolicyError
from liveguard.evaluate.judges import (
    ANSWER_SCHEMA,
    MAX_PAYLOAD_CHARS,
    MAX_REASON_CHARS,
    PROMPT_VERSION,
    SYSTEM_PROMPTS,
    JudgeClient,
    JudgeConfig,
    JudgeResult,
    JudgeSkipped,
    Level,
    build_messages,
    parse_answer,
    prompt_digest,
)
from liveguard.settings import Settings

GOOD = {"score": 0.9, "confidence": 0.8, "reason": "advances the task"}
ENV_VARS = (
    "AGENT_EVAL_BASE_URL", "AGENT_EVAL_MODEL", "AGENT_EVAL_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY",
    "AGENT_EVAL_TIMEOUT", "AGENT_EVAL_MAX_RETRIES", "AGENT_EVAL_CONCURRENCY", "LLM_KILL_SWITCH",
)


def data_of(user: str) -> str:
    """The one data block of a judge's user message (and check its per-request boundary)."""
    lines = user.split("\n")
    begin = next(i for i, line in enumerate(lines) if line.startswith("BEGIN_RUN_DATA "))
    token = lines[begin].split(" ", 1)[1]
    assert len(token) >= 16
    assert lines[-1] == f"END_RUN_DATA {token}"
    block = "\n".join(lines[begin + 1 : -1])
    assert token not in block
    return block


@pytest.fixture(autouse=True)
def _clean_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's keys, URLs and switches must not leak into (or out of) these tests."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def config(fake: FakeOpenAI, **overrides: Any) -> JudgeConfig:
    values: dict[str, Any] = {"base_url": fake.base_url, "api_key": SecretStr("sk-test"), "timeout": 2.0}
    return JudgeConfig(**{**values, **overrides})


def judge(cfg: JudgeConfig, level: Level = "step", payload: Mapping[str, Any] | None = None) -> JudgeResult:
    async def run() -> JudgeResult:
        async with JudgeClient(cfg) as gateway:
            return await gateway.judge(level, payload if payload is not None else {"task": "t"})

    return asyncio.run(run())


# -- happy path -----------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["step", "trajectory", "outcome"])
def test_scores_are_parsed_and_the_request_is_well_formed(fake_openai: FakeOpenAI, level: Level) -> None:
    fake_openai.enqueue(Reply.json(GOOD))
    result = judge(config(fake_openai, model="judge-model"), level, {"task": "add", "steps": [1, 2]})
    assert result == JudgeResult(
        level=level, score=0.9, confidence=0.8, reason="advances the task", error=None,
        requests=1, model="judge-model", prompt_version=PROMPT_VERSION,
    )
    [request] = fake_openai.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "judge-model"
    assert request.body["response_format"] == {  # structured outputs first
        "type": "json_schema", "json_schema": {"name": "judgement", "strict": True, "schema": ANSWER_SCHEMA}}
    assert request.body["temperature"] == 0
    assert request.content("system") == SYSTEM_PROMPTS[level]
    assert data_of(request.content("user")) == '{"steps": [1, 2], "task": "add"}'  # sorted keys


def test_prompts_are_distinct_and_ask_for_json() -> None:
    assert len(set(SYSTEM_PROMPTS.values())) == 3
    for prompt in SYSTEM_PROMPTS.values():
        assert "JSON" in prompt  # DeepSeek's json_object mode requires the word
        assert all(key in prompt for key in ('"score"', '"confidence"', '"reason"'))


def test_base_url_without_v1_works(fake_openai: FakeOpenAI) -> None:
    result = judge(config(fake_openai, base_url=f"http://127.0.0.1:{fake_openai.port}"))
    assert (result.score, result.error) == (0.5, None)  # the server's default answer
    assert [r.path for r in fake_openai.requests] == ["/chat/completions"]


def test_long_payloads_are_truncated(fake_openai: FakeOpenAI) -> None:
    judge(config(fake_openai), "trajectory", {"steps": ["x" * 1000] * 100})
    user = data_of(fake_openai.requests[0].content("user"))
    assert len(user) == MAX_PAYLOAD_CHARS
    assert user.endswith("[truncated]")


def test_payloads_with_unsortable_keys_and_objects_are_sent(fake_openai: FakeOpenAI) -> None:
    result = judge(config(fake_openai), "outcome", {"outcome": {1: "a", "b": object.__name__}, "n": 2})
    assert result.error is None
    sent = json.loads(data_of(fake_openai.requests[0].content("user")))
    assert sent["outcome"] == {"1": "a", "b": "object"}


# -- retries and HTTP errors ----------------------------------------------------------------
def test_429_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.error(429), Reply.json(GOOD))
    result = judge(config(fake_openai))
    assert (result.score, result.error, result.requests) == (0.9, None, 2)
    assert len(fake_openai.requests) == 2


def test_two_500s_then_success(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.error(500), Reply.error(502), Reply.json(GOOD))
    result = judge(config(fake_openai, max_retries=3))
    assert (result.score, result.error, result.requests) == (0.9, None, 3)


@pytest.mark.parametrize(("status", "code"), [(500, "http_5xx"), (503, "http_5xx"), (429, "http_429")])
def test_retries_are_bounded(fake_openai: FakeOpenAI, status: int, code: str) -> None:
    fake_openai.enqueue(*[Reply.error(status)] * 10)
    result = judge(config(fake_openai, max_retries=3))
    assert (result.score, result.error, result.requests) == (None, code, 4)
    assert len(fake_openai.requests) == 4


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_4xx_is_not_retried(fake_openai: FakeOpenAI, status: int) -> None:
    fake_openai.enqueue(Reply.error(status))
    result = judge(config(fake_openai, max_retries=3))
    assert (result.error, result.requests) == ("http_4xx", 1)


def test_timeout_is_retried_then_reported(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.slow(5.0), Reply.slow(5.0))
    started = time.perf_counter()
    result = judge(config(fake_openai, timeout=0.2, max_retries=1))
    assert (result.score, result.error, result.requests) == (None, "timeout", 2)
    assert time.perf_counter() - started < 1.5  # 2 x 0.2 s + the SDK's <= 0.5 s backoff


def test_a_long_retry_after_is_cut_by_the_deadline(fake_openai: FakeOpenAI) -> None:
    """The SDK would sleep a 60 s Retry-After; the judgement's deadline stops it."""
    fake_openai.enqueue(Reply.error(429, headers={"retry-after": "60"}))
    started = time.perf_counter()
    result = judge(config(fake_openai, timeout=0.2, max_retries=1))  # deadline 2 x 0.2 + 0.5 s
    assert (result.error, result.requests) == ("http_429", 1)
    assert time.perf_counter() - started < 1.5


def test_unreachable_server_is_a_connection_error() -> None:
    cfg = JudgeConfig(base_url=f"http://127.0.0.1:{free_port()}/v1", api_key=SecretStr("k"), max_retries=0)
    result = judge(cfg)
    assert (result.score, result.error, result.requests) == (None, "connection", 1)


# -- unusable answers -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply.text('{"score": 0.9, "confidence": '), "malformed_json"),
        (Reply.text("The run looks fine."), "malformed_json"),
        (Reply.text(""), "malformed_json"),
        (Reply(raw="<html>bad gateway</html>"), "malformed_json"),
        (Reply.json({"score": 1.7, "confidence": 0.5, "reason": "r"}), "out_of_range"),
        (Reply.json({"score": 0.5, "confidence": -0.1, "reason": "r"}), "out_of_range"),
        (Reply.json({"score": 0.5, "reason": "r"}), "schema"),
        (Reply.json({"score": "0.5", "confidence": 0.5, "reason": "r"}), "schema"),
        (Reply.text("[0.5, 0.5]"), "schema"),
    ],
)
def test_unusable_answers_are_codes_not_exceptions(fake_openai: FakeOpenAI, reply: Reply, code: str) -> None:
    fake_openai.enqueue(reply)
    result = judge(config(fake_openai))
    assert (result.score, result.confidence, result.reason, result.error) == (None, None, "", code)
    assert result.requests == 1  # a bad answer is not retried


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"score": 1, "confidence": 0, "reason": " ok "}', (1.0, 0.0, "ok")),
        ('{"score": 0.5, "confidence": 0.5, "reason": "r", "extra": [1]}', (0.5, 0.5, "r")),
        ('{"score": NaN, "confidence": 0.5, "reason": "r"}', "out_of_range"),
        ('{"score": 2, "confidence": 0.5}', "schema"),  # missing beats out of range
        ('{"score": true, "confidence": 0.5, "reason": "r"}', "schema"),
        ('{"score": 0.5, "confidence": 0.5, "reason": 7}', "schema"),
        ('```json\n{"score": 0.5, "confidence": 0.5, "reason": "r"}\n```', (0.5, 0.5, "r")),  # issue 30
        ('\n```\n{"score": 0.5, "confidence": 0.5, "reason": "r"}\n```\n', (0.5, 0.5, "r")),
        ('```JSON\r\n{"score": 0.2, "confidence": 0.5, "reason": "r"}```', (0.2, 0.5, "r")),
        ('Here you go:\n```json\n{"score": 0.5, "confidence": 0.5, "reason": "r"}\n```', "malformed_json"),
        ('```json\n{"score": 0.5, "confidence": 0.5, "reason": "r"}\n```\nHope it helps', "malformed_json"),
        ('```json\n{"score": 2, "confidence": 0.5, "reason": "r"}\n```', "out_of_range"),
        ("```json\n```", "malformed_json"),
        ("[" * 100_000, "malformed_json"),
        (None, "malformed_json"),
    ],
)
def test_parse_answer(content: str | None, expected: object) -> None:
    assert parse_answer(content) == expected


def test_a_fenced_answer_is_a_score_not_malformed_json(fake_openai: FakeOpenAI) -> None:
    """Issue 30: a local model's answer in ```json fences was read as malformed_json, so the
    run was unjudged and the gate held."""
    fake_openai.enqueue(Reply.text('```json\n{"score": 0.2, "confidence": 0.7, "reason": "loops"}\n```'))
    result = judge(config(fake_openai))
    assert (result.score, result.confidence, result.reason, result.error) == (0.2, 0.7, "loops", None)


REFUSAL = {"error": {"message": "This response_format type is unavailable now",
                     "type": "invalid_request_error"}}


def test_an_endpoint_refusing_structured_outputs_is_asked_in_json_mode(fake_openai: FakeOpenAI) -> None:
    """Structured outputs where the endpoint takes them; one that refuses them (a 400 naming
    response_format, as DeepSeek's API answers) is asked again at once in JSON mode, and
    from then on, without a second refusal."""
    fake_openai.enqueue(Reply.error(400, REFUSAL), Reply.json(GOOD), Reply.json(GOOD))

    async def run() -> list[JudgeResult]:
        async with JudgeClient(config(fake_openai)) as gateway:
            return [await gateway.judge("step", {"task": "t"}), await gateway.judge("step", {"task": "t"})]

    first, second = asyncio.run(run())
    assert (first.score, first.error, first.requests) == (0.9, None, 2)
    assert (second.score, second.requests) == (0.9, 1)
    formats = [r.body["response_format"]["type"] for r in fake_openai.requests]
    assert formats == ["json_schema", "json_object", "json_object"]


def test_any_other_400_is_not_a_refusal_of_structured_outputs(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.error(400))
    result = judge(config(fake_openai))
    assert (result.error, result.requests) == ("http_4xx", 1)
    assert len(fake_openai.requests) == 1


def test_the_prompt_digest_sets_the_random_token_aside() -> None:
    """The key of a recorded answer: the same messages give the same digest whatever token
    the data block drew; another payload or another system prompt gives another."""
    payload = {"task": "book", "steps": ["BEGIN_RUN_DATA x"]}
    first, again = build_messages("trajectory", payload), build_messages("trajectory", payload)
    assert first[1]["content"] != again[1]["content"]  # fresh random tokens
    assert prompt_digest(first) == prompt_digest(again) == prompt_digest(
        build_messages("trajectory", payload, token="f" * 24))
    assert prompt_digest(first) != prompt_digest(build_messages("trajectory", {**payload, "task": "fly"}))
    assert prompt_digest(first) != prompt_digest(build_messages("trajectory", payload, check="spin_check"))
    assert len(prompt_digest(first)) == 64


def test_long_reasons_are_truncated(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.json({"score": 0.1, "confidence": 0.9, "reason": "why " * 100}))
    result = judge(config(fake_openai))
    assert len(result.reason) == MAX_REASON_CHARS


# -- skipping -------------------------------------------------------------------------------
def test_kill_switch_skips_without_any_request(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AGENT_EVAL_API_KEY", "sk-test")
    monkeypatch.setenv("LLM_KILL_SWITCH", "1")

    async def run() -> None:
        async with JudgeClient(JudgeConfig.from_settings(Settings.from_env())) as gateway:
            assert gateway.skip_reason == "kill_switch"
            with pytest.raises(JudgeSkipped) as info:
                await gateway.judge("step", {"task": "t"})
            assert info.value.reason == "kill_switch"
            with pytest.raises(JudgeSkipped):
                await gateway.judge_many([("step", {}), ("outcome", {})])

    asyncio.run(run())
    assert fake_openai.requests == []
    assert issubclass(JudgeSkipped, LiveguardError)


def test_no_key_skips_without_any_request(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote host with no key: skipped (a loopback server needs none: test_judges_local.py)."""
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", "https://judge.example.com/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "   ")  # blank counts as unset

    async def run() -> None:
        async with JudgeClient(JudgeConfig.from_settings(Settings.from_env())) as gateway:
            assert gateway.skip_reason == "no_api_key"
            with pytest.raises(JudgeSkipped, match="no_api_key"):
                await gateway.judge("outcome", {"outcome": "done"})

    asyncio.run(run())
    assert fake_openai.requests == []
    assert JudgeConfig(api_key=SecretStr("")).skip_reason() == "no_api_key"


def test_unknown_level_is_a_programming_error(fake_openai: FakeOpenAI) -> None:
    with pytest.raises(ValueError, match="unknown judge level"):
        judge(config(fake_openai), "bogus", {})  # type: ignore[arg-type]
    assert fake_openai.requests == []


# -- configuration --------------------------------------------------------------------------
def test_defaults() -> None:
    cfg = JudgeConfig.from_env({})
    assert cfg == JudgeConfig()
    assert (cfg.base_url, cfg.model, cfg.api_key) == ("https://api.deepseek.com", "deepseek-chat", None)
    assert (cfg.timeout, cfg.max_retries, cfg.concurrency, cfg.kill_switch) == (30.0, 3, 4, False)
    assert cfg.skip_reason() == "no_api_key"


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"AGENT_EVAL_API_KEY": "key-a", "DEEPSEEK_API_KEY": "key-d", "OPENAI_API_KEY": "key-o"}, "key-a"),
        ({"DEEPSEEK_API_KEY": "key-d", "OPENAI_API_KEY": "key-o"}, "key-d"),
        ({"AGENT_EVAL_BASE_URL": "https://api.openai.com/v1", "DEEPSEEK_API_KEY": "key-d",
          "OPENAI_API_KEY": "key-o"}, "key-o"),
        ({"AGENT_EVAL_API_KEY": "", "DEEPSEEK_API_KEY": " key-d\n", "OPENAI_API_KEY": "key-o"}, "key-d"),
    ],
)
def test_key_precedence(env: dict[str, str], key: str) -> None:
    cfg = JudgeConfig.from_env(env)
    assert cfg.api_key is not None
    assert cfg.api_key.get_secret_value() == key
    assert cfg.skip_reason() is None
    assert key not in repr(cfg)  # SecretStr hides the value


def test_env_overrides() -> None:
    cfg = JudgeConfig.from_env({
        "AGENT_EVAL_BASE_URL": "http://127.0.0.1:9/v1", "AGENT_EVAL_MODEL": "m", "AGENT_EVAL_TIMEOUT": "2.5",
        "AGENT_EVAL_MAX_RETRIES": "0", "AGENT_EVAL_CONCURRENCY": "8", "LLM_KILL_SWITCH": "true",
    })
    assert cfg == JudgeConfig(
        base_url="http://127.0.0.1:9/v1", model="m", timeout=2.5, max_retries=0, concurrency=8,
        kill_switch=True,
    )
    assert cfg.skip_reason() == "kill_switch"
    assert JudgeConfig.from_env({"LLM_KILL_SWITCH": "0"}).kill_switch is False


@pytest.mark.parametrize(
    ("env", "var"),
    [
        ({"AGENT_EVAL_TIMEOUT": "soon"}, "AGENT_EVAL_TIMEOUT"),
        ({"AGENT_EVAL_TIMEOUT": "0"}, "AGENT_EVAL_TIMEOUT"),
        ({"AGENT_EVAL_MAX_RETRIES": "-1"}, "AGENT_EVAL_MAX_RETRIES"),
        ({"AGENT_EVAL_CONCURRENCY": "0"}, "AGENT_EVAL_CONCURRENCY"),
        ({"AGENT_EVAL_BASE_URL": "api.deepseek.com"}, "AGENT_EVAL_BASE_URL"),
        ({"LLM_KILL_SWITCH": "maybe"}, "LLM_KILL_SWITCH"),
    ],
)
def test_bad_env_values_name_the_variable(env: dict[str, str], var: str) -> None:
    with pytest.raises(PolicyError, match=var):
        JudgeConfig.from_env(env)


# -- concurrency ----------------------------------------------------------------------------
def _by_index(request: RecordedRequest) -> Reply:
    """Score = item index / 10; later items answer sooner, so completions arrive out of order."""
    i = json.loads(data_of(request.content("user")))["i"]
    return Reply.json({"score": i / 10, "confidence": 1, "reason": f"item {i}"}, delay=0.02 * (6 - i))


def test_judge_many_bounds_concurrency_and_keeps_order(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = _by_index
    items: list[tuple[Level, Mapping[str, Any]]] = [("step", {"i": i}) for i in range(6)]

    async def run() -> list[JudgeResult]:
        async with JudgeClient(config(fake_openai, concurrency=2)) as gateway:
            return await gateway.judge_many(items)

    results = asyncio.run(run())
    assert [r.score for r in results] == [i / 10 for i in range(6)]
    assert [r.reason for r in results] == [f"item {i}" for i in range(6)]
    assert all(r.requests == 1 for r in results)  # counted per judgement, not per client
    assert len(fake_openai.requests) == 6
    assert fake_openai.max_in_flight == 2


def test_per_judgement_request_counts_under_concurrency(fake_openai: FakeOpenAI) -> None:
    """Retries of one judgement are not charged to another running at the same time."""
    fake_openai.enqueue(Reply.error(500, delay=0.05), Reply.json(GOOD, delay=0.05), Reply.json(GOOD))

    async def run() -> list[JudgeResult]:
        async with JudgeClient(config(fake_openai, concurrency=2)) as gateway:
            return await gateway.judge_many([("step", {"a": 1}), ("step", {"b": 2})])

    results = asyncio.run(run())
    assert sorted(r.requests for r in results) == [1, 2]
    assert sum(r.requests for r in results) == len(fake_openai.requests) == 3


# -- lifecycle ------------------------------------------------------------------------------
def test_one_gateway_per_event_loop(fake_openai: FakeOpenAI) -> None:
    """Misuse on purpose. The fixture's HTTP/1.0 server leaves no pooled socket to leak."""
    gateway = JudgeClient(config(fake_openai))
    asyncio.run(gateway.judge("step", {}))

    async def second_loop() -> None:
        with pytest.raises(RuntimeError, match="another event loop"):
            await gateway.judge("step", {})

    asyncio.run(second_loop())
    asyncio.run(gateway.aclose())
    assert asyncio.run(gateway.judge("step", {})).error is None  # reopened in a new loop
    asyncio.run(gateway.aclose())
    assert len(fake_openai.requests) == 2


def test_connections_are_reused_and_released() -> None:
    """Against a keep-alive server (like the real API): one pooled connection, closed by aclose()."""
    with FakeOpenAI(keep_alive=True) as fake:

        async def run() -> list[JudgeResult]:
            async with JudgeClient(config(fake)) as gateway:
                return [await gateway.judge("step", {"n": n}) for n in range(3)]

        results = asyncio.run(run())
        assert [r.requests for r in results] == [1, 1, 1]
        assert (len(fake.requests), fake.connections) == (3, 1)
        deadline = time.monotonic() + 1.0
        while fake.open_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fake.open_connections == 0


# -- privacy --------------------------------------------------------------------------------
def test_logs_carry_no_payload_reason_or_key(
    fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: ours, openai's, httpx2's
    fake_openai.enqueue(
        Reply.json({"score": 0.2, "confidence": 0.9, "reason": "leaks SECRET-123"}),
        Reply.error(500, body={"error": {"message": "SECRET-123 in an error body"}}),
        Reply.json(GOOD),
        Reply.text("not json SECRET-123"),
    )
    cfg = config(fake_openai, api_key=SecretStr("sk-KEY-456"))
    payload = {"task": "SECRET-123", "steps": [{"summary": "SECRET-123"}]}
    results = [judge(cfg, "step", payload) for _ in range(3)]
    assert results[0].reason == "leaks SECRET-123"  # the caller decides whether to show it
    assert [r.error for r in results] == [None, None, "malformed_json"]

    ours = [r for r in caplog.records if r.name == "liveguard.judges"]
    assert [r.levelno for r in ours] == [logging.INFO, logging.INFO, logging.WARNING]
    assert [(r.judge_level, r.judge_error, r.judge_attempts) for r in ours] == [  # type: ignore[attr-defined]
        ("step", None, 1), ("step", None, 2), ("step", "malformed_json", 1)
    ]
    assert "latency_ms=" in ours[0].getMessage()
    assert "model=deepseek-chat" in ours[0].getMessage()
    for record in caplog.records:
        text = record.getMessage() + repr(record.__dict__)
        assert "SECRET-123" not in text
        assert "sk-KEY-456" not in text


@settings(max_examples=300, deadline=None)
@given(content=st.text(max_size=400) | st.builds(lambda body: f"```json\n{body}\n```", st.text(max_size=200)))
def test_parse_answer_never_raises(content: str) -> None:
    """The judge's text is untrusted: any content is a score or an error code, fenced or not."""
    parsed = parse_answer(content)
    assert isinstance(parsed, str | tuple)
