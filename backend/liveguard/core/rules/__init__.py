"""Rule families. ``build(policy, allow_set)`` assembles them; the Monitor runs them in that order."""

from liveguard.core.rules.base import Observation, Rule
from liveguard.core.rules.build import build
from liveguard.core.rules.content import ContentCycle, RepeatedContent, Stall
from liveguard.core.rules.defects import ToolEntropyCollapse
from liveguard.core.rules.limits import StepLimits
from liveguard.core.rules.revisits import NodeRevisits
from liveguard.core.rules.tools import ToolNoProgress
from liveguard.core.rules.transitions import TransitionRules

__all__ = [
    "ContentCycle",
    "NodeRevisits",
    "Observation",
    "RepeatedContent",
    "Rule",
    "Stall",
    "StepLimits",
    "ToolEntropyCollapse",
    "ToolNoProgress",
    "TransitionRules",
    "build",
]
