"""The agent-eval StateGraph, end to end, with the real openai client against a local server."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from fake_openai import FakeOpenAI, Reply
from liveguard import Policy, Step, Trajectory, Violation, check_trajectory
from liveguard.core.allowset import AllowSet
from liveguard.core.model import Verdict
from liveguard.evaluate.eval_graph import (
    NODES,
    EvalState,
    aevaluate_trajectory,
    build_eval_graph,
    build_verdict,
    evaluate_trajectory,
    merge_meta,
)
from liveguard.evaluate.gate import verdict_clears_autoapprove
from liveguard.evaluate.judges import PROMPT_VERSION, JudgeClient, JudgeConfig
from liveguard.testing import messages, ping_pong, tool_result_step

GOOD = {"score": 0.9, "confidence": 0.8, "reason": "fine"}
ALLOW = AllowSet.parse({
    "graph": "flow",
    "transitions": {"__start__": ["plan"], "plan": ["draft"], "draft": ["review"],
                    "review": ["draft", "__end__"]},
})


def healthy(run_id: str = "ok") -> Trajectory:
    steps = messages(("plan", "plan v1"), ("draft", "draft v1"), ("review", "fix intro"),
                     ("draft", "draft v2"), ("review", "approved"))
    return Trajectory(run_id=run_id, graph="flow", steps=steps, outcome="draft v2 approved")


@pytest.fixture
def config(fake_openai: FakeOpenAI) -> JudgeConfig:
    return JudgeConfig(base_url=fake_openai.base_url, api_key="test-key", max_retries=1, timeout=5.0)


def evaluate(run: Trajectory, config: JudgeConfig, **kwargs: Any) -> Verdict:
    return evaluate_trajectory(run, gateway=JudgeClient(config), **kwargs)


# -- topology and state -----------------------------------------------------------------------
def test_topology_is_exactly_the_documented_chain() -> None:
    drawn = build_eval_graph(gateway=JudgeClient(JudgeConfig(api_key=None))).get_graph()
    edges = sorted((e.source, e.target) for e in drawn.edges)
    chain = ["__start__", *NODES, "__end__"]
    assert edges == sorted(itertools.pairwise(chain))


class _Tiny(TypedDict, total=False):
    graph_meta: dict[str, Any]


def test_undeclared_keys_returned_by_a_node_are_dropped() -> None:
    """Why guards never write ``violations`` directly: LangGraph drops undeclared keys silently."""
    builder: Any = StateGraph(_Tiny)
    builder.add_node("guard", lambda s: {"violations": ["lost"], "graph_meta": {"kept": 1}})
    builder.add_edge(START, "guard")
    builder.add_edge("guard", END)
    out = builder.compile().invoke({"graph_meta": {}})
    assert out == {"graph_meta": {"kept": 1}}


def test_telemetry_merges_key_wise() -> None:
    left = {"telemetry": {"loop_guard": {"violations": [1]}}, "x": 1}
    right = {"telemetry": {"detect_defects": {"violations": [2]}}}
    assert merge_meta(left, right) == {
        "telemetry": {"loop_guard": {"violations": [1]}, "detect_defects": {"violations": [2]}},
        "x": 1,
    }


def test_guards_telemetry_survives_in_the_graph(config: JudgeConfig) -> None:
    graph = build_eval_graph(gateway=JudgeClient(JudgeConfig(api_key=None)))

    async def run() -> dict[str, Any]:
        state: dict[str, Any] = await graph.ainvoke({
            "trajectory": healthy(), "allow_set": ALLOW, "policy": Policy.workflow(),
            "outcome": "x", "graph_meta": {"telemetry": {}}, "scores": {},
        })
        return state

    state = asyncio.run(run())
    assert set(state["graph_meta"]["telemetry"]) == {
        "plan_levels", "loop_guard", "trajectory_anomaly", "detect_defects"
    }
    assert state["violations"] == state["verdict"].violations


def test_aggregate_recollects_every_guard() -> None:
    def hit(code: str, severity: str = "hard") -> dict[str, Any]:
        return Violation(code=code, severity=severity, step=1, node="n", count=2).model_dump()  # type: ignore[arg-type]

    state: EvalState = {
        "trajectory": healthy(),
        "graph_meta": {"telemetry": {
            "loop_guard": {"violations": [hit("content_cycle")]},
            "trajectory_anomaly": {"violations": [hit("illegal_transition")]},
            "detect_defects": {"violations": [hit("tool_entropy_collapse", "soft")]},
        }},
        "scores": {},
    }
    verdict = build_verdict(state)
    assert sorted(v.code for v in verdict.violations) == [
        "content_cycle", "illegal_transition", "tool_entropy_collapse"
    ]
    assert verdict.passed is False
    assert verdict.evidence["counts"] == {"loop_guard": 1, "trajectory_anomaly": 1, "detect_defects": 1}


# -- judges, cost and the veto ----------------------------------------------------------------
def test_healthy_run_is_judged_at_three_levels(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    fake_openai.default_answer = GOOD
    verdict = evaluate(healthy(), config, allow_set=ALLOW, policy=Policy.workflow())
    assert len(fake_openai.requests) == 3
    assert verdict.passed
    assert verdict.judged
    assert verdict.reason == "passed"
    assert verdict.composite == pytest.approx(0.9)
    assert verdict.prompt_version == PROMPT_VERSION
    assert set(verdict.levels) == {"step", "trajectory", "outcome"}
    for level in verdict.levels.values():
        assert (level.reason, level.source) == ("judged", "judge:deepseek-chat")
        assert level.evidence["requests"] == 1
    assert verdict_clears_autoapprove(verdict, enabled=True)


def test_structurally_broken_run_costs_zero_tokens(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    run = Trajectory(run_id="loop", steps=ping_pong(rounds=3), outcome="done")
    verdict = evaluate(run, config)
    assert fake_openai.requests == []
    assert not verdict.passed
    assert verdict.reason == "hard_violation"
    assert verdict.judges_skipped == "hard_violation"
    assert {lvl.reason for lvl in verdict.levels.values()} == {"skipped:hard_violation"}


def test_illegal_hop_is_found_before_the_judges(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    """The allow-set rules run in loop_guard's Monitor: an illegal hop costs zero judge calls."""
    fake_openai.default_answer = {"score": 1.0, "confidence": 1.0, "reason": "perfect"}
    steps = messages(("plan", "p"), ("review", "r"))
    verdict = evaluate(Trajectory(run_id="hop", graph="flow", steps=steps, outcome="x"), config,
                       allow_set=ALLOW, policy=Policy.workflow())
    assert len(fake_openai.requests) == 0
    assert verdict.composite is None
    assert verdict.passed is False
    assert verdict.hard_codes == ["illegal_transition"]
    assert not verdict_clears_autoapprove(verdict, enabled=True)


def test_low_scores_fail_below_the_pass_mark(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    fake_openai.default_answer = {"score": 0.3, "confidence": 0.9, "reason": "weak"}
    verdict = evaluate(healthy(), config, allow_set=ALLOW, policy=Policy.workflow())
    assert (verdict.passed, verdict.reason) == (False, "below_pass_mark")


@pytest.mark.parametrize(("env", "why"), [({"LLM_KILL_SWITCH": "1"}, "kill_switch"), ({}, "no_api_key")])
def test_kill_switch_and_missing_key_skip_every_call(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], why: str
) -> None:
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", fake_openai.base_url)
    if why == "kill_switch":
        monkeypatch.setenv("AGENT_EVAL_API_KEY", "present")
    else:  # a remote endpoint with no key (a loopback one needs none)
        monkeypatch.setenv("AGENT_EVAL_BASE_URL", "https://judge.example.com/v1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    verdict = evaluate_trajectory(healthy(), allow_set=ALLOW, policy=Policy.workflow())
    assert fake_openai.requests == []
    assert verdict.judges_skipped == why
    assert not verdict.judged
    assert (verdict.passed, verdict.reason) == (False, "unjudged")  # never a pass unasked
    assert verdict.missing == [f"judges_skipped:{why}"]
    assert verdict.evidence["counts"]["loop_guard"] == 0
    structural = evaluate_trajectory(healthy(), allow_set=ALLOW, policy=Policy.workflow(),
                                     structural_only=True)
    assert (structural.passed, structural.reason, structural.missing) == (True, "structural_only", [])
    assert structural.structural_only
    assert fake_openai.requests == []
    looping = evaluate_trajectory(Trajectory(run_id="l", steps=ping_pong()))
    assert looping.hard_codes == ["content_cycle"]
    assert not verdict_clears_autoapprove(verdict, enabled=True)


def test_malformed_answer_is_a_soft_judge_error(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    fake_openai.enqueue(Reply.text("not json at all"), Reply.json({"score": 1.7, "confidence": 1,
                                                                   "reason": "x"}))
    fake_openai.default_answer = GOOD
    verdict = evaluate(healthy(), config, allow_set=ALLOW, policy=Policy.workflow())
    errors = sorted(v.detail["error"] for v in verdict.violations if v.code == "judge_error")
    assert errors == ["malformed_json", "out_of_range"]
    assert all(v.severity == "soft" for v in verdict.violations if v.code == "judge_error")
    assert verdict.judge_error
    assert verdict.composite is None  # not reported as if complete
    assert verdict.evidence["partial_composite"] == pytest.approx(0.9)
    assert (verdict.passed, verdict.judged, verdict.reason) == (False, False, "unjudged")
    assert verdict.missing == ["judge_error:step:malformed_json", "judge_error:trajectory:out_of_range"]
    assert not verdict_clears_autoapprove(verdict, enabled=True)


# -- escalation and anomaly -------------------------------------------------------------------
def test_borderline_composite_calls_a_panel_whose_median_decides(
    fake_openai: FakeOpenAI, config: JudgeConfig
) -> None:
    answers = [0.82, 0.82, 0.82, 0.70, 0.75, 0.95]
    fake_openai.enqueue(*[Reply.json({"score": a, "confidence": 0.9, "reason": "r"}) for a in answers])
    verdict = evaluate(healthy(), config, allow_set=ALLOW, policy=Policy.workflow())
    assert len(fake_openai.requests) == 6
    assert verdict.evidence["escalation"]["panel"] == 3
    assert verdict.composite == pytest.approx(0.75)
    assert (verdict.passed, verdict.reason) == (False, "panel:below_pass_mark")


def test_clear_composite_makes_no_panel_call(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    fake_openai.default_answer = {"score": 0.95, "confidence": 0.9, "reason": "r"}
    verdict = evaluate(healthy(), config, allow_set=ALLOW, policy=Policy.workflow())
    assert len(fake_openai.requests) == 3
    assert "escalation" not in verdict.evidence


def test_unusual_legal_ordering_gets_one_anomaly_judge_call(
    fake_openai: FakeOpenAI, config: JudgeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead end (soft) with no hard flag: trajectory_anomaly asks the trajectory judge once."""
    fake_openai.default_answer = GOOD
    run = Trajectory(run_id="de", graph="flow", steps=messages(("plan", "p"), ("draft", "d")),
                     outcome="x")
    verdict = evaluate(run, config, allow_set=ALLOW, policy=Policy.workflow())
    assert len(fake_openai.requests) == 4
    prompts = [r.content("system") for r in fake_openai.requests]
    assert prompts.count(prompts[1]) == 2  # the anomaly call reuses trajectory_eval's prompt
    assert [v.code for v in verdict.violations] == ["dead_end"]
    monkeypatch.setenv("AGENT_EVAL_TRAJECTORY_ANOMALY", "0")
    quiet = evaluate(run, config, allow_set=ALLOW, policy=Policy.workflow())
    assert len(fake_openai.requests) == 7  # only the anomaly judge call is switched off
    assert [v.code for v in quiet.violations] == ["dead_end"]  # the allow-set rules still ran


def test_tool_entropy_collapse_is_soft() -> None:
    varied = [tool_result_step(t, {"q": i}, f"r{i}") for i, t in enumerate(["search", "fetch", "parse"])]
    collapsed = [tool_result_step("search", {"q": 10 + i}, f"r{10 + i}") for i in range(5)]
    [hit] = check_trajectory(varied + collapsed, Policy.tool_agent())
    assert (hit.code, hit.severity, hit.step) == ("tool_entropy_collapse", "soft", 7)
    assert check_trajectory(varied + collapsed[:4], Policy.tool_agent()) == []
    # A run that only ever used one tool has not collapsed: it never varied.
    assert check_trajectory(collapsed * 2, Policy.tool_agent()) == []


# -- privacy ----------------------------------------------------------------------------------
@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG):
        yield caplog


def test_logs_and_verdicts_carry_no_step_text(
    fake_openai: FakeOpenAI, config: JudgeConfig, captured: pytest.LogCaptureFixture
) -> None:
    secret = "SECRET-4111-1111"
    fake_openai.default_answer = {"score": 0.9, "confidence": 0.9, "reason": f"saw {secret}"}
    steps = [Step(node="plan", summary=f"plan {secret}", output={"card": secret}),
             Step(node="draft", summary="draft", output=secret)]
    run = Trajectory(run_id="p", steps=steps, outcome=secret)
    verdict = evaluate(run, config)
    assert len(fake_openai.requests) == 3
    assert secret in json.dumps([r.body for r in fake_openai.requests])  # the judge does see it
    assert secret not in verdict.model_dump_json()
    assert secret not in captured.text
    looping = evaluate(Trajectory(run_id="q", steps=[steps[0]] * 3), config)
    assert secret not in looping.model_dump_json()


def test_async_entry_point(fake_openai: FakeOpenAI, config: JudgeConfig) -> None:
    fake_openai.default_answer = GOOD

    async def run() -> Verdict:
        gateway = JudgeClient(config)
        try:
            return await aevaluate_trajectory(healthy(), graph=build_eval_graph(gateway=gateway))
        finally:
            await gateway.aclose()

    assert asyncio.run(run()).passed
