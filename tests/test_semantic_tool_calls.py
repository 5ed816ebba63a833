"""Issue 17: the same call in other words, answered the same way, is a repeated state.

A tool call whose arguments re-read an earlier call's (the same payload less a segment, the
same script reformatted) and whose result is the same is the state coming back; from the
``tool_repeats``-th such call in the window the semantic layer says so (hard
``semantic_repeat``, ``detail.kind == "tool_call"``). Found on the detection benchmark's
development half (tau-bench ``task013``: "update_reservation_flights resent ... four times";
Who&When ``ag-52``: the same script re-run with "Code output: X"). Each rule has its healthy
look-alikes: silent edits (an empty output says nothing, so it repeats no state), new dates
or ids (a new number is a new request), a poll that resolves.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from liveguard import Monitor, NoProgressError, Policy, Step, check_trajectory
from liveguard.integrations.langgraph import guard

SEMANTIC = Policy.tool_agent(agent_nodes=("model", "tools", "user")).model_copy(update={"semantic": True})

FLIGHTS = [{"date": date, "flight_number": number} for date, number in (
    ("2024-05-13", "HAT030"), ("2024-05-14", "HAT223"), ("2024-05-21", "HAT102"), ("2024-05-21", "HAT124"))]
ERROR = "Error: flight HAT030 not available on date 2024-05-13"


def update(flights: list[dict[str, str]], result: str = ERROR) -> Step:
    args = {"cabin": "economy", "flights": flights, "payment_id": "gift_card_4643416",
            "reservation_id": "XEWRD9"}
    return Step(node="tools", tool="update_reservation_flights", args=args, result=result)


def tool_findings(steps: list[Step], policy: Policy = SEMANTIC) -> list[tuple[str, int, Any]]:
    return [(v.severity, v.step, v.detail["steps"]) for v in check_trajectory(steps, policy)
            if v.code == "semantic_repeat" and v.detail.get("kind") == "tool_call"]


def resent_payload() -> list[Step]:
    """The same update three times, the third less a segment; the user's replies are new."""
    return [
        Step(node="user", summary="Please change my return flight to HAT102."),
        update(FLIGHTS),
        Step(node="model", summary="It seems flight HAT030 is not available. Shall I search alternatives?"),
        Step(node="user", summary="No, just make the change I asked for."),
        update(FLIGHTS),
        Step(node="model", summary="There is still an issue with flight HAT030 on May 13."),
        Step(node="user", summary="I think we are going in circles. Change only the ATL segment first."),
        update(FLIGHTS[:3]),
    ]


def test_a_payload_resent_with_the_same_error_is_a_loop_at_its_third_call() -> None:
    """main: no finding (the third call's arguments differ, so tool_no_progress counts 2)."""
    assert tool_findings(resent_payload()) == [("hard", 7, [1, 4, 7])]
    assert not [v for v in check_trajectory(resent_payload(), SEMANTIC.model_copy(update={"semantic": False}))
                if v.hard]


def test_a_script_reformatted_and_rerun_with_the_same_output_is_a_loop() -> None:
    code = ("# filename: compute_isbn10_check_digit.py\n\n# Tropicos ID for the Order Helotiales\n"
            "tropicos_id = '8200000'\n\n# Ensure the ID is 9 digits long by padding with leading zeros\n"
            "tropicos_id = tropicos_id.zfill(9)\n\n# Calculate the sum of the products of each digit "
            "and its position\ntotal_sum = sum(int(digit) * (index + 1) for index, digit in "
            "enumerate(tropicos_id))\n\n# Compute the modulo 11 of the sum\ncheck_digit_value = "
            "total_sum % 11\n\n# Determine the check digit\n")
    first = code + ("check_digit = 'X' if check_digit_value == 10 else str(check_digit_value)\n\n"
                    "print(check_digit)")
    again = code + ("if check_digit_value == 10:\n    check_digit = 'X'\nelse:\n    check_digit = "
                    "str(check_digit_value)\n\nprint(check_digit)")
    out = "exitcode: 0 (execution succeeded)\nCode output: X\n"
    steps = [
        Step(node="tools", tool="execute_code", args={"code": "print('hello')"},
             result="exitcode: 0 (execution succeeded)\nCode output: hello\n"),
        Step(node="tools", tool="execute_code", args={"code": first}, result=out),
        Step(node="model", summary="The check digit is X. Let me verify each step again."),
        Step(node="tools", tool="execute_code", args={"code": first}, result=out),
        Step(node="model", summary="Upon review there is a mistake: 22 mod 11 is 0, so the digit is 0."),
        Step(node="tools", tool="execute_code", args={"code": again}, result=out),
    ]
    assert tool_findings(steps) == [("hard", 5, [1, 3, 5])]


def _bash(command: str, output: str = "") -> Step:
    return Step(node="tools", tool="bash", args={"command": command},
                result=f"<returncode>0</returncode>\n<output>\n{output}</output>")


def test_silent_edits_applied_reverted_and_reapplied_are_not_a_loop() -> None:
    """The healthy look-alike (mini-swe-agent, Gemini 3 Pro, psf__requests-1724): a fix
    applied, reverted to see whether the tests fail without it, and applied again. Each sed
    returns an empty output: nothing came back, so no state came back either."""
    before, after = "self.method = self.method.upper()", "self.method = to_native_string(self.method.upper())"
    fix, revert = f"sed -i '310s/{before}/{after}/' m.py", f"sed -i '310s/{after}/{before}/' m.py"
    steps = [
        _bash("ls", "m.py\ntest_m.py\n"),
        _bash(fix),
        _bash("python test_m.py", "FAILED test_post (TypeError: object must be callable)\n"),
        _bash(revert),
        _bash("python test_m.py", "FAILED test_post (TypeError: object must be callable)\n"),
        _bash(fix),
    ]
    assert tool_findings(steps) == []
    assert not [v for v in check_trajectory(steps, SEMANTIC) if v.hard]


def test_the_same_empty_answer_to_new_dates_or_ids_is_not_a_loop() -> None:
    """A search over new dates that finds nothing, lookups of new ids that are not found: a
    new number or identifier in the request is a new request."""
    searches = [Step(node="tools", tool="search_direct_flight",
                     args={"origin": "JFK", "destination": "SFO", "date": f"2024-05-{day:02d}"}, result="[]")
                for day in (6, 7, 8, 9)]
    lookups = [Step(node="tools", tool="get_user_details", args={"user_id": user},
                    result="Error: user not found") for user in ("mia_li_3668", "mia_li_3669", "mia_lee_36")]
    assert tool_findings(searches) == []
    assert tool_findings(lookups) == []


def test_a_resolving_poll_is_not_a_loop() -> None:
    steps = [Step(node="tools", tool="job_status", args={"job": "j-1"}, result=status)
             for status in ("running", "running", "done")]
    assert tool_findings(steps) == []


def test_the_tool_call_chain_is_thread_state() -> None:
    """One step per invoke, through the JSON snapshot: the same finding at the same step, and
    the snapshot holds digests and hashed words, never the result's text."""
    found: list[Any] = []
    snapshot: Any = None
    for step in resent_payload():
        monitor = Monitor(SEMANTIC) if snapshot is None else Monitor.restore(snapshot, SEMANTIC)
        monitor.new_run()
        found += [v for v in monitor.observe(step) if v.code == "semantic_repeat" and v.detail.get("kind")]
        snapshot = json.loads(json.dumps(monitor.snapshot()))
    assert [(v.severity, v.step, v.detail["steps"]) for v in found] == [("hard", 7, [1, 4, 7])]
    text = json.dumps(snapshot)
    for word in ("HAT030", "available", "gift_card", "XEWRD9"):
        assert word not in text


# ------------------------------------------------------------------ live: a create_agent under guard()
class Resender(BaseChatModel):
    """A scripted model: resends the flight change (the third time less a segment), or tries
    a new date each turn; answers once the tool result changes or after five calls."""

    mode: str = "resend"

    @property
    def _llm_type(self) -> str:
        return "liveguard-resender"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        calls = sum(1 for m in messages if isinstance(m, ToolMessage))
        if calls >= 5:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="nothing found"))])
        if self.mode == "resend":
            name, args = "update_flights", {"flights": FLIGHTS if calls < 2 else FLIGHTS[:3],
                                             "reservation_id": "XEWRD9"}
        else:
            name, args = "search_flights", {"origin": "JFK", "date": f"2024-05-{6 + calls:02d}"}
        reply = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{calls}",
                                                   "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def update_flights(flights: list[dict[str, str]], reservation_id: str) -> str:
    """Change a reservation's flights."""
    return ERROR


@tool
def search_flights(origin: str, date: str) -> str:
    """Direct flights from ``origin`` on ``date``."""
    return "[]"


def test_guard_stops_a_live_agent_resending_the_payload_at_its_third_call() -> None:
    graph = create_agent(Resender(mode="resend"), [update_flights], checkpointer=InMemorySaver())
    with pytest.raises(NoProgressError) as stopped:
        guard(graph, policy=SEMANTIC).invoke({"messages": [HumanMessage("change my return flight")]},
                                             {"configurable": {"thread_id": "resend"}})
    violation = stopped.value.violation
    assert (violation.code, violation.detail["kind"], violation.count) == ("semantic_repeat", "tool_call", 3)


def test_guard_leaves_a_live_agent_searching_new_dates_alone() -> None:
    graph = create_agent(Resender(mode="search"), [search_flights], checkpointer=InMemorySaver())
    out = guard(graph, policy=SEMANTIC).invoke({"messages": [HumanMessage("find me a flight")]},
                                               {"configurable": {"thread_id": "search"}})
    assert out["messages"][-1].content == "nothing found"


# -- issue 30, item 4: the same error from the same tool, with varying arguments ----------------

PAYMENT_ERROR = "Error: payment amount does not add up, total price is 1203, but paid 833"


def book(payment: str, result: str = PAYMENT_ERROR, amount: int = 833) -> Step:
    args = {"cabin": "business", "flights": FLIGHTS[:2],
            "payment_methods": [{"id": payment, "amount": amount}]}
    return Step(node="tools", tool="book_reservation", args=args, result=result)


def think(thought: str) -> Step:
    return Step(node="tools", tool="think", args={"thought": thought}, result="")


def same_error_findings(steps: list[Step], policy: Policy = SEMANTIC) -> list[tuple[str, int, Any]]:
    return [(v.severity, v.step, v.detail["steps"]) for v in check_trajectory(steps, policy)
            if v.code == "tool_same_error"]


def retried_payments() -> list[Step]:
    """tau-bench task009: book_reservation re-sent with other payment splits, the same error
    each time, only the agent's own thoughts between."""
    return [
        Step(node="user", summary="Yes, please proceed with this arrangement. Thank you!"),
        book("gift_card_1", amount=833),
        think("I need to adjust the payment amounts so they add up to $833."),
        book("gift_card_2", amount=833),
        think("I need to ensure the payment methods add up to the total cost of $833."),
        book("certificate_3", amount=833),
        Step(node="model", summary="It seems there is still an issue with the payment."),
    ]


def test_the_same_error_three_times_with_varying_arguments_is_a_loop() -> None:
    """main: no hard finding at all (each call's arguments differ, so tool_no_progress counts
    one; their results are the same, so no reworded call is new either)."""
    assert same_error_findings(retried_payments()) == [("hard", 5, [1, 3, 5])]
    assert "tool_same_error" in {v.code for v in check_trajectory(retried_payments(), SEMANTIC) if v.hard}
    structural = SEMANTIC.model_copy(update={"semantic": False})
    assert not [v for v in check_trajectory(retried_payments(), structural) if v.hard]


def test_the_same_error_needs_the_semantic_layer_and_is_registered() -> None:
    from liveguard.core.codes import CODES, LIVENESS_CODES

    assert CODES["tool_same_error"].family == "semantic"
    assert "tool_same_error" in LIVENESS_CODES


def test_different_errors_between_are_not_the_same_error_again() -> None:
    """tau-bench task023 (progress): gift card, certificate, gift card: each attempt a
    different error, a user's new answer between."""
    steps = [
        book("gift_card_6941833", "Error: gift card balance is not enough"),
        Step(node="model", summary="The gift card balance is not enough. Another payment method?"),
        Step(node="user", summary="Let's use the Gift Card with the $200 balance, please."),
        book("gift_card_1646646", "Error: gift card balance is not enough"),
        Step(node="user", summary="Yes, that combination will work."),
        book("certificate_2345996", "Error: certificate cannot be used to update reservation"),
        Step(node="user", summary="Yes, let's use the gift card with the $200 balance for the transaction."),
        book("gift_card_1646646", "Error: gift card balance is not enough"),
    ]
    assert same_error_findings(steps) == []
    assert not [v for v in check_trajectory(steps, SEMANTIC) if v.hard]


def test_a_new_result_between_the_same_errors_starts_the_chain_again() -> None:
    """A lookup that brings something new between two failures: the agent learned something,
    so the next failure is not the same state coming back."""
    steps = retried_payments()
    steps.insert(4, Step(node="tools", tool="get_user_details", args={"user_id": "mia_li_3668"},
                         result='{"payment_methods": {"gift_card_2": {"amount": 198}}}'))
    assert same_error_findings(steps) == []
    assert not [v for v in check_trajectory(steps, SEMANTIC) if v.hard]


def test_a_user_answer_between_the_same_errors_starts_the_chain_again() -> None:
    steps = retried_payments()
    steps[4] = Step(node="user", summary="Try the certificate of $500 first, then the gift cards.")
    assert same_error_findings(steps) == []


def test_the_same_failing_call_unchanged_is_tool_no_progress_not_the_same_error() -> None:
    """Identical arguments each time: the structural rule's, not this one's (varying arguments)."""
    steps = [book("gift_card_1"), think("Let me retry."), book("gift_card_1"), think("Retry once more."),
             book("gift_card_1")]
    assert same_error_findings(steps) == []
    assert "tool_no_progress" in {v.code for v in check_trajectory(steps, SEMANTIC) if v.hard}


def test_the_same_error_chain_is_thread_state() -> None:
    """One step per invoke, through the JSON snapshot: the same finding at the same step,
    and the snapshot holds digests, never the error's text."""
    snapshot: Any = None
    found = []
    for index, step in enumerate(retried_payments()):
        monitor = Monitor(SEMANTIC) if snapshot is None else Monitor.restore(snapshot, SEMANTIC)
        found += [(v.code, index) for v in monitor.observe(step) if v.code == "tool_same_error"]
        snapshot = json.loads(json.dumps(monitor.snapshot()))
    assert found == [("tool_same_error", 5)]
    assert "payment amount" not in json.dumps(snapshot)


# -- issue 30, item 4: a reworded query with nothing new back is a suspicion ----------------------

def search(query: str, result: str) -> Step:
    return Step(node="tools", tool="web_search", args={"query": query}, result=result)


PAGE = "Survivor winners list: All seasons - GoldDerby. Season 1 Richard Hatch, Season 2 Tina Wesson."


def suspicions(steps: list[Step]) -> list[tuple[str, int, Any]]:
    return [(v.severity, v.step, v.detail["matched_step"]) for v in check_trajectory(steps, SEMANTIC)
            if v.code == "semantic_repeat" and v.detail.get("kind") == "tool_call" and not v.hard]


def test_a_reworded_query_with_the_same_page_back_is_a_suspicion() -> None:
    """main: nothing (the queries' word triples differ, so the call is not re-read)."""
    steps = [search("survivor winners birthdates", PAGE),
             Step(node="model", summary="No birthdates there. Let me search again."),
             search("birthdates of all survivor winners", PAGE)]
    assert suspicions(steps) == [("soft", 2, 0)]
    assert not [v for v in check_trajectory(steps, SEMANTIC) if v.hard]  # only the judge makes it hard


def test_a_reworded_query_with_a_new_page_back_is_no_suspicion() -> None:
    steps = [search("survivor winners birthdates", PAGE),
             search("birthdates of all survivor winners", "Richard Hatch, born April 8, 1961; Tina Wesson, "
                    "born December 26, 1960.")]
    assert suspicions(steps) == []


def test_another_id_with_the_same_answer_is_no_suspicion() -> None:
    """Another input (a new id or number in the arguments) is another request, not a rewording."""
    steps = [Step(node="tools", tool="find_user", args={"name": "Yusuf", "zip": zip_code},
                  result="Error: User not found") for zip_code in ("91163", "91164")]
    assert suspicions(steps) == []
