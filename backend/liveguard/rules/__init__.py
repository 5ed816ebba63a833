"""Rule families; the Monitor runs them in this order on every step."""

from liveguard.rules.base import Observation, Rule
from liveguard.rules.content import ContentCycle, RepeatedContent, Stall
from liveguard.rules.revisits import NodeRevisits
from liveguard.rules.tools import ToolNoProgress

__all__ = [
    "ContentCycle",
    "NodeRevisits",
    "Observation",
    "RepeatedContent",
    "Rule",
    "Stall",
    "ToolNoProgress",
]
