"""liveguard: deterministic loop and no-progress detection for LLM agents.

The public surface is exactly ``__all__``; everything else is private.
Framework integrations (LangGraph, LangChain, LangSmith, openai) live in
submodules that import their framework lazily.
"""

from liveguard.allowset import AllowSet, AllowSetError, load_allowset, load_allowsets
from liveguard.errors import (
    FingerprintError,
    LiveguardError,
    LivenessError,
    NoProgressError,
    PolicyError,
    TrajectoryReadError,
)
from liveguard.eval_graph import aevaluate_trajectory, build_eval_graph, evaluate_trajectory
from liveguard.fingerprint import Fingerprinter, canonical_bytes, fingerprint
from liveguard.gate import CELL_PASS, GateDecision, decide, verdict_clears_autoapprove
from liveguard.judges import PROMPT_VERSION, Gateway, JudgeClient, JudgeConfig, JudgeSkipped
from liveguard.model import Expected, LevelScore, Step, Trajectory, Verdict, Violation
from liveguard.monitor import Monitor, check_trajectory
from liveguard.policy import NodePolicy, Policy, ToolPolicy
from liveguard.readers.jsonl import read_jsonl
from liveguard.settings import Settings
from liveguard.threads import clear

__version__ = "0.1.0"


def _warn_stale() -> None:
    from liveguard._compiled import stale_modules

    stale = stale_modules()
    if stale:
        import warnings

        warnings.warn(f"liveguard: compiled module(s) older than their source: {', '.join(stale)}; "
                      "run `make install` to rebuild (or delete the .so files)", RuntimeWarning,
                      stacklevel=2)


_warn_stale()

__all__ = [
    "CELL_PASS",
    "PROMPT_VERSION",
    "AllowSet",
    "AllowSetError",
    "Expected",
    "FingerprintError",
    "Fingerprinter",
    "GateDecision",
    "Gateway",
    "JudgeClient",
    "JudgeConfig",
    "JudgeSkipped",
    "LevelScore",
    "LiveguardError",
    "LivenessError",
    "Monitor",
    "NoProgressError",
    "NodePolicy",
    "Policy",
    "PolicyError",
    "Settings",
    "Step",
    "ToolPolicy",
    "Trajectory",
    "TrajectoryReadError",
    "Verdict",
    "Violation",
    "aevaluate_trajectory",
    "build_eval_graph",
    "canonical_bytes",
    "check_trajectory",
    "clear",
    "decide",
    "evaluate_trajectory",
    "fingerprint",
    "load_allowset",
    "load_allowsets",
    "read_jsonl",
    "verdict_clears_autoapprove",
]
