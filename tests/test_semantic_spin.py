"""spin_check: the periodic judge, through the real gateway and the local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json

from fake_openai import FakeOpenAI, Reply
from liveguard import Policy, Step, check_trajectory
from liveguard.judges import PROMPT_VERSION, JudgeClient, JudgeConfig
from liveguard.semantic.spin import SPIN_TASK, spin_checks

LOOP = [
    ("coder", "Here is add(): def add(a, b): return a - b"),
    ("reviewer", "add() returns a minus b; it should return their sum. Please fix the operator."),
    ("coder", "Updated add() as requested, please take another look."),
    ("reviewer", "The function still subtracts instead of adding. Change the minus to a plus."),
    ("coder", "I revised add(); could you review it again?"),
    ("reviewer", "This still computes a - b rather than a + b. The operator needs to be a plus sign."),
    ("coder", "Pushed another revision of add() for your review."),
]
SPINNING = {"score": 0.1, "confidence": 0.9, "reason": "same complaint reworded"}


def gateway(fake: FakeOpenAI, **extra: object) -> JudgeClient:
    return JudgeClient(JudgeConfig(base_url=fake.base_url, api_key="sk-test", model="judge-m", max_retries=0,
                               **extra))  # type: ignore[arg-type]


def run_checks(steps: list[Step], policy: Policy, gw: JudgeClient) -> list:  # type: ignore[type-arg]
    async def go() -> list:  # type: ignore[type-arg]
        async with gw:
            return await spin_checks(steps, check_trajectory(steps, policy), policy, gw)
    return asyncio.run(go())


def test_soft_findings_trigger_checks_and_a_hard_one_stops_them(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.json(SPINNING), Reply.json(SPINNING))
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    policy = Policy(semantic=True)  # soft at steps 3 (reviewer) and 4 (coder), hard at step 5
    scores = run_checks(steps, policy, gateway(fake_openai))
    assert len(fake_openai.requests) == 2  # nothing at or after the hard finding at step 5
    assert [s.evidence["steps"][-1] for s in scores] == [3, 4]
    score = scores[0]
    assert (score.level, score.score, score.confidence, score.reason) == ("trajectory", 0.1, 0.9, "judged")
    assert score.source == "spin_check:judge-m"
    assert score.evidence == {"trigger": "soft_finding", "steps": [0, 1, 2, 3], "requests": 1,
                              "prompt_version": PROMPT_VERSION, "finding_step": 3,
                              "finding_node": "reviewer"}
    content = fake_openai.requests[0].content("user")  # the payload, inside the data block
    sent = json.loads(content[content.index("{") : content.rindex("}") + 1])
    assert sent["task"] == SPIN_TASK
    assert [r["i"] for r in sent["rounds"]] == [0, 1, 2, 3]


def test_periodic_checks_every_k_message_steps(fake_openai: FakeOpenAI) -> None:
    steps = [Step(node="n", summary=f"Processed batch {i} of 9") for i in range(9)]
    steps.insert(4, Step(node="tools", tool="fetch", args={"i": 4}, result="ok"))  # not a message step
    policy = Policy(semantic=True, spin_check_every=3, max_revisits=20, max_visits=20)
    scores = run_checks(steps, policy, gateway(fake_openai))
    assert [s.evidence["trigger"] for s in scores] == ["periodic"] * 3
    assert [s.evidence["steps"][-1] for s in scores] == [2, 6, 9]
    assert len(fake_openai.requests) == 3


def test_kill_switch_means_no_call_and_missing_evidence(fake_openai: FakeOpenAI) -> None:
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    scores = run_checks(steps, Policy(semantic=True), gateway(fake_openai, kill_switch=True))
    assert fake_openai.requests == []
    assert len(scores) == 2
    score = scores[0]
    assert (score.score, score.reason, score.source) == (None, "skipped:kill_switch", "spin_check")


def test_a_failed_check_is_missing_evidence_never_a_pass(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.error(400), Reply.error(400))
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    score = run_checks(steps, Policy(semantic=True), gateway(fake_openai))[0]
    assert score.score is None
    assert score.reason == "judge_error:http_4xx"
    assert score.evidence["error"] == "http_4xx"
