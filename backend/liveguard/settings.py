"""Configuration read from the environment once, at the edge, into a value passed inward.

This is the only module that reads the environment (``tests/test_settings_edge.py`` walks
every module's AST to keep it so). The CLI, the integrations, the evaluator factories and
the public entry points (``evaluate_trajectory``, ``approval_gate``, ``open_saver``, ...)
call :meth:`Settings.from_env` once when no settings are given; the library below them
takes a :class:`Settings` (or the plain values it needs) as an argument.

It imports nothing of liveguard at run time but :mod:`liveguard.core.evidence` (a leaf), so any
module may import it.

Precedence, written once (:func:`resolve`): an explicit argument, then the run's
metadata, then the default.

Variables: ``AGENT_EVAL_*`` judge settings (read by ``JudgeConfig.from_settings``),
``LLM_KILL_SWITCH``, ``AGENT_EVAL_LOOP_GUARD`` (``0``: the loop-guard rule family off),
``AGENT_EVAL_TRAJECTORY_ANOMALY`` (``0``: the anomaly judge call off; the allow-set
rules always run), ``AGENT_EVAL_MAX_REVISITS``, ``AGENT_EVAL_AUTOAPPROVE`` (``1``), ``AGENT_EVAL_SEMANTIC``
(``1``: the semantic layer on), ``AGENT_EVAL_SEMANTIC_EMBEDDER`` (its embedder, with the
threshold tuned for it), ``AGENT_EVAL_EMBEDDING_MODEL`` (the remote embedder's model),
``AGENT_EVAL_CHECKPOINT_URL`` (the approval checkpointer). Test hook (not a setting):
``LIVEGUARD_PAUSE_DIR`` (:func:`pause_dir`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, TypeVar

from liveguard.core.evidence import RULE_FAMILY_OFF, MissingEvidence

if TYPE_CHECKING:
    from liveguard.core.policy import Policy

__all__ = ["ENV_NAMES", "PAUSE_ENV", "Settings", "pause_dir", "resolve"]

T = TypeVar("T")

ENV_NAMES: tuple[str, ...] = (
    "AGENT_EVAL_API_KEY", "AGENT_EVAL_BASE_URL", "AGENT_EVAL_MODEL", "AGENT_EVAL_TIMEOUT",
    "AGENT_EVAL_MAX_RETRIES", "AGENT_EVAL_CONCURRENCY", "AGENT_EVAL_ALLOW_HTTP_HOSTS",
    "DEEPSEEK_API_KEY", "OPENAI_API_KEY",
    "LLM_KILL_SWITCH", "AGENT_EVAL_LOOP_GUARD", "AGENT_EVAL_TRAJECTORY_ANOMALY",
    "AGENT_EVAL_MAX_REVISITS", "AGENT_EVAL_AUTOAPPROVE",
    "AGENT_EVAL_SEMANTIC", "AGENT_EVAL_SEMANTIC_EMBEDDER", "AGENT_EVAL_EMBEDDING_MODEL",
    "AGENT_EVAL_CHECKPOINT_URL",
    "LANGSMITH_ENDPOINT", "LANGSMITH_API_KEY",
)
"""Every variable liveguard reads (and only at the edge); docs/configuration.md has each one."""

PAUSE_ENV: Final = "LIVEGUARD_PAUSE_DIR"
"""The multi-process test hook's folder (:func:`liveguard.live.checkpoints.pause_point`)."""


def pause_dir() -> str | None:
    """``LIVEGUARD_PAUSE_DIR`` now (a test hook read on each call; None when unset or empty)."""
    return os.environ.get(PAUSE_ENV) or None


def resolve(explicit: T | None, metadata: T | None, default: T) -> T:
    """The precedence rule: explicit argument, then the run's metadata, then the default."""
    if explicit is not None:
        return explicit
    if metadata is not None:
        return metadata
    return default


@dataclass(frozen=True)
class Settings:
    """A snapshot of the environment's liveguard variables, validated on use."""

    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        source = os.environ if env is None else env
        return cls(MappingProxyType({k: source[k] for k in ENV_NAMES if k in source}))

    def _flag(self, name: str, default: str = "1") -> str:
        return self.env.get(name, default).strip()

    @property
    def loop_guard(self) -> bool:
        return self._flag("AGENT_EVAL_LOOP_GUARD") != "0"

    @property
    def trajectory_anomaly(self) -> bool:
        return self._flag("AGENT_EVAL_TRAJECTORY_ANOMALY") != "0"

    @property
    def autoapprove(self) -> bool:
        return self._flag("AGENT_EVAL_AUTOAPPROVE", "") == "1"

    @property
    def checkpoint_url(self) -> str | None:
        """``AGENT_EVAL_CHECKPOINT_URL`` (None when unset or blank)."""
        return self._flag("AGENT_EVAL_CHECKPOINT_URL", "") or None

    @property
    def embedding_model(self) -> str | None:
        """``AGENT_EVAL_EMBEDDING_MODEL`` (None when unset or blank: the embedder's default)."""
        return self._flag("AGENT_EVAL_EMBEDDING_MODEL", "") or None

    @property
    def semantic_embedder(self) -> str | None:
        """``AGENT_EVAL_SEMANTIC_EMBEDDER`` (None when unset or blank: the policy's embedder)."""
        return self._flag("AGENT_EVAL_SEMANTIC_EMBEDDER", "") or None

    def policy(self, base: Policy) -> Policy:
        """``base`` with the environment's overrides (raises PolicyError naming a bad variable).

        ``base`` is required (``Policy()`` for the defaults): this module imports no policy
        code at run time, so that every module, ``fingerprint`` included, may import it.
        ``AGENT_EVAL_SEMANTIC_EMBEDDER`` naming another embedder than ``base``'s sets it and
        puts ``semantic_threshold`` back to its default, which the semantic rule reads as the
        threshold tuned for that embedder (``liveguard.core.rules.semantic.threshold_of``; MiniLM's
        0.675 when it has none of its own).
        """
        policy = type(base).from_env(base, env=self.env)
        name = self.semantic_embedder
        if name is None or name == policy.semantic_embedder:
            return policy
        # The threshold goes back to its default, which the semantic rule reads as "the one
        # tuned for the embedder" (liveguard.core.rules.semantic.threshold_of).
        threshold = type(base).model_fields["semantic_threshold"].default
        return policy | {"semantic_embedder": name, "semantic_threshold": threshold}

    def rule_families_off(self) -> list[MissingEvidence]:
        """``rule_family_off:<family>`` evidence for the families the environment switched off."""
        off = []
        if not self.loop_guard:
            off.append(MissingEvidence(RULE_FAMILY_OFF, "loop_guard"))
        if not self.trajectory_anomaly:
            off.append(MissingEvidence(RULE_FAMILY_OFF, "trajectory_anomaly"))
        return off
