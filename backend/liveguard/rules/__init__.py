"""Rule families. ``build(policy, allow_set)`` assembles them; the Monitor runs them in that order."""

from liveguard.rules.base import Observation, Rule
from liveguard.rules.build import build
from liveguard.rules.content import ContentCycle, RepeatedContent, Stall
from liveguard.rules.defects import ToolEntropyCollapse
from liveguard.rules.revisits import NodeRevisits
from liveguard.rules.tools import ToolNoProgress
from liveguard.rules.transitions import TransitionRules

__all__ = [
    "ContentCycle",
    "NodeRevisits",
    "Observation",
    "RepeatedContent",
    "Rule",
    "Stall",
    "ToolEntropyCollapse",
    "ToolNoProgress",
    "TransitionRules",
    "build",
]
