"""The data model: steps in, violations out.

``Step`` and ``Trajectory`` describe what a run did; ``Violation`` is what a rule
found. A ``Violation`` never holds step text: its ``detail`` carries counts, codes,
digest prefixes and step indices only, so verdicts and logs are safe to ship.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from liveguard.core.codes import LIVENESS_CODES
from liveguard.core.evidence import MissingEvidence

__all__ = [
    "LIVENESS_CODES",
    "Expected",
    "Level",
    "LevelScore",
    "Severity",
    "Step",
    "Trajectory",
    "Verdict",
    "Violation",
]

Severity = Literal["hard", "soft"]
Level = Literal["step", "trajectory", "outcome"]

# LIVENESS_CODES (re-exported): the structural hard codes, from the one registry (liveguard.core.codes).


class Step(BaseModel):
    """One step of a trajectory.

    * A **tool step** has ``tool`` set and carries ``args`` and ``result`` (or ``error``).
    * A **message step** carries ``summary`` (short text) and/or ``output`` (any payload,
      e.g. a LangChain message). An output that is a tool-call request (an AIMessage or
      OpenAI message dict with ``tool_calls``) is judged by the tool rules instead.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str = Field(min_length=1)
    summary: str | None = None
    output: Any = None
    tool: str | None = None
    args: Any = None
    result: Any = None
    error: Any = None


class Violation(BaseModel):
    """A rule firing. ``step`` is the index of the step that raised it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str
    severity: Severity
    step: int = Field(ge=0)
    node: str
    count: int = Field(ge=0)
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def hard(self) -> bool:
        return self.severity == "hard"


class Expected(BaseModel):
    """The verdict a golden run is expected to get."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    passed: bool
    hard_codes: list[str] = Field(default_factory=list)


class Trajectory(BaseModel):
    """A recorded run: one JSON object per line in the project's JSONL format."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1)
    graph: str | None = None
    steps: list[Step]
    status: str | None = None
    outcome: Any = None
    metadata: dict[str, Any] | None = None
    expected: Expected | None = None


class LevelScore(BaseModel):
    """One scored level with its provenance. ``reason`` is a code, never free text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    level: Level
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    reason: str
    source: str
    evidence: dict[str, Any] = Field(default_factory=dict)


class Verdict(BaseModel):
    """The eval graph's verdict on one run.

    ``passed`` is False whenever a hard violation fired, whatever the scores, and
    whenever evidence is missing: ``missing`` lists it as typed
    :class:`~liveguard.core.evidence.MissingEvidence` values (``.kind``, ``.detail``) whose text
    is ``kind:detail`` (``judge_error:step:http_5xx``, ``judges_skipped:no_api_key``,
    ``no_steps``, ``no_allowset:<graph>``, ``rule_family_off:loop_guard``; see
    :data:`liveguard.core.evidence.KINDS`); serialized, each is that text. ``structural_only``
    is True when the caller asked for a structural-only evaluation (no judges, by request).
    ``start_time`` (ISO text, when the run carries one) orders the gate's window.
    ``reason`` and every ``evidence`` value are codes, counts, digests and step indices.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    graph: str | None = None
    passed: bool
    composite: float | None = Field(default=None, ge=0.0, le=1.0)
    violations: list[Violation] = Field(default_factory=list)
    levels: dict[str, LevelScore] = Field(default_factory=dict)
    judged: bool = False
    judges_skipped: str | None = None
    judge_error: bool = False
    structural_only: bool = False
    missing: list[MissingEvidence] = Field(default_factory=list)
    start_time: str | None = None
    prompt_version: str
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    reason: str
    source: str = "eval_graph"
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def hard_codes(self) -> list[str]:
        return sorted({v.code for v in self.violations if v.severity == "hard"})

    @property
    def liveness_codes(self) -> list[str]:
        return [c for c in self.hard_codes if c in LIVENESS_CODES]
