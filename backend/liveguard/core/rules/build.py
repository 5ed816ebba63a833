"""The one place that assembles rules: ``build(policy, allow_set) -> list[Rule]``.

The Monitor, the eval graph and the live guards all get their rules here, so live and
offline run the same rules in the same order:

1. the loop-guard family (off with ``policy.enabled=False``, i.e. ``AGENT_EVAL_LOOP_GUARD=0``);
2. the allow-set family, whenever an allow-set is given;
3. the defect family (soft findings), with the step-text rule
   ``evaluator_injection_suspected`` (it reads each step's text once, from the observation);
4. the semantic layer, with ``policy.semantic``: ``semantic_repeat`` (with the loop
   guard) and ``role_drift`` (when the allow-set declares ``roles``);
5. the step limits, when the policy sets ``run_steps`` or ``thread_steps``.

``allow_set`` is pure data; its limits and tool overrides must already be applied to
``policy`` (``AllowSet.apply``), as :class:`~liveguard.core._monitor.Monitor` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from liveguard.core.codes import LOOP_GUARD_CODES, TRANSITION_CODES
from liveguard.core.policy import Policy
from liveguard.core.rules.base import Rule
from liveguard.core.rules.content import ContentCycle, RepeatedContent, Stall
from liveguard.core.rules.defects import ToolEntropyCollapse
from liveguard.core.rules.injection import EvaluatorInjection
from liveguard.core.rules.limits import StepLimits
from liveguard.core.rules.revisits import NodeRevisits
from liveguard.core.rules.tools import ToolNoProgress
from liveguard.core.rules.transitions import TransitionRules

if TYPE_CHECKING:
    from liveguard.core.allowset import AllowSet

__all__ = ["LOOP_GUARD_CODES", "TRANSITION_CODES", "build", "build_step_rules"]



def build(policy: Policy, allow_set: AllowSet | None = None) -> list[Rule]:
    """Every rule for one run, in the order the Monitor runs them."""
    rules: list[Rule] = []
    if policy.enabled:
        rules += [
            NodeRevisits(policy),
            Stall(policy),
            RepeatedContent(policy),
            ToolNoProgress(policy),
            ContentCycle(policy),
        ]
    if allow_set is not None:
        rules.append(TransitionRules(allow_set, policy))
    rules.append(ToolEntropyCollapse())
    if policy.scan_text:  # on in every evaluation (eval graph); live guards opt in
        rules.append(EvaluatorInjection())
    if policy.semantic:  # layer 2: numpy and the model load only when the layer is on
        from liveguard.core.rules.semantic import semantic_rules

        rules += semantic_rules(policy, allow_set)
    if policy.run_steps is not None or policy.thread_steps is not None:
        rules.append(StepLimits(policy))
    return rules


def build_step_rules(policy: Policy | None = None) -> list[EvaluatorInjection]:
    """The step-text rules alone (soft), in order; :func:`build` includes them already, so
    the Monitor runs them. For callers that check single steps (``rule.check(index, step)``)."""
    return [EvaluatorInjection()]
