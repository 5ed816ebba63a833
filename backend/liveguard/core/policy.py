"""Thresholds as small, frozen values.

A :class:`Policy` holds every threshold the rules read, with per-node and per-tool
overrides. It is a frozen pydantic model, so ``repr`` and ``==`` work and a policy
loaded from YAML or the environment can be compared and printed.

Defaults (see the README for their sources):

============================  =======  ======================================================
setting                       default  meaning
============================  =======  ======================================================
``window``                    24       steps the revisit rule looks back over
``max_revisits``              3        a node visited more than this in the window fires
``stall``                     2        consecutive identical node + content message steps
                                       (per node: ``NodePolicy(stall=N)``, a poller's
                                       ceiling; see :meth:`Policy.repeat_ceilings`)
``repeat``                    3        same node + content this often ...
``repeat_window``             10       ... within the last N message steps
``cycle_periods``             (2..4)   block lengths of content cycles
``cycle_repeats``             2        a message-only block repeated this often fires
``tool_repeats``              3        same (tool, args, result) this often ...
``tool_window``               6        ... within the last N tool steps
``tool_repeats_nonretryable`` 2        ... when the result says ``"retryable": false``
``max_visits``                4        total visits above this: excessive_loop (allow-sets)
``run_steps``                 None     steps above this in one invocation: step_limit
``thread_steps``              None     steps above this in one thread (all invocations)
``scan_text``                 False    the step-text rule ``evaluator_injection_suspected``
                                       (the eval graph always turns it on; live guards opt in)
``semantic``                  False    the semantic layer (``semantic_repeat``, ``role_drift``)
``semantic_embedder``         local    ``local`` (all-MiniLM-L6-v2) or ``openai``
``semantic_threshold``        0.675    cosine at or above which a message may repeat another
``semantic_window``           6        ... among the node's last N message steps
``semantic_hard_matches``     2        the Nth reworded repeat in the window is hard
``role_drift_drop``           0.15     role_drift: similarity to the own role fell this much
``role_drift_margin``         0.05     role_drift: nearer another node's role by this much
``spin_check_every``          0        spin check every K message steps (0: only on soft finds)
``spin_hard_repeats``         2        a suspicion the spin-check judge calls a spin is hard
                                       from the Nth repeat: its count in its node's window,
                                       or the run's Nth judged spin (1: every judged spin)
``volatile``                  all      volatile-text patterns masked in content digests
                                       (times, durations, ids in text; docs/detection.md)
============================  =======  ======================================================

Environment: ``AGENT_EVAL_MAX_REVISITS`` overrides ``max_revisits``;
``AGENT_EVAL_LOOP_GUARD=0`` turns the loop-guard rules off; ``AGENT_EVAL_SEMANTIC=1`` turns
the semantic layer on (``0`` off; unset leaves the policy's own setting).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from liveguard.core.fingerprint import DEFAULT_IGNORE_KEYS, DEFAULT_VOLATILE, volatile_mask
from liveguard.errors import PolicyError

__all__ = ["NodePolicy", "Policy", "ToolPolicy"]

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class NodePolicy(BaseModel):
    """Per-node overrides. ``max_revisits=None`` inherits; ``exempt`` disables the revisit rule."""

    model_config = _FROZEN

    max_revisits: int | None = Field(default=None, ge=1)
    max_visits: int | None = Field(default=None, ge=1)
    stall: int | None = Field(default=None, ge=2)
    exempt: bool = False


class ToolPolicy(BaseModel):
    """Per-tool overrides, e.g. for tools that poll by design."""

    model_config = _FROZEN

    no_progress: int | None = Field(default=None, ge=2)
    window: int | None = Field(default=None, ge=1)
    nonretryable: int | None = Field(default=None, ge=1)
    exempt: bool = False


class Policy(BaseModel):
    """Every threshold the Monitor's rules read. Build with keywords; combine with ``|``."""

    model_config = _FROZEN

    enabled: bool = True
    window: int = Field(default=24, ge=1)
    max_revisits: int = Field(default=3, ge=1)
    stall: int = Field(default=2, ge=2)
    repeat: int = Field(default=3, ge=2)
    repeat_window: int = Field(default=10, ge=2)
    cycle_periods: tuple[int, ...] = (2, 3, 4)
    cycle_repeats: int = Field(default=2, ge=2)
    tool_repeats: int = Field(default=3, ge=2)
    tool_window: int = Field(default=6, ge=1)
    tool_repeats_nonretryable: int = Field(default=2, ge=1)
    max_visits: int = Field(default=4, ge=1)
    run_steps: int | None = Field(default=None, ge=1)
    """Run-level ceiling (reset per invocation, as ``run_limit`` in LangChain)."""
    thread_steps: int | None = Field(default=None, ge=1)
    """Thread-level ceiling (kept with the thread's liveness state, as ``thread_limit``)."""
    ignore_keys: frozenset[str] = DEFAULT_IGNORE_KEYS
    volatile: tuple[str, ...] = DEFAULT_VOLATILE
    """Volatile-text patterns masked in content digests: names of
    :data:`liveguard.core.fingerprint.VOLATILE_PATTERNS` or ``"re:<regex>"`` (``()``: none)."""
    nodes: Mapping[str, NodePolicy] = Field(default_factory=dict)
    tools: Mapping[str, ToolPolicy] = Field(default_factory=dict)
    scan_text: bool = False
    """The step-text rule (``evaluator_injection_suspected``, soft): it guards the LLM judges,
    so every evaluation turns it on; a live guard, which only acts on hard findings by
    default, scans only when asked (it costs several µs a step)."""
    # -- the semantic layer (off by default; README "Semantic layer") ---------------------
    semantic: bool = False
    semantic_embedder: str = Field(default="local", min_length=1)
    semantic_threshold: float = Field(default=0.675, gt=0.0, le=1.0)
    semantic_window: int = Field(default=6, ge=2)
    semantic_hard_matches: int = Field(default=2, ge=2)
    role_drift_drop: float = Field(default=0.15, gt=0.0, le=2.0)
    role_drift_margin: float = Field(default=0.05, ge=0.0, le=2.0)
    spin_check_every: int = Field(default=0, ge=0)
    spin_hard_repeats: int = Field(default=2, ge=1)
    """The judge confirms a state's return from this repeat on, never a first one alone: a
    suspicion it calls a spin is hard when the suspicion is at least the Nth in its node's
    window, or at least N judged spins lie in its stretch (this one included: the same
    state's return, in one node or across a cycle's nodes;
    :func:`liveguard.evaluate.spin.spin_confirmations`). Two occurrences and moving on is
    not a loop; a judge answer about one is a suspicion confirmed, not yet a stop."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.cycle_periods or any(p < 2 or p > 16 for p in self.cycle_periods):
            raise ValueError("cycle_periods must be block lengths between 2 and 16")
        if self.repeat > self.repeat_window:
            raise ValueError("repeat cannot exceed repeat_window")
        if self.tool_repeats > self.tool_window:
            raise ValueError("tool_repeats cannot exceed tool_window")
        if self.run_steps is not None and self.thread_steps is not None and (
            self.run_steps > self.thread_steps
        ):
            raise ValueError("run_steps cannot exceed thread_steps")
        if self.semantic_hard_matches > self.semantic_window:
            raise ValueError("semantic_hard_matches cannot exceed semantic_window")
        return self

    @field_validator("volatile")
    @classmethod
    def _volatile(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        volatile_mask(value)  # unknown names and bad regexes: ValueError, naming the pattern
        return value

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    # -- presets --------------------------------------------------------------------------
    @classmethod
    def workflow(cls, **overrides: Any) -> Policy:
        """The defaults: graphs whose nodes are the steps of a workflow."""
        return cls.build(**overrides)

    @classmethod
    def tool_agent(
        cls, *, agent_nodes: Iterable[str] = ("model", "tools", "agent"), **overrides: Any
    ) -> Policy:
        """Model ↔ tools agents (``create_agent``): no revisit counting on the agent's nodes.

        Forty different tool calls in a row are healthy; the content and tool rules
        still catch three identical failing ones.
        """
        base = cls.build(**overrides)
        nodes = dict(base.nodes)
        for name in agent_nodes:
            nodes[name] = nodes.get(name, NodePolicy()).model_copy(update={"exempt": True})
        return base.model_copy(update={"nodes": nodes})

    @classmethod
    def build(cls, **values: Any) -> Policy:
        """Validate keyword values; raise :class:`PolicyError` naming the bad field."""
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise PolicyError(_explain(exc, "Policy")) from None

    @classmethod
    def from_env(cls, base: Policy | None = None, *, env: Mapping[str, str]) -> Policy:
        """``base`` (default: the workflow preset) with the overrides in ``env`` applied.

        ``env`` is a mapping of variables (:attr:`liveguard.settings.Settings.env`); this
        never reads the process environment (:meth:`Settings.policy` is the usual caller).
        """
        policy = base or cls()
        updates: dict[str, Any] = {}
        raw = env.get("AGENT_EVAL_MAX_REVISITS")
        if raw is not None and raw.strip():
            try:
                value = int(raw)
            except ValueError:
                raise PolicyError(f"AGENT_EVAL_MAX_REVISITS={raw!r}: not an integer") from None
            if value < 1:
                raise PolicyError(f"AGENT_EVAL_MAX_REVISITS={raw!r}: must be at least 1")
            updates["max_revisits"] = value
        if env.get("AGENT_EVAL_LOOP_GUARD", "1").strip() == "0":
            updates["enabled"] = False
        semantic = env.get("AGENT_EVAL_SEMANTIC", "").strip()
        if semantic:
            if semantic not in {"0", "1"}:
                raise PolicyError(f"AGENT_EVAL_SEMANTIC={semantic!r}: expected 1 or 0")
            updates["semantic"] = semantic == "1"
        return policy.model_copy(update=updates) if updates else policy

    def __or__(self, other: Mapping[str, Any]) -> Policy:
        """``policy | {"tool_repeats": 4}``: a validated copy with these values replaced."""
        return Policy.build(**{**self.model_dump(), **other})

    # -- resolved thresholds (read once by the Monitor) ------------------------------------
    def revisit_limit(self, node: str) -> int | None:
        """Visits allowed in the window, or None when the node is exempt."""
        override = self.nodes.get(node)
        if override is None:
            return self.max_revisits
        if override.exempt:
            return None
        return override.max_revisits or self.max_revisits

    def stall_limit(self, node: str) -> int:
        override = self.nodes.get(node)
        return (override.stall if override else None) or self.stall

    def repeat_ceilings(self) -> dict[str, int]:
        """Nodes whose ``stall`` override lifts the repeat rules: node -> ceiling.

        A polling node given room with ``NodePolicy(stall=N)`` may show the same state up to
        N - 1 times, in a row or not: ``repeated_content`` fires at its N-th identical step
        (within ``max(repeat_window, N)`` message steps) and ``content_cycle`` at the N-th
        repetition of a block holding it. Only an override above ``repeat`` lifts them; every
        other node keeps the policy's own thresholds.
        """
        return {node: override.stall for node, override in self.nodes.items()
                if override.stall is not None and override.stall > self.repeat}

    def visit_limit(self, node: str) -> int:
        override = self.nodes.get(node)
        return (override.max_visits if override else None) or self.max_visits

    def tool_limits(self, tool: str) -> tuple[int, int, int] | None:
        """(repeats, window, repeats when non-retryable) for ``tool``; None when exempt."""
        override = self.tools.get(tool)
        if override is None:
            return self.tool_repeats, self.tool_window, self.tool_repeats_nonretryable
        if override.exempt:
            return None
        repeats = override.no_progress or self.tool_repeats
        window = max(override.window or self.tool_window, repeats)
        return repeats, window, override.nonretryable or self.tool_repeats_nonretryable


def _explain(exc: ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or where
        parts.append(f"{where}.{loc}: {err['msg']}")
    return "; ".join(parts)


PRESETS = {"workflow": Policy.workflow, "tool_agent": Policy.tool_agent}
"""The presets a run may name in ``metadata.policy`` (and the CLI's ``--policy``): name to factory."""
