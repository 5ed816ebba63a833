"""liveguard: deterministic loop and no-progress detection for LLM agents.

The public surface is exactly ``__all__``: the step and verdict model, the policy, the
Monitor, reading runs, the eval graph, the auto-approve check, :func:`clear`, and the
errors a caller catches. Everything else is importable from its module (the release gate
from :mod:`liveguard.evaluate.gate`, the judge client from :mod:`liveguard.evaluate.judges`, digests from
:mod:`liveguard.core.fingerprint`, every error class from :mod:`liveguard.errors`).
Framework integrations (LangGraph, LangChain, LangSmith, openai) live in submodules that
import their framework lazily.

No function here shares its name with a submodule: ``import liveguard.core.fingerprint`` gives
the module.
"""

from liveguard.core._monitor import Monitor, check_trajectory
from liveguard.core.allowset import AllowSet, load_allowsets
from liveguard.core.model import Step, Trajectory, Verdict, Violation
from liveguard.core.policy import NodePolicy, Policy, ToolPolicy
from liveguard.errors import (
    AllowSetError,
    LiveguardError,
    LivenessError,
    NoProgressError,
    PolicyError,
    TrajectoryReadError,
)
from liveguard.evaluate.eval_graph import aevaluate_trajectory, build_eval_graph, evaluate_trajectory
from liveguard.evaluate.gate import verdict_clears_autoapprove
from liveguard.live.threads import clear
from liveguard.readers.jsonl import read_jsonl
from liveguard.settings import Settings

__version__ = "0.1.0"

for _error in (AllowSetError, LiveguardError, LivenessError, NoProgressError, PolicyError,
               TrajectoryReadError):
    _error.__module__ = "liveguard"  # tracebacks name the public path, as httpx does
del _error

__all__ = [
    "AllowSet",
    "AllowSetError",
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
    "check_trajectory",
    "clear",
    "evaluate_trajectory",
    "load_allowsets",
    "read_jsonl",
    "verdict_clears_autoapprove",
]
