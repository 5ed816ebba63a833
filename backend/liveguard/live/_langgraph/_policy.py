"""A live guard's default policy for a graph, read from the graph's nodes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from liveguard.core.policy import Policy
from liveguard.settings import Settings

__all__ = ["default_policy"]


_HOOK_NODE = re.compile(r"\.(?:before|after)_(?:agent|model)$")


_REACT_HOOKS: Final = frozenset({"pre_model_hook", "post_model_hook"})


_AGENT_CORES: Final = (frozenset({"model", "tools"}), frozenset({"agent", "tools"}))


def default_policy(graph: Any) -> Policy:
    """A live guard's default policy for ``graph`` (environment overrides applied).

    * A ``create_agent`` / ``create_react_agent`` graph (nodes ``model``/``agent`` and
      ``tools``, plus hook nodes: ``<middleware>.before_model`` style, ``pre_model_hook``,
      ``post_model_hook``): the tool-agent preset, its nodes exempt from revisit counting.
    * Any other graph: the workflow preset with **no revisit ceiling** (``max_revisits``
      above the window, so ``node_revisit_cycle`` cannot fire). A node name visited again is
      not a loop by itself (a ``Send`` fan-out, a ``@task`` per item, a chat graph's
      nodes every turn); the content, stall, cycle and tool rules judge what came back.
      An allow-set's limits, an explicit ``policy=`` or ``AGENT_EVAL_MAX_REVISITS`` set a
      ceiling.

    The eval graph's own loop_guard keeps the workflow defaults (3 / 4 / 24): it does not
    use this function.
    """
    nodes = getattr(graph, "nodes", None)
    names = {n for n in nodes if isinstance(n, str)} if isinstance(nodes, Mapping) else set()
    names = {n for n in names if not n.startswith("__")}
    hooks = {n for n in names if _HOOK_NODE.search(n) or n in _REACT_HOOKS}
    if frozenset(names - hooks) in _AGENT_CORES:
        agent_nodes = ("model", "tools", "agent", *sorted(hooks))
        return Settings.from_env().policy(Policy.tool_agent(agent_nodes=agent_nodes))
    base = Policy.workflow()
    return Settings.from_env().policy(base.model_copy(update={"max_revisits": base.window + 1}))
