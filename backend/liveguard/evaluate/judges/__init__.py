"""LLM judges through one OpenAI-compatible client (DeepSeek by default).

:class:`JudgeClient` is the only place liveguard talks to an LLM. It asks one question per
judgement, at one of three levels (``step``, ``trajectory``, ``outcome``), and returns a
:class:`JudgeResult`: a score in [0, 1], or ``score=None`` with an error code. Judging
never raises for a bad answer or a failed request:

====================  ==========================================================
error code            meaning
====================  ==========================================================
``malformed_json``    the answer's content is not a JSON document (or is empty)
``schema``            JSON, but not an object with ``score``, ``confidence`` (numbers)
                      and ``reason`` (text)
``out_of_range``      ``score`` or ``confidence`` outside [0, 1] (or not finite)
``http_429``          rate limited, still after the bounded retries
``http_5xx``          server error, still after the bounded retries
``http_4xx``          any other 4xx (bad key, bad model, bad request); not retried
``timeout``           the last attempt timed out, or the judgement's deadline passed
``connection``        the server could not be reached
====================  ==========================================================

Retries are the openai SDK's: timeouts, connection errors, 408, 409, 429 and 5xx are
retried ``max_retries`` times with exponential backoff (0.5 s doubling, at most 8 s,
minus up to 25 % jitter) or the server's ``Retry-After``. The SDK honours a
``Retry-After`` of up to two minutes, so each judgement also has a deadline of
``(max_retries + 1) * timeout`` plus the SDK's own backoff schedule; past it the result
carries the last HTTP error seen, else ``timeout``. ``timeout`` bounds each phase of an
attempt (connect, send, each read), not the attempt as a whole.

With ``LLM_KILL_SWITCH=1`` or no API key, :meth:`JudgeClient.judge` raises
:class:`JudgeSkipped` and makes no request. Logs (logger ``liveguard.judges``) carry the
level, error code, attempts, latency and model, never the payload or the judge's reason.

The ``openai`` package is imported on first use, never when this module is imported.

One module per idea: ``_prompts`` (the system prompts, the data block, :data:`PROMPT_VERSION`),
``_config`` (:class:`JudgeConfig`, which key goes to which host), ``_parse`` (the answer's
strict parsing, bare or in one ```json fence, :class:`JudgeResult`), ``_client``
(:class:`JudgeClient`: structured outputs where the endpoint takes them). Import the names
from ``liveguard.evaluate.judges``.
"""

from liveguard.core._endpoint import JudgeConfig, key_for
from liveguard.errors import JudgeSkipped
from liveguard.evaluate.judges._client import JudgeClient
from liveguard.evaluate.judges._parse import (
    ANSWER_SCHEMA,
    MAX_REASON_CHARS,
    ErrorCode,
    JudgeResult,
    parse_answer,
)
from liveguard.evaluate.judges._prompts import (
    CHECK_PROMPTS,
    MAX_PAYLOAD_CHARS,
    PROMPT_VERSION,
    SPIN_CHECK_PROMPT,
    SYSTEM_PROMPTS,
    Check,
    Level,
    build_messages,
    data_block,
    payload_text,
    prompt_digest,
)

__all__ = [
    "ANSWER_SCHEMA",
    "CHECK_PROMPTS",
    "MAX_PAYLOAD_CHARS",
    "MAX_REASON_CHARS",
    "PROMPT_VERSION",
    "SPIN_CHECK_PROMPT",
    "SYSTEM_PROMPTS",
    "Check",
    "ErrorCode",
    "JudgeClient",
    "JudgeConfig",
    "JudgeResult",
    "JudgeSkipped",
    "Level",
    "build_messages",
    "data_block",
    "key_for",
    "parse_answer",
    "payload_text",
    "prompt_digest",
]
