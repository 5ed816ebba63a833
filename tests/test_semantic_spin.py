"""spin_check: the judge that reads the evidence, through the real gateway and the local
OpenAI-compatible server (issue 30, item 5)."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fake_openai import FakeOpenAI, Reply
from liveguard import Policy, Step, check_trajectory
from liveguard.evaluate.judges import PROMPT_VERSION, SPIN_CHECK_PROMPT, JudgeClient, JudgeConfig
from liveguard.evaluate.spin import (
    BETWEEN_CHARS,
    MAX_STEP_CHARS,
    MAX_TASK_CHARS,
    SpinTally,
    cut_middle,
    spin_checks,
    spin_confirmations,
    spin_payload,
)

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
    assert score.evidence == {"trigger": "soft_finding", "steps": [1, 2, 3], "requests": 1,
                              "prompt_version": PROMPT_VERSION, "finding_step": 3,
                              "finding_node": "reviewer", "finding_count": 1, "matched_step": 1}
    request = fake_openai.requests[0]
    assert request.content("system") == SPIN_CHECK_PROMPT  # its own prompt, not the trajectory one
    sent = sent_payload(request.content("user"))
    assert sent["agent_task"] is None  # no user message in this run
    assert [(r["i"], r.get("mark")) for r in sent["steps"]] == [(1, "matched"), (2, None), (3, "suspected")]
    assert sent["steps"][-1]["text"] == LOOP[3][1]


def sent_payload(content: str) -> dict:  # type: ignore[type-arg]
    """The JSON payload inside the data block of a user message."""
    return json.loads(content[content.index("{") : content.rindex("}") + 1])  # type: ignore[no-any-return]


def test_the_prompt_asks_one_question_and_says_what_its_answer_does() -> None:
    """Issue 30: the general trajectory prompt ("efficient", "undoes its own progress") was sent;
    the spin check's own prompt says that below 0.5 confirms the repeat (the run stops at the
    second) and a retry after a new result is not a spin, and to weigh what came back over the
    agent's own claims."""
    prompt = SPIN_CHECK_PROMPT
    assert "same state coming back with nothing new in between" in prompt
    assert "below 0.5 confirms this repeat, and the run stops once" in prompt
    assert "a retry after a new result" in prompt
    assert "over what the agent says about itself" in prompt
    assert "efficient" not in prompt


BOOKING = [
    Step(node="user", summary="Please book the cheapest flight from JFK to SEA on May 20 for me."),
    Step(node="agent", summary="Let me look for flights from JFK to SEA on May 20."),
    Step(node="tools", tool="search_direct_flight", args={"origin": "JFK", "destination": "SEA"},
         result='[{"flight_number": "HAT069", "price": 121}]'),
    Step(node="agent", summary="I found HAT069 at $121. Shall I book it?"),
    Step(node="user", summary="Yes, book it."),
    Step(node="tools", tool="book_reservation", args={"flight": "HAT069", "payment_id": "gift_card_1"},
         result="Error: gift card balance is not enough"),
    Step(node="agent", summary="Let me look for flights from JFK to SEA on May 20 again."),
]


def test_the_judge_reads_the_task_the_matched_step_and_every_observation_between() -> None:
    """The run's task (first user message), the suspected step, the step it matched and every
    step between, tool calls with their arguments and results included (issue 30: tool calls
    and their results never reached the judge; it saw the last 6 rounds across all nodes)."""
    payload, sent = spin_payload(BOOKING, 6, 1)
    assert payload["agent_task"] == BOOKING[0].summary
    assert sent == [1, 2, 3, 4, 5, 6]
    assert [item["i"] for item in payload["steps"]] == sent
    assert (payload["steps"][0]["mark"], payload["steps"][-1]["mark"]) == ("matched", "suspected")
    between = {item["i"]: item for item in payload["steps"][1:-1]}
    assert between[2]["tool"] == "search_direct_flight"
    assert json.loads(between[2]["args"]) == {"destination": "SEA", "origin": "JFK"}
    assert "HAT069" in between[2]["result"]
    assert between[4] == {"i": 4, "node": "user", "user": True, "text": "Yes, book it."}
    assert between[5]["result"] == "Error: gift card balance is not enough"
    given, _ = spin_payload(BOOKING, 6, 1, task="Book a flight")
    assert given["agent_task"] == "Book a flight"


def test_a_step_matched_far_back_brings_every_step_between() -> None:
    """The one loop the judge missed repeated a list read 50 steps earlier: the matched step
    is sent, with the 50 steps between, each cut to fit."""
    steps = [Step(node="a", summary=f"note {i}: " + "word " * 400) for i in range(60)]
    payload, sent = spin_payload(steps, 55, 4)
    assert sent == list(range(4, 56))
    assert len(payload["steps"]) == 52  # the matched step, the 50 between, the suspected step
    assert "steps_left_out" not in payload
    assert all(len(item["text"]) <= MAX_STEP_CHARS for item in payload["steps"][1:-1])
    many, sent = spin_payload(steps * 3, 175, 2)  # 172 steps between: the middle ones left out
    assert many["steps_left_out"] == 172 - 58
    assert sent[:3] == [2, 3, 4]
    assert sent[-3:] == [173, 174, 175]


def test_long_rounds_are_cut_from_the_middle_so_both_ends_stay() -> None:
    """Issue 30: rounds were cut at 1,500 characters from the start, keeping page metadata
    and dropping the page text."""
    page = "TITLE Treasury Division page " + "x" * 5000 + " LAST LINE: Email the Department"
    cut = cut_middle(page, 600)
    assert len(cut) <= 600
    assert cut.startswith("TITLE Treasury Division page")
    assert cut.endswith("LAST LINE: Email the Department")
    assert cut_middle("short", 600) == "short"


def test_a_tool_call_suspicion_asks_the_judge_with_the_calls_between(fake_openai: FakeOpenAI) -> None:
    """The same tool called with a reworded query and the same result back is a suspicion
    (soft ``semantic_repeat``, ``kind`` ``tool_call``): the spin check is asked about it and
    reads both calls and their results."""
    fake_openai.enqueue(Reply.json(SPINNING))
    steps = [
        Step(node="user", summary="Find me the winners list of Survivor with their birthdates."),
        Step(node="tools", tool="web_search", args={"query": "survivor winners list birthdates"},
             result="Survivor winners list: All seasons - GoldDerby. Birthdates not listed."),
        Step(node="agent", summary="The list has no birthdates; let me search again."),
        Step(node="tools", tool="web_search", args={"query": "list of survivor winners birthdates"},
             result="Survivor winners list: All seasons - GoldDerby. Birthdates not listed."),
    ]
    policy = Policy.tool_agent(agent_nodes=("agent", "tools", "user")).model_copy(update={"semantic": True})
    scores = run_checks(steps, policy, gateway(fake_openai))
    assert [s.evidence["finding_step"] for s in scores] == [3]
    assert scores[0].evidence["matched_step"] == 1
    sent = sent_payload(fake_openai.requests[0].content("user"))
    assert sent["agent_task"] == steps[0].summary
    matched, suspected = sent["steps"][0], sent["steps"][-1]
    assert matched["tool"] == suspected["tool"] == "web_search"
    assert "survivor winners list birthdates" in matched["args"]


def test_periodic_checks_every_k_message_steps(fake_openai: FakeOpenAI) -> None:
    steps = [Step(node="n", summary=f"Processed batch {i} of 9") for i in range(9)]
    steps.insert(4, Step(node="tools", tool="fetch", args={"i": 4}, result="ok"))  # not a message step
    policy = Policy(semantic=True, spin_check_every=3, max_revisits=20, max_visits=20)
    scores = run_checks(steps, policy, gateway(fake_openai))
    assert [s.evidence["trigger"] for s in scores] == ["periodic"] * 3
    assert [s.evidence["steps"][-1] for s in scores] == [2, 6, 9]
    assert scores[1].evidence["steps"] == [0, 1, 2, 3, 4, 5, 6]  # the window's messages and the tool step
    assert len(fake_openai.requests) == 3


def test_kill_switch_means_no_call_and_missing_evidence(fake_openai: FakeOpenAI) -> None:
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    scores = run_checks(steps, Policy(semantic=True), gateway(fake_openai, kill_switch=True))
    assert fake_openai.requests == []
    assert len(scores) == 2
    score = scores[0]
    assert (score.score, score.reason, score.source) == (None, "skipped:kill_switch", "spin_check")


def test_two_first_suspicions_judged_spins_are_hard_at_the_second(fake_openai: FakeOpenAI) -> None:
    """Two suspicions of the run (reviewer at 3, coder at 4, each its node's first in the
    window) that the judge calls spins: the second is hard; the first alone is not."""
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    fake_openai.enqueue(Reply.json(SPINNING), Reply.json(SPINNING))
    scores = run_checks(steps, Policy(semantic=True), gateway(fake_openai))
    assert [s.evidence["finding_count"] for s in scores] == [1, 1]
    [hard] = spin_confirmations(scores, Policy(semantic=True))
    assert (hard.step, hard.node, hard.severity, hard.count) == (4, "coder", "hard", 2)
    assert spin_confirmations(scores[:1], Policy(semantic=True)) == []
    assert [v.step for v in spin_confirmations(scores, Policy(semantic=True, spin_hard_repeats=1))] == [3, 4]
    assert spin_confirmations(scores, Policy(semantic=True, spin_hard_repeats=3)) == []


def test_an_unusable_answer_never_counts_toward_a_judged_spin(fake_openai: FakeOpenAI) -> None:
    """Fail closed both ways: an answer that is not the answer's JSON is missing evidence
    (score None), neither a pass nor a spin; a fenced answer is an answer."""
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    fenced = '```json\n{"score": 0.1, "confidence": 0.9, "reason": "same complaint"}\n```'
    fake_openai.enqueue(Reply.text("It loops, score 0.1."), Reply.text(fenced))
    scores = run_checks(steps, Policy(semantic=True), gateway(fake_openai))
    assert [(s.score, s.reason) for s in scores] == [(None, "judge_error:malformed_json"), (0.1, "judged")]
    assert spin_confirmations(scores, Policy(semantic=True)) == []  # one spin: a first suspicion's
    assert [v.step for v in spin_confirmations(scores, Policy(semantic=True, spin_hard_repeats=1))] == [4]


def test_once_a_judged_spin_is_hard_no_more_checks_are_asked(fake_openai: FakeOpenAI) -> None:
    """The run is vetoed at the judged spin that is hard: a further call would be waste."""
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    fake_openai.enqueue(Reply.json(SPINNING), Reply.json(SPINNING))
    scores = run_checks(steps, Policy(semantic=True, spin_hard_repeats=1), gateway(fake_openai))
    assert [s.evidence["finding_step"] for s in scores] == [3]
    assert len(fake_openai.requests) == 1


def test_a_recorded_check_without_its_count_is_a_first_suspicion() -> None:
    """Spin checks recorded before the suspicion's count was kept: read as first suspicions
    (never harder than they were); a periodic check confirms nothing."""
    from liveguard.core.model import LevelScore

    old = LevelScore(level="trajectory", score=0.1, confidence=0.9, reason="judged", source="spin_check:m",
                     evidence={"trigger": "soft_finding", "finding_step": 7, "finding_node": "a"})
    periodic = LevelScore(level="trajectory", score=0.0, confidence=1.0, reason="judged",
                          source="spin_check:m", evidence={"trigger": "periodic", "steps": [1, 2]})
    tally = SpinTally(Policy())
    assert (tally.add(old), tally.add(periodic)) == (None, None)
    again = tally.add(old.model_copy(update={"evidence": {**old.evidence, "finding_step": 9}}))
    assert again is not None
    assert (again.step, again.detail["judged_spins"], again.detail["finding_count"]) == (9, 2, 1)


def test_judged_spins_of_two_states_far_apart_are_not_one_return() -> None:
    """The run stops once the *same* state's return is confirmed a second time: a first
    suspicion judged a spin at 7 (matched 5) and another at 40 (matched 36), the second's
    stretch beginning after the first ended, are two states each seen twice: no stop (the
    run-wide count made the second hard). A judged spin inside the stretch of the next one
    (the reviewer at 3 and the coder at 4 of a ping-pong) is the same return: hard."""
    from liveguard.core.model import LevelScore

    def judged(step: int, matched: int, node: str) -> LevelScore:
        return LevelScore(level="trajectory", score=0.1, confidence=0.9, reason="judged",
                          source="spin_check:m",
                          evidence={"trigger": "soft_finding", "finding_step": step, "finding_node": node,
                                    "finding_count": 1, "matched_step": matched})

    apart = SpinTally(Policy())
    assert (apart.add(judged(7, 5, "writer")), apart.add(judged(40, 36, "searcher"))) == (None, None)
    assert spin_confirmations([judged(7, 5, "writer"), judged(40, 36, "searcher")], Policy()) == []
    [hard] = spin_confirmations([judged(3, 1, "reviewer"), judged(4, 2, "coder")], Policy())
    assert (hard.step, hard.count, hard.detail["judged_spins"]) == (4, 2, 2)
    chain = [judged(7, 5, "writer"), judged(40, 36, "searcher"), judged(44, 38, "searcher")]
    [third] = spin_confirmations(chain, Policy())  # 40 lies inside 44's stretch (from 38)
    assert (third.step, third.detail["judged_spins"]) == (44, 2)


def test_a_failed_check_is_missing_evidence_never_a_pass(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.error(400), Reply.error(400))
    steps = [Step(node=n, summary=t) for n, t in LOOP]
    score = run_checks(steps, Policy(semantic=True), gateway(fake_openai))[0]
    assert score.score is None
    assert score.reason == "judge_error:http_4xx"
    assert score.evidence["error"] == "http_4xx"


# -- fuzzed: the spin check reads agent text ------------------------------------------------------

_TEXT = st.text(max_size=3000)
_VALUE = (st.none() | _TEXT | st.dictionaries(st.text(max_size=8), _TEXT, max_size=3)
          | st.lists(_TEXT, max_size=3))
_STEP = st.builds(
    Step, node=st.sampled_from(["user", "agent", "tools", "Orchestrator (thought)", "x"]),
    summary=st.none() | _TEXT, output=_VALUE, tool=st.none() | st.sampled_from(["search", "book"]),
    args=_VALUE, result=_VALUE, error=st.none() | _TEXT)


@settings(max_examples=60, deadline=None)
@given(text=_TEXT, limit=st.integers(min_value=0, max_value=4000))
def test_cut_middle_keeps_both_ends_within_its_limit(text: str, limit: int) -> None:
    cut = cut_middle(text, limit)
    if len(text) <= limit:
        assert cut == text
    else:
        assert len(cut) <= max(limit, len(" […999999 characters cut…] "))
        keep = cut.split(" […", 1)
        assert text.startswith(keep[0])


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=80), data=st.data())
def test_the_payload_is_bounded_json_for_any_steps(steps: list[Step], data: st.DataObject) -> None:
    """Whatever the steps hold, the payload is JSON, names only indices in range, and its
    texts fit the prompt's budget (the data block is never cut mid-JSON)."""
    suspected = data.draw(st.integers(min_value=0, max_value=len(steps) - 1))
    matched = data.draw(st.none() | st.integers(min_value=-3, max_value=len(steps) + 3))
    payload, sent = spin_payload(steps, suspected, matched)
    text = json.dumps(payload, ensure_ascii=False)
    assert sent[-1] == suspected
    assert all(0 <= i <= suspected for i in sent)
    assert len(text) < 3 * MAX_TASK_CHARS * 2 + BETWEEN_CHARS * 2  # escapes at most double a text
