"""Policies are small frozen values with validated overrides."""

from __future__ import annotations

import pytest

from liveguard import NodePolicy, Policy, PolicyError, ToolPolicy


def test_defaults_match_the_documented_table() -> None:
    p = Policy.workflow()
    assert (p.window, p.max_revisits, p.stall, p.repeat, p.repeat_window) == (24, 3, 2, 3, 10)
    assert (p.tool_repeats, p.tool_window, p.tool_repeats_nonretryable, p.max_visits) == (3, 6, 2, 4)
    assert p.cycle_periods == (2, 3, 4)
    assert (p.semantic_hard_matches, p.spin_check_every, p.spin_hard_repeats) == (2, 0, 2)


def test_policies_compare_and_print() -> None:
    assert Policy.workflow() == Policy()
    assert Policy.workflow(max_revisits=5) != Policy()
    assert "max_revisits=5" in repr(Policy.workflow(max_revisits=5))
    assert hash(Policy()) == hash(Policy.workflow())


def test_policies_are_frozen() -> None:
    with pytest.raises(ValueError, match="frozen"):
        Policy().window = 3  # type: ignore[misc]


def test_invalid_values_raise_policy_error_naming_the_field() -> None:
    with pytest.raises(PolicyError, match=r"Policy\.window"):
        Policy.build(window=0)
    with pytest.raises(PolicyError, match="tool_repeats cannot exceed tool_window"):
        Policy.build(tool_repeats=9)
    with pytest.raises(PolicyError, match=r"Policy\.nonsense"):
        Policy.build(nonsense=1)
    with pytest.raises(PolicyError, match=r"Policy\.spin_hard_repeats"):
        Policy.build(spin_hard_repeats=0)  # 0 would let no answer at all stop a run: not a setting


def test_or_returns_a_validated_copy() -> None:
    assert (Policy() | {"tool_repeats": 4}).tool_repeats == 4
    with pytest.raises(PolicyError):
        Policy() | {"stall": 1}


def test_per_node_and_per_tool_resolution() -> None:
    p = Policy.build(
        nodes={"check_reply": NodePolicy(max_revisits=10, max_visits=12), "x": NodePolicy(exempt=True)},
        tools={"poll": ToolPolicy(no_progress=8), "sleep": ToolPolicy(exempt=True)},
    )
    assert p.revisit_limit("check_reply") == 10
    assert p.revisit_limit("other") == 3
    assert p.revisit_limit("x") is None
    assert p.visit_limit("check_reply") == 12
    assert p.tool_limits("poll") == (8, 8, 2)
    assert p.tool_limits("run_sql") == (3, 6, 2)
    assert p.tool_limits("sleep") is None


def test_tool_agent_exempts_the_agent_nodes_only() -> None:
    p = Policy.tool_agent()
    assert p.revisit_limit("model") is None
    assert p.revisit_limit("tools") is None
    assert p.revisit_limit("reviewer") == 3
    assert p.tool_repeats == 3


def test_from_env() -> None:
    assert Policy.from_env(env={"AGENT_EVAL_MAX_REVISITS": "7"}).max_revisits == 7
    assert Policy.from_env(env={"AGENT_EVAL_LOOP_GUARD": "0"}).enabled is False
    assert Policy.from_env(env={}).enabled is True
    base = Policy.tool_agent()
    assert Policy.from_env(base, env={}) is base
    with pytest.raises(PolicyError, match="AGENT_EVAL_MAX_REVISITS='many'"):
        Policy.from_env(env={"AGENT_EVAL_MAX_REVISITS": "many"})
    with pytest.raises(PolicyError, match="at least 1"):
        Policy.from_env(env={"AGENT_EVAL_MAX_REVISITS": "0"})
