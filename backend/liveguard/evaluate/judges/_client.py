"""The one OpenAI-compatible client: one request per judgement, errors as codes, bounded retries."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from liveguard.core._endpoint import JudgeConfig
from liveguard.errors import JudgeSkipped
from liveguard.evaluate.judges._parse import ANSWER_SCHEMA, ErrorCode, JudgeResult, parse_answer
from liveguard.evaluate.judges._prompts import Check, Level, build_messages, check_level

if TYPE_CHECKING:
    import httpx2
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

# The SDK's backoff schedule (openai/_constants.py), used only to size the deadline.
_SDK_FIRST_BACKOFF = 0.5
_SDK_MAX_BACKOFF = 8.0

_log = logging.getLogger("liveguard.judges")

_STRUCTURED: Any = {"type": "json_schema",
                    "json_schema": {"name": "judgement", "strict": True, "schema": ANSWER_SCHEMA}}
"""Structured outputs: the answer's schema, for an endpoint that holds the model to it."""
_JSON_MODE: Any = {"type": "json_object"}
"""JSON mode, for an endpoint that refuses a schema (DeepSeek's API)."""


def _refuses_schema(exc: Exception) -> bool:
    """A 400 or 422 that names ``response_format`` or ``json_schema``: the endpoint does
    not take structured outputs (any other 4xx is the request's own fault)."""
    status = getattr(exc, "status_code", None)
    text = f"{getattr(exc, 'message', '')} {getattr(exc, 'body', '')}".lower()
    return status in (400, 422) and ("response_format" in text or "json_schema" in text)


class _Attempts:
    """HTTP requests sent for one judgement, and the status of the last response."""

    __slots__ = ("last_status", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.last_status: int | None = None


# The client is shared by concurrent judgements; each judgement runs in its own task (or
# sets this itself), so the httpx event hooks find that judgement's counter here.
_ATTEMPTS: contextvars.ContextVar[_Attempts | None] = contextvars.ContextVar(
    "liveguard_judge_attempts", default=None
)


async def _on_request(request: httpx2.Request) -> None:
    attempts = _ATTEMPTS.get()
    if attempts is not None:
        attempts.sent += 1
        attempts.last_status = None


async def _on_response(response: httpx2.Response) -> None:
    attempts = _ATTEMPTS.get()
    if attempts is not None:
        attempts.last_status = response.status_code


def _status_code(status: int) -> ErrorCode:
    if status == 429:
        return "http_429"
    return "http_5xx" if status >= 500 else "http_4xx"


class JudgeClient:
    """The one OpenAI-compatible client for LLM judges.

    The ``openai`` client (with its keep-alive connection pool) is built on the first
    judgement and bound to that event loop: ``await aclose()`` (or use ``async with``)
    before that loop ends. A gateway used from a second loop without being closed raises
    ``RuntimeError`` rather than reuse connections that belong to another loop.
    """

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._client: AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        retries = self.config.max_retries
        backoff = sum(min(_SDK_FIRST_BACKOFF * 2.0**n, _SDK_MAX_BACKOFF) for n in range(retries))
        self._deadline = (retries + 1) * self.config.timeout + backoff
        self.structured = True
        """Ask for structured outputs (``json_schema``); False once the endpoint refused them,
        then JSON mode (``json_object``) for the client's life."""

    @property
    def skip_reason(self) -> str | None:
        return self.config.skip_reason()

    @property
    def model_name(self) -> str:
        return self.config.model

    async def judge(self, level: Level, payload: Mapping[str, Any], *,
                    check: Check | None = None) -> JudgeResult:
        """Ask the judge about ``payload`` at ``level`` (with ``check``'s own system prompt
        when given: ``"spin_check"``).

        A failed request or an unusable answer is a result with an error code, never an
        exception; :class:`JudgeSkipped` is raised when the judges are off. Structured
        outputs are asked for first; an endpoint that refuses them (a 400 naming
        ``response_format``) is asked again at once in JSON mode, and from then on.
        """
        messages = build_messages(level, payload, check=check)
        reason = self.skip_reason
        if reason is not None:
            _log.debug("judge skipped level=%s reason=%s", level, reason)
            raise JudgeSkipped(reason)
        client, semaphore = self._bound()
        import openai

        attempts = _Attempts()
        token = _ATTEMPTS.set(attempts)
        error: ErrorCode | None = None
        parsed: tuple[float, float, str] | ErrorCode = "malformed_json"
        latency_ms = 0
        try:
            async with semaphore:
                started = time.perf_counter()
                try:
                    async with asyncio.timeout(self._deadline):
                        try:
                            completion = await client.chat.completions.create(
                                model=self.config.model, messages=messages, temperature=0,
                                response_format=_STRUCTURED if self.structured else _JSON_MODE)
                        except openai.APIStatusError as exc:
                            if not (self.structured and _refuses_schema(exc)):
                                raise
                            self.structured = False
                            completion = await client.chat.completions.create(
                                model=self.config.model, messages=messages, temperature=0,
                                response_format=_JSON_MODE)
                except TimeoutError:  # our deadline, typically a long Retry-After
                    last = attempts.last_status
                    error = _status_code(last) if last is not None and last >= 400 else "timeout"
                except openai.APITimeoutError:
                    error = "timeout"
                except openai.APIConnectionError:
                    error = "connection"
                except openai.APIStatusError as exc:
                    error = _status_code(exc.status_code)
                except openai.APIResponseValidationError:
                    error = "schema"
                else:
                    parsed = parse_answer(_content(completion))
                    if isinstance(parsed, str):
                        error = parsed
                latency_ms = round((time.perf_counter() - started) * 1000)
        finally:
            _ATTEMPTS.reset(token)

        _log.log(
            logging.INFO if error is None else logging.WARNING,
            "judge level=%s error=%s attempts=%d latency_ms=%d model=%s",
            level, error or "none", attempts.sent, latency_ms, self.config.model,
            extra={
                "judge_level": level,
                "judge_error": error,
                "judge_attempts": attempts.sent,
                "judge_latency_ms": latency_ms,
                "judge_model": self.config.model,
            },
        )
        if error is not None or isinstance(parsed, str):
            return JudgeResult(level=level, error=error, requests=attempts.sent, model=self.config.model)
        score, confidence, reason_text = parsed
        return JudgeResult(
            level=level,
            score=score,
            confidence=confidence,
            reason=reason_text,
            requests=attempts.sent,
            model=self.config.model,
        )

    async def judge_many(self, items: Sequence[tuple[Level, Mapping[str, Any]]]) -> list[JudgeResult]:
        """Judge every item, at most ``config.concurrency`` at a time; results in input order."""
        for level, _ in items:  # before any request starts
            check_level(level)
        reason = self.skip_reason
        if reason is not None:
            raise JudgeSkipped(reason)
        tasks = [asyncio.ensure_future(self.judge(level, payload)) for level, payload in items]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def aclose(self) -> None:
        """Close the HTTP client. A later judgement opens a new one.

        If the client's event loop has already ended, its connections ended with it and
        cannot be closed any more: the client is dropped (idle sockets are left to the GC).
        """
        client, loop = self._client, self._loop
        self._client = self._loop = self._semaphore = None
        if client is None:
            return
        if loop is not None and loop.is_closed():
            _log.debug("judge client dropped: its event loop has ended")
            return
        await client.close()

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _bound(self) -> tuple[AsyncOpenAI, asyncio.Semaphore]:
        """The client and semaphore of the running loop, built on first use."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._semaphore is not None:
            if self._loop is not loop:
                raise RuntimeError("JudgeClient bound to another event loop; await aclose() there first")
            return self._client, self._semaphore
        import openai

        self._client = openai.AsyncOpenAI(
            base_url=self.config.base_url,
            timeout=self.config.timeout,
            max_retries=self.config.max_retries,
            http_client=openai.DefaultAsyncHttpxClient(
                event_hooks={"request": [_on_request], "response": [_on_response]}
            ),
            **self.config.client_options(),  # the key, or none at all on the user's own host
        )
        self._semaphore = asyncio.Semaphore(self.config.concurrency)
        self._loop = loop
        return self._client, self._semaphore


def _content(completion: ChatCompletion) -> str | None:
    """The first choice's message content, tolerating an envelope that lacks it."""
    try:
        return completion.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
