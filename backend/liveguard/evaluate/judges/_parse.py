"""The judge's answer: strict JSON parsing into a score, or an error code; the result value."""

from __future__ import annotations

import json
import re
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from liveguard.evaluate.judges._prompts import PROMPT_VERSION, Level

MAX_REASON_CHARS: Final[int] = 200

ErrorCode = Literal[
    "malformed_json", "out_of_range", "schema", "http_429", "http_5xx", "http_4xx", "timeout", "connection"
]


class JudgeResult(BaseModel):
    """One judgement. ``score`` is None when the judge's answer was unusable or the request failed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    level: Level
    score: float | None = Field(default=None, ge=0, le=1)
    confidence: float | None = Field(default=None, ge=0, le=1)
    reason: str = Field(default="", max_length=MAX_REASON_CHARS)
    error: ErrorCode | None = None
    requests: int = Field(default=0, ge=0)
    model: str
    prompt_version: str = PROMPT_VERSION

    @property
    def ok(self) -> bool:
        return self.error is None


class _Answer(BaseModel):
    """The judge's JSON. Strict: ``"0.5"`` and ``true`` are not numbers; extra keys are ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    score: float = Field(ge=0, le=1, allow_inf_nan=False)
    confidence: float = Field(ge=0, le=1, allow_inf_nan=False)
    reason: str


_RANGE_ERRORS = frozenset({"greater_than_equal", "less_than_equal", "finite_number"})
_FENCED = re.compile(r"\A```[A-Za-z]*[ \t]*\r?\n(.*?)\r?\n?```\Z", re.DOTALL)
"""One Markdown code block that is the whole answer (```json ... ```, ``` ... ```): a local
model's habit. Only the block's content is read; text around it is not an answer."""

ANSWER_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    },
    "required": ["score", "confidence", "reason"],
    "additionalProperties": False,
}
"""The answer as a JSON schema: what structured outputs (``response_format`` ``json_schema``)
ask the endpoint to hold the model to; :func:`parse_answer` checks it again whatever came."""


def unfence(content: str) -> str:
    """``content`` without one Markdown code fence around the whole of it (stripped)."""
    text = content.strip()
    found = _FENCED.match(text)
    return found.group(1).strip() if found is not None else text


def parse_answer(content: str | None) -> tuple[float, float, str] | ErrorCode:
    """``(score, confidence, reason)`` from the judge's message content, or an error code.
    The content is one JSON object, bare or as the one fenced code block of the answer
    (```json ... ```): the fence is read through, never text beside it."""
    if not content:
        return "malformed_json"
    try:
        data = json.loads(unfence(content))
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return "malformed_json"
    if not isinstance(data, dict):
        return "schema"
    try:
        answer = _Answer.model_validate(data)
    except ValidationError as exc:
        if {err["type"] for err in exc.errors()} <= _RANGE_ERRORS:
            return "out_of_range"
        return "schema"
    return answer.score, answer.confidence, answer.reason.strip()[:MAX_REASON_CHARS]

