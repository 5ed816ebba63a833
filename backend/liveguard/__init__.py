"""liveguard: deterministic loop and no-progress detection for LLM agents.

The public surface is exactly ``__all__``; everything else is private.
Framework integrations (LangGraph, LangChain, LangSmith, openai) live in
submodules that import their framework lazily.
"""

from liveguard.errors import (
    FingerprintError,
    LiveguardError,
    LivenessError,
    NoProgressError,
    PolicyError,
    TrajectoryReadError,
)
from liveguard.fingerprint import Fingerprinter, canonical_bytes, fingerprint
from liveguard.model import Expected, Step, Trajectory, Violation
from liveguard.monitor import Monitor, check_trajectory
from liveguard.policy import NodePolicy, Policy, ToolPolicy
from liveguard.readers.jsonl import read_jsonl

__version__ = "0.1.0"

__all__ = [
    "Expected",
    "FingerprintError",
    "Fingerprinter",
    "LiveguardError",
    "LivenessError",
    "Monitor",
    "NoProgressError",
    "NodePolicy",
    "Policy",
    "PolicyError",
    "Step",
    "ToolPolicy",
    "Trajectory",
    "TrajectoryReadError",
    "Violation",
    "canonical_bytes",
    "check_trajectory",
    "fingerprint",
    "read_jsonl",
]
