"""Missing evidence as a typed value, built and parsed here only.

A :class:`MissingEvidence` names one piece of evidence a verdict lacks: its ``kind`` (one of
:data:`KINDS`) and a ``detail`` (a level and an error code, a reason, a graph name). It *is*
its own text, ``kind:detail`` (or ``kind`` alone), so JSON rows, JUnit, reports and
comparisons with those strings stay exactly what they were; code reads ``.kind`` and
``.detail`` instead of splitting strings. :meth:`MissingEvidence.parse` is the one place
text (a serialized row read back) becomes the typed value.

The judge levels' own reasons (``LevelScore.reason``: ``judge_error:<code>``,
``skipped:<why>``) are built and read by :func:`level_error` / :func:`level_skip` here too.

pydantic only; no liveguard import (the model, the verdict rule and the aggregate node use it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = [
    "GATE_ONLY",
    "JUDGES_SKIPPED",
    "JUDGE_ERROR",
    "JUDGE_GAPS",
    "JUDGE_VOID",
    "KINDS",
    "NO_ALLOWSET",
    "NO_STEPS",
    "RULE_FAMILY_OFF",
    "SEMANTIC_UNAVAILABLE",
    "MissingEvidence",
    "kinds_of",
    "level_error",
    "level_error_reason",
    "level_skip",
    "level_skip_reason",
]

JUDGE_ERROR: Final = "judge_error"
JUDGES_SKIPPED: Final = "judges_skipped"
JUDGE_VOID: Final = "judge_void"
NO_STEPS: Final = "no_steps"
NO_ALLOWSET: Final = "no_allowset"
RULE_FAMILY_OFF: Final = "rule_family_off"
SEMANTIC_UNAVAILABLE: Final = "semantic_unavailable"

KINDS: Final[Mapping[str, str]] = MappingProxyType({
    JUDGE_ERROR: "a planned judge level (or the panel) failed after its retries",
    JUDGES_SKIPPED: "the judges did not run (no key for the host, LLM_KILL_SWITCH=1)",
    JUDGE_VOID: "the run's text tried to instruct the evaluator, so its judge scores are void",
    NO_STEPS: "the run has no steps (none recorded or none recovered)",
    NO_ALLOWSET: "allow-sets are in use but none matches the run's graph",
    RULE_FAMILY_OFF: "an environment flag switched a rule family off",
    SEMANTIC_UNAVAILABLE: "the semantic layer was on but its embedder failed",
})
"""Each kind of missing evidence, with its meaning."""

JUDGE_GAPS: Final = frozenset({JUDGE_ERROR, JUDGES_SKIPPED, JUDGE_VOID})
"""Kinds that mean the run has no usable judge scores."""
GATE_ONLY: Final = frozenset({NO_ALLOWSET})
"""Kinds that hold the gate without failing the run."""


class MissingEvidence(str):
    """One piece of missing evidence: ``kind`` and ``detail``; its text is ``kind:detail``.

    Build it with ``MissingEvidence(kind, detail)`` (or a named constructor); an unknown
    kind raises ``ValueError``. Read it with ``.kind`` / ``.detail`` (and, for judge
    errors, ``.level`` / ``.error``). Being a ``str``, it serializes as the same text.
    """

    kind: str
    detail: str

    def __new__(cls, kind: str, detail: object = "") -> MissingEvidence:
        if kind not in KINDS:
            raise ValueError(f"unknown kind of missing evidence {kind!r} (known: {', '.join(KINDS)})")
        text = "" if detail is None else str(detail)
        self = super().__new__(cls, f"{kind}:{text}" if text else kind)
        self.kind = kind
        self.detail = text
        return self

    def __repr__(self) -> str:
        return f"MissingEvidence({self.kind!r}, {self.detail!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (MissingEvidence, (self.kind, self.detail))

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return (self.kind, self.detail)

    # -- the one parser ------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> MissingEvidence:
        """``kind[:detail]`` text (a serialized row) back into the typed value."""
        if isinstance(text, MissingEvidence):
            return text
        kind, _, detail = str(text).partition(":")
        return cls(kind, detail)

    # -- named constructors --------------------------------------------------------------------
    @classmethod
    def judge_error(cls, level: str, error: object) -> MissingEvidence:
        """A judge level (``step``, ``anomaly``, ``spin_check``, ``panel``...) failed with ``error``."""
        return cls(JUDGE_ERROR, f"{level}:{error}")

    # -- reading -------------------------------------------------------------------------------
    @property
    def judge_gap(self) -> bool:
        """The run has no usable judge scores because of this."""
        return self.kind in JUDGE_GAPS

    @property
    def gate_only(self) -> bool:
        """This holds the gate but does not fail the run."""
        return self.kind in GATE_ONLY

    @property
    def level(self) -> str:
        """A judge error's level (``""`` for other kinds)."""
        return self.detail.partition(":")[0] if self.kind == JUDGE_ERROR else ""

    @property
    def error(self) -> str:
        """A judge error's code, a skip's reason: the last ``:`` part of the detail."""
        return self.detail.rpartition(":")[2]

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Validated from its text (or itself); serialized as its text."""
        return core_schema.no_info_plain_validator_function(
            cls._validate, serialization=core_schema.plain_serializer_function_ser_schema(str),
            json_schema_input_schema=core_schema.str_schema(),
        )

    @classmethod
    def _validate(cls, value: Any) -> MissingEvidence:
        if isinstance(value, MissingEvidence):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        raise ValueError(f"missing evidence must be text, got {type(value).__name__}")


def kinds_of(missing: Iterable[str]) -> set[str]:
    """The kinds among ``missing`` (typed values or their text)."""
    return {MissingEvidence.parse(m).kind for m in missing}


# -- the judge levels' own reasons (LevelScore.reason) -------------------------------------------
_LEVEL_ERROR = "judge_error:"
_LEVEL_SKIP = "skipped:"


def level_error_reason(error: object) -> str:
    """A level's reason when its judge failed with ``error``."""
    return f"{_LEVEL_ERROR}{error}"


def level_skip_reason(why: object) -> str:
    """A level's reason when its judge was not asked (``why``: ``no_api_key``, ``hard_violation``...)."""
    return f"{_LEVEL_SKIP}{why}"


def level_error(reason: str) -> str | None:
    """The error code when a level's reason says its judge failed, else None."""
    return reason[len(_LEVEL_ERROR):] if reason.startswith(_LEVEL_ERROR) else None


def level_skip(reason: str) -> str | None:
    """Why a level's judge was not asked, when its reason says it was skipped, else None."""
    return reason[len(_LEVEL_SKIP):] if reason.startswith(_LEVEL_SKIP) else None
