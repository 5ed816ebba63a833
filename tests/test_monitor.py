"""The Monitor's rules, each both ways: must fire, must stay silent."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, ToolMessage

from liveguard import Monitor, NoProgressError, Policy, Step, ToolPolicy, check_trajectory
from liveguard.settings import Settings
from liveguard.testing import (
    agent_turn,
    cycle,
    messages,
    ping_pong,
    poll,
    repeated_tool_call,
    tool_result_step,
)


def codes(steps: list[Step], policy: Policy | None = None) -> list[tuple[str, int]]:
    return [(v.code, v.step) for v in check_trajectory(steps, policy or Policy.workflow())]


# -- must fire ------------------------------------------------------------------------------
def test_three_identical_failing_calls_fire_despite_format_noise() -> None:
    """Args key order, JSON whitespace and call ids differ between the repeats."""
    steps = repeated_tool_call(times=3)
    assert len({s.args for s in steps}) == 3  # really different text
    assert codes(steps) == [("tool_no_progress", 2)]


def test_identical_failing_calls_from_langchain_messages() -> None:
    steps = [
        Step(node="tools", tool="search", args={"q": "x"},
             result=ToolMessage('{"error": "rate limited"}', tool_call_id=f"call_{i}"))
        for i in range(3)
    ]
    assert codes(steps) == [("tool_no_progress", 2)]


def test_non_retryable_failure_fires_at_two() -> None:
    steps = repeated_tool_call(result='{"error": "bad column", "retryable": false}', times=2)
    [violation] = check_trajectory(steps, Policy.workflow())
    assert (violation.code, violation.step, violation.count) == ("tool_no_progress", 1, 2)
    assert violation.detail["nonretryable"] is True


def test_ping_pong_fires_at_the_fourth_step() -> None:
    hits = check_trajectory(ping_pong(rounds=2), Policy.workflow())
    assert [(v.code, v.step) for v in hits] == [("content_cycle", 3)]
    assert hits[0].detail["period"] == 2
    assert hits[0].detail["nodes"] == ["coder", "reviewer"]


def test_three_agent_cycle_repeated_fires() -> None:
    steps = cycle(["planner", "critic", "editor"], rounds=2)
    hits = check_trajectory(steps, Policy.workflow())
    assert [(v.code, v.step, v.detail["period"]) for v in hits] == [("content_cycle", 5, 3)]


def test_period_four_cycle_fires_once_with_its_own_period() -> None:
    steps = cycle(["a", "b", "c", "d"], rounds=2)
    hits = check_trajectory(steps, Policy.workflow(max_revisits=5))
    assert [(v.code, v.step, v.detail["period"]) for v in hits] == [("content_cycle", 7, 4)]


def test_fourth_visit_in_window_fires() -> None:
    steps = messages(*[("research", f"finding {i}") for i in range(4)])
    assert codes(steps) == [("node_revisit_cycle", 3)]


def test_two_consecutive_identical_steps_stall() -> None:
    assert codes(messages(("check", "no reply"), ("check", "no reply"))) == [("no_progress_stall", 1)]


def test_repeated_content_three_times_in_ten() -> None:
    """With the same things coming back between the repeats (issue 17: with new ones, the
    look-alike below, it is not a repeat)."""
    steps = messages(("b", "x1"), ("a", "same"), ("c", "x1"), ("a", "same"), ("b", "x1"),
                     ("a", "same"))
    assert codes(steps, Policy.workflow(max_revisits=5)) == [("repeated_content", 5)]


def test_the_same_message_with_new_observations_between_is_not_repeated_content() -> None:
    """Issue 17: "Next speaker WebSurfer" with a new page from WebSurfer each time is progress
    (main fired repeated_content at step 5)."""
    steps = messages(("a", "same"), ("b", "x1"), ("a", "same"), ("c", "x2"), ("d", "x3"),
                     ("a", "same"))
    assert codes(steps, Policy.workflow(max_revisits=5)) == []


def test_tool_block_cycle_needs_tool_repetitions() -> None:
    """A block holding tool steps needs three repetitions, like the tool rule."""
    steps = poll(["running"] * 3)
    found = codes(steps, Policy.tool_agent())
    assert ("content_cycle", 5) in found
    assert ("tool_no_progress", 5) in found
    assert not [c for c in codes(steps[:4], Policy.tool_agent()) if c[0] == "content_cycle"]


def test_model_tool_request_repeats_are_not_message_stalls() -> None:
    request = AIMessage("", tool_calls=[{"name": "poll", "args": {}, "id": "c1"}])
    steps = [Step(node="model", output=request), Step(node="model", output=request)]
    assert codes(steps, Policy.tool_agent()) == []


def test_noprogress_error_carries_the_violation() -> None:
    [violation] = check_trajectory(repeated_tool_call(times=3))
    err = NoProgressError(violation)
    assert err.violation is violation
    assert "tool_no_progress" in str(err)


# -- must stay silent -----------------------------------------------------------------------
def test_poll_that_completes_is_silent() -> None:
    assert codes(poll(["running", "running", "done"]), Policy.tool_agent()) == []


def test_retry_with_changing_error_is_silent() -> None:
    steps = [tool_result_step("fetch", {"url": "u"}, error=f"timeout after {s}s") for s in (5, 10, 20)]
    assert codes(steps) == []


def test_revisits_with_new_content_within_limits_are_silent() -> None:
    steps = messages(("draft", "v1"), ("review", "fix a"), ("draft", "v2"), ("review", "fix b"),
                     ("draft", "v3"), ("review", "ok"))
    assert codes(steps) == []


def test_repeats_farther_apart_than_the_window_are_silent() -> None:
    """A long run where the same call recurs only every seventh tool step, and nodes rotate."""
    steps: list[Step] = []
    for i in range(300):
        if i % 7 == 0:
            steps.append(tool_result_step("lookup", {"k": "same"}, "same"))
        else:
            steps.append(tool_result_step("lookup", {"k": i}, f"row {i}"))
    assert codes(steps, Policy.tool_agent(agent_nodes=["tools"])) == []
    rotating = [Step(node=f"n{i % 9}", summary=f"s{i}") for i in range(500)]
    assert codes(rotating) == []


def test_tool_agent_preset_allows_forty_different_calls() -> None:
    steps: list[Step] = []
    for turn in range(40):
        steps += agent_turn("run_sql", {"query": f"SELECT {turn}"}, f"[[{turn}]]", turn=turn)
    assert codes(steps, Policy.tool_agent()) == []
    assert ("node_revisit_cycle", 6) in codes(steps, Policy.workflow())


def test_contentless_steps_only_count_as_visits() -> None:
    steps = [Step(node="a"), Step(node="a")]
    assert codes(steps) == []


# -- overrides and environment --------------------------------------------------------------
def test_per_tool_override_for_pollers() -> None:
    steps: list[Step] = []
    for i in range(4):
        steps.append(tool_result_step("wait_job", {"id": 1}, json.dumps({"status": "running"})))
        steps.append(Step(node="model", summary=f"waiting {i}"))
    policy = Policy.tool_agent(tools={"wait_job": ToolPolicy(no_progress=5)})
    assert codes(steps, policy) == []
    assert ("tool_no_progress", 4) in codes(steps, Policy.tool_agent())
    exempt = Policy.tool_agent(tools={"wait_job": ToolPolicy(exempt=True)})
    assert codes(steps, exempt) == []


def test_env_max_revisits_and_kill_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = messages(*[("research", f"finding {i}") for i in range(4)])
    def env_policy() -> Policy:  # the edge: the environment, read through Settings
        return Settings.from_env().policy(Policy())

    monkeypatch.setenv("AGENT_EVAL_MAX_REVISITS", "5")
    assert check_trajectory(steps, env_policy()) == []
    monkeypatch.setenv("AGENT_EVAL_MAX_REVISITS", "2")
    assert [v.step for v in check_trajectory(steps, env_policy())] == [2]
    assert [v.step for v in check_trajectory(steps)] == [3]  # the Monitor never reads the environment
    monkeypatch.setenv("AGENT_EVAL_LOOP_GUARD", "0")
    assert check_trajectory(repeated_tool_call(times=5), env_policy()) == []


# -- the incremental contract ---------------------------------------------------------------
def test_observe_returns_each_violation_at_its_step() -> None:
    monitor = Monitor(Policy.workflow())
    per_step = [monitor.observe(s) for s in ping_pong(rounds=2)]
    assert [len(hits) for hits in per_step] == [0, 0, 0, 1]
    assert monitor.finish() == []
    assert monitor.steps_seen == 4


def test_observe_accepts_plain_dicts() -> None:
    monitor = Monitor(Policy.workflow())
    monitor.observe({"node": "a", "summary": "x"})
    [hit] = monitor.observe({"node": "a", "summary": "x"})
    assert hit.code == "no_progress_stall"


def test_evidence_never_carries_step_text() -> None:
    secret = "ssn 078-05-1120 card 4111111111111111"
    steps = [Step(node="n", summary=secret, output={"pw": secret})] * 4
    steps += repeated_tool_call(args={"q": secret}, result=secret, times=3)
    dumped = json.dumps([v.model_dump() for v in check_trajectory(steps)])
    assert "078-05" not in dumped
    assert "4111" not in dumped


def _random_steps(draw_ints: list[int]) -> list[Step]:
    steps = []
    for i, n in enumerate(draw_ints):
        if n % 3 == 0:
            steps.append(tool_result_step(f"t{n % 2}", {"k": n % 5}, f"r{n % 4}"))
        else:
            steps.append(Step(node=f"n{n % 4}", summary=f"s{n % 6}" if i % 5 else None))
    return steps


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=60), max_size=80))
def test_detection_is_deterministic_and_incremental(ints: list[int]) -> None:
    """Same steps, same violations; observe-one-by-one equals check_trajectory."""
    steps = _random_steps(ints)
    first = check_trajectory(steps, Policy.workflow())
    assert first == check_trajectory(steps, Policy.workflow())
    monitor = Monitor(Policy.workflow())
    incremental: list[Any] = []
    for step in steps:
        incremental += monitor.observe(step)
    assert incremental + monitor.finish() == first


def _state_size(monitor: Monitor) -> int:
    """Items in the rules' saved state (every window and table a rule keeps), counted through
    ``snapshot``."""

    def count(value: Any) -> int:
        return len(value) + sum(count(v) for v in value) if isinstance(value, list) else 0

    ids: dict[str, int] = {}
    return sum(count(rule.snapshot(lambda text: ids.setdefault(text, len(ids))))
               for rule in monitor._rules if hasattr(rule, "snapshot"))


def test_memory_stays_bounded_over_100k_steps() -> None:
    """State size and allocated memory after 100,000 steps match those after 5,000."""
    monitor = Monitor(Policy.tool_agent())

    def feed(start: int, stop: int) -> None:
        for i in range(start, stop):
            if i % 2:
                monitor.observe(Step(node="tools", tool="q", args={"i": i}, result=str(i)))
            else:
                monitor.observe(Step(node=f"node{i % 50}", summary=f"msg {i}"))

    feed(0, 5_000)
    tracemalloc.start()
    size_early = _state_size(monitor)
    before = tracemalloc.get_traced_memory()[0]
    feed(5_000, 100_000)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert monitor.steps_seen == 100_000
    assert size_early > 50  # the windows are full: the state is counted, not missed
    assert _state_size(monitor) <= size_early + 8
    assert after - before < 64 * 1024
