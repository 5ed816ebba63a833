"""liveguard.live.hitl: every hold speaks LangChain 1.x's HITL protocol (issue 19, item 1)."""

from __future__ import annotations

import json
import operator
import threading
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict

import pytest
from graphs._scripted import ScriptedChatModel
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware import human_in_the_loop as lc
from langchain_core.messages import AIMessage, ToolCall
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import TypeAdapter

from liveguard.live.hitl import (
    APPROVAL_ACTION,
    APPROVAL_KIND,
    LIVENESS_ACTION,
    Approve,
    Edit,
    HoldRequest,
    InvalidDecision,
    Reject,
    Respond,
    aask,
    approval_request,
    ask,
    liveness_request,
    parse_resume,
    to_hitl_decision,
    to_hitl_response,
    with_error,
)
from liveguard.live.notify import Coords, NotifyOutcome, flush

DRAFT = "Dear Ms. Rivera, your ACME-SECRET-7f3a order ships Monday."
VERDICT = {
    "run_id": "t-1", "passed": False, "reason": "hard_violation", "score": None,
    "violations": [{"code": "content_cycle", "severity": "hard", "step": 4},
                   {"code": "repeated_content", "severity": "hard", "step": 5}],
    "missing": ["judges_skipped:hard_violation"],
}
REQUEST = TypeAdapter(lc.HITLRequest)
RESPONSE = TypeAdapter(lc.HITLResponse)
DECISION = TypeAdapter(lc.Decision)


def approval() -> HoldRequest:
    return approval_request(DRAFT, reasons=["autoapprove_off", "hard:content_cycle"], verdict=VERDICT)


def stop(edit: Any = "message") -> HoldRequest:
    return liveness_request(code="tool_no_progress", step=3, node="model", count=3, edit=edit)


def all_requests() -> list[HoldRequest]:
    return [approval(), stop("message"), stop("update"),
            with_error(approval(), InvalidDecision("decisions", "expected a list, got str"))]


# ------------------------------------------------------------------------- the interrupt values
@pytest.mark.parametrize("request_value", all_requests(), ids=["approval", "middleware", "guard", "re-ask"])
def test_every_request_is_a_langchain_hitl_request(request_value: HoldRequest) -> None:
    """Strictly valid against LangChain's own TypedDicts, JSON-safe, one action and one config."""
    valid = REQUEST.validate_python(request_value, strict=True)
    assert len(valid["action_requests"]) == len(valid["review_configs"]) == 1
    action, config = valid["action_requests"][0], valid["review_configs"][0]
    assert config["action_name"] == action["name"]
    assert config["allowed_decisions"] == ["approve", "edit", "reject"]
    assert action["description"]
    assert json.loads(json.dumps(request_value)) == request_value  # crosses the server as is


def test_approval_request_carries_the_draft_in_args_and_evidence_in_extra_keys() -> None:
    request = approval()
    action = request["action_requests"][0]
    assert action["name"] == APPROVAL_ACTION
    assert action["args"] == {"draft": DRAFT}
    assert request["kind"] == APPROVAL_KIND
    assert request["codes"] == ["content_cycle", "repeated_content"]
    assert request["reasons"] == ["autoapprove_off", "hard:content_cycle"]
    assert request["verdict"] == VERDICT
    assert request["interrupt_id"] is None


def test_approval_description_says_why_in_words_and_never_the_draft() -> None:
    text = approval()["action_requests"][0]["description"]
    assert "auto-approval is off" in text
    assert "content_cycle (the messages went round a cycle" in text
    assert "Also found: repeated_content (the same message was produced" in text
    assert text.count("content_cycle") == 1
    assert "Missing evidence: judges_skipped:hard_violation" in text
    assert "ACME-SECRET" not in text
    assert "Rivera" not in text


def test_approval_without_reasons_or_verdict_still_says_why() -> None:
    """A hold with no reason codes is still explained (never an empty description)."""
    text = approval_request(DRAFT, reasons=[])["action_requests"][0]["description"]
    assert "did not clear auto-approval" in text


def test_liveness_request_names_the_next_step_code_and_index() -> None:
    request = liveness_request(code="tool_no_progress", step=7, node="tools", count=3, edit="update",
                               interrupt_id="liveguard", detail={"digest": "ab12", "window": 6})
    REQUEST.validate_python(request, strict=True)
    assert request["detail"] == {"digest": "ab12", "window": 6}
    action = request["action_requests"][0]
    assert action["name"] == LIVENESS_ACTION
    assert action["args"] == {"code": "tool_no_progress", "step": 7, "node": "tools", "count": 3,
                              "update": {}}
    assert request["codes"] == ["tool_no_progress"]
    assert request["reasons"] == ["hard:tool_no_progress"]
    assert (request["step"], request["node"], request["interrupt_id"]) == (7, "tools", "liveguard")
    assert "step 7 (node 'tools')" in action["description"]
    assert "the same tool call returned the same result" in action["description"]


# ------------------------------------------------------------------------- decisions round-trip
def lc_decisions(request: HoldRequest) -> list[Any]:
    """Each decision type as LangChain's own TypedDict constructors build it."""
    key = request["edit_key"]
    args = {key: "Hi again" if key in ("draft", "message") else {"limit": 5}}
    name = request["action_requests"][0]["name"]
    return [
        lc.ApproveDecision(type="approve"),
        lc.EditDecision(type="edit", edited_action=lc.Action(name=name, args=args)),
        lc.RejectDecision(type="reject", message="not this week"),
        lc.RejectDecision(type="reject"),
    ]


@pytest.mark.parametrize("request_value", all_requests()[:3], ids=["approval", "middleware", "guard"])
def test_each_langchain_decision_parses_and_round_trips(request_value: HoldRequest) -> None:
    for decision in lc_decisions(request_value):
        resume = lc.HITLResponse(decisions=[decision])
        RESPONSE.validate_python(resume, strict=True)
        parsed = parse_resume(resume, request_value)
        assert not isinstance(parsed, InvalidDecision), parsed
        assert parsed.type == decision["type"]
        back = to_hitl_decision(parsed)
        assert DECISION.validate_python(back) == decision
        assert back == decision
        assert parse_resume({"decisions": [back]}, request_value) == parsed


def test_parsed_values_are_typed() -> None:
    request = approval()
    edit = parse_resume({"decisions": [{"type": "edit", "edited_action": {
        "name": APPROVAL_ACTION, "args": {"draft": "shorter"}}}]}, request)
    assert edit == Edit(name=APPROVAL_ACTION, args={"draft": "shorter"}, edit_key="draft")
    assert isinstance(edit, Edit)
    assert edit.value == "shorter"
    assert parse_resume({"decisions": [{"type": "approve"}]}, request) == Approve()
    assert parse_resume({"decisions": [{"type": "reject", "message": "no"}]}, request) == Reject("no")
    # Agent Chat UI sends an empty reason as ""; that is no message.
    assert parse_resume({"decisions": [{"type": "reject", "message": ""}]}, request) == Reject()


def test_by_and_note_go_to_the_audit_fields_at_either_level() -> None:
    request = approval()
    outer = parse_resume({"decisions": [{"type": "approve"}], "by": " ana ", "note": "ok"}, request)
    inner = parse_resume({"decisions": [{"type": "approve", "by": "ana", "note": "ok"}]}, request)
    assert outer == inner == Approve(by="ana", note="ok")
    assert to_hitl_decision(inner) == {"type": "approve", "by": "ana", "note": "ok"}
    clash = parse_resume({"decisions": [{"type": "approve", "by": "bo"}], "by": "ana"}, request)
    assert clash == InvalidDecision("decisions[0].by", "differs from the top-level by")


def test_to_hitl_response_round_trips_with_the_audit_keys_beside_the_decisions() -> None:
    request = approval()
    for decision in [Approve(by="ana", note="ok"), Reject("no", by="bo"),
                     Edit(name=APPROVAL_ACTION, args={"draft": "v2"}, edit_key="draft", note="typo")]:
        response = to_hitl_response(decision)
        RESPONSE.validate_python(response)
        assert set(response) - {"decisions"} == {k for k in ("by", "note") if getattr(decision, k)}
        assert parse_resume(response, request) == decision


def test_require_by_refuses_an_anonymous_decision() -> None:
    request = approval()
    assert parse_resume({"decisions": [{"type": "approve"}]}, request, require_by=True) == \
        InvalidDecision("by", "required: a non-empty string naming who decided")
    assert parse_resume({"decisions": [{"type": "approve"}], "by": "ana"}, request,
                        require_by=True) == Approve(by="ana")


def test_edit_of_a_stop_may_echo_the_evidence_args() -> None:
    """Agent Chat UI prefills edited_action.args with every arg shown; the evidence is dropped."""
    request = stop("message")
    shown = dict(request["action_requests"][0]["args"], message="try the cached table")
    parsed = parse_resume({"decisions": [{"type": "edit", "edited_action": {
        "name": LIVENESS_ACTION, "args": shown}}]}, request)
    assert parsed == Edit(name=LIVENESS_ACTION, args={"message": "try the cached table"},
                          edit_key="message")


def test_a_guard_edit_from_a_form_field_may_send_the_update_as_json_text() -> None:
    parsed = parse_resume({"decisions": [{"type": "edit", "edited_action": {
        "name": LIVENESS_ACTION, "args": {"code": "tool_no_progress", "update": '{"limit": 5}'}}}]},
        stop("update"))
    assert parsed == Edit(name=LIVENESS_ACTION, args={"update": {"limit": 5}}, edit_key="update")


def test_an_edit_of_a_foreign_request_keeps_every_arg() -> None:
    """A request liveguard did not build (no edit_key): the action's args pass through whole."""
    request = {"action_requests": [{"name": "run_sql", "args": {"code": "SELECT 1", "step": 2}}],
               "review_configs": [{"action_name": "run_sql", "allowed_decisions": ["edit"]}]}
    parsed = parse_resume({"decisions": [{"type": "edit", "edited_action": {
        "name": "run_sql", "args": {"code": "SELECT 2", "step": 2}}}]}, request)
    assert parsed == Edit(name="run_sql", args={"code": "SELECT 2", "step": 2}, edit_key="")
    assert parsed.value == {"code": "SELECT 2", "step": 2}


# ------------------------------------------------------------------------- what review UIs send
def test_langchain_per_call_and_agent_inbox_answers_parse() -> None:
    """A bare decision (LangChain's per_call mode) and Agent Inbox's older HumanResponse list."""
    request = approval()
    assert parse_resume({"type": "approve"}, request) == Approve()
    assert parse_resume([{"type": "accept", "args": None}], request) == Approve()
    assert parse_resume([{"type": "ignore", "args": None}], request) == Reject()
    assert parse_resume([{"type": "edit", "args": {"action": APPROVAL_ACTION,
                                                   "args": {"draft": "v2"}}}], request) == \
        Edit(name=APPROVAL_ACTION, args={"draft": "v2"}, edit_key="draft")
    # Agent Inbox's "response" is LangChain's respond, which liveguard's holds do not allow.
    assert parse_resume([{"type": "response", "args": "call me"}], request) == \
        InvalidDecision("[0].type", "respond is not allowed here; allowed: approve, edit, reject")


@tool
def send_email(to: str, body: str) -> str:
    """Send an e-mail."""
    return f"sent to {to}"


def hitl_agent() -> Any:
    call = ToolCall(name="send_email", args={"to": "ana@example.com", "body": "hi"}, id="c1")
    script = (AIMessage(content="", tool_calls=[call]), AIMessage(content="done"))
    return create_agent(ScriptedChatModel(script=script), [send_email],
                        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})],
                        checkpointer=InMemorySaver())


def test_langchain_middlewares_own_request_parses_every_decision_and_accepts_ours_back() -> None:
    """LangChain's HumanInTheLoopMiddleware interrupt, answered through liveguard's parser.

    Its request allows all four decisions (respond included); each parses to the typed
    decision, and the decision liveguard serialises resumes LangChain's own middleware.
    """
    agent = hitl_agent()
    config: Any = {"configurable": {"thread_id": "lc-1"}}
    agent.invoke({"messages": [{"role": "user", "content": "mail ana"}]}, config)
    (pending,) = agent.get_state(config).interrupts
    request = pending.value
    REQUEST.validate_python(request, strict=True)
    answers = {
        "approve": {"type": "approve"},
        "edit": {"type": "edit", "edited_action": {"name": "send_email",
                                                   "args": {"to": "bo@example.com", "body": "hi"}}},
        "reject": {"type": "reject", "message": "wrong person"},
        "respond": {"type": "respond", "message": "already sent by hand"},
    }
    parsed = {k: parse_resume({"decisions": [v]}, request) for k, v in answers.items()}
    assert parsed["approve"] == Approve()
    assert parsed["edit"] == Edit(name="send_email", args={"to": "bo@example.com", "body": "hi"},
                                  edit_key="")
    assert parsed["reject"] == Reject("wrong person")
    assert parsed["respond"] == Respond("already sent by hand")
    for decision in parsed.values():
        assert not isinstance(decision, InvalidDecision)
        back = to_hitl_decision(decision)
        assert back == answers[decision.type]
        assert DECISION.validate_python(back, strict=True) == back
        assert parse_resume({"decisions": [back]}, request) == decision
    respond = parsed["respond"]
    assert not isinstance(respond, InvalidDecision)
    result = agent.invoke(Command(resume={"decisions": [to_hitl_decision(respond)]}), config)
    tool_reply = [m for m in result["messages"] if m.type == "tool"]
    assert [m.content for m in tool_reply] == ["already sent by hand"]


# ------------------------------------------------------------------------- malformed answers
@pytest.mark.parametrize(
    ("answer", "location"),
    [
        ("approve", "resume"),
        (None, "resume"),
        ({"action": "approve", "by": "ana"}, "resume"),  # the old dialect
        ({"decisions": {"type": "approve"}}, "decisions"),
        ({"decisions": []}, "decisions"),
        ({"decisions": [{"type": "approve"}, {"type": "approve"}]}, "decisions"),
        ({"decisions": ["approve"]}, "decisions[0]"),
        ({"decisions": [{"type": "accept"}]}, "decisions[0].type"),
        ({"decisions": [{"type": 3}]}, "decisions[0].type"),
        ({"decisions": [{"type": "respond", "message": "x"}]}, "decisions[0].type"),
        ({"decisions": [{"type": "approve", "message": "x"}]}, "decisions[0]"),
        ({"decisions": [{"type": "approve"}], "decision": 1}, "resume"),
        ({"decisions": [{"type": "approve", "by": 7}]}, "decisions[0].by"),
        ({"decisions": [{"type": "approve"}], "by": "  "}, "by"),
        ({"decisions": [{"type": "reject", "message": 5}]}, "decisions[0].message"),
        ({"decisions": [{"type": "edit"}]}, "decisions[0].edited_action"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": "delete_all", "args": {"draft": "x"}}}]},
         "decisions[0].edited_action.name"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": APPROVAL_ACTION, "args": "x"}}]},
         "decisions[0].edited_action.args"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": APPROVAL_ACTION, "args": {}}}]},
         "decisions[0].edited_action.args.draft"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": APPROVAL_ACTION,
                                                           "args": {"draft": "x", "to": "y"}}}]},
         "decisions[0].edited_action.args"),
        ([{"type": "edit", "args": "x"}], "[0].args"),
    ],
)
def test_a_malformed_answer_is_a_typed_error_value_never_an_exception(answer: Any, location: str) -> None:
    parsed = parse_resume(answer, approval())
    assert isinstance(parsed, InvalidDecision)
    assert parsed.location == location
    assert str(parsed).startswith(f"{location}: ")


@pytest.mark.parametrize(
    ("edit", "args", "location"),
    [
        ("message", {"message": ""}, "decisions[0].edited_action.args.message"),
        ("message", {"message": 3}, "decisions[0].edited_action.args.message"),
        ("update", {"update": {}}, "decisions[0].edited_action.args.update"),
        ("update", {"update": "x"}, "decisions[0].edited_action.args.update"),
        ("update", {"update": "[1]"}, "decisions[0].edited_action.args.update"),
        ("update", {"update": "{}"}, "decisions[0].edited_action.args.update"),
    ],
)
def test_a_stop_edit_needs_its_value(edit: str, args: dict[str, Any], location: str) -> None:
    parsed = parse_resume({"decisions": [{"type": "edit", "edited_action": {
        "name": LIVENESS_ACTION, "args": args}}]}, stop(edit))
    assert isinstance(parsed, InvalidDecision)
    assert parsed.location == location


def test_an_error_never_echoes_the_answers_text() -> None:
    """Errors name types and known keys; an unknown key is shown as a digest (it may be text)."""
    answers = [
        {"decisions": [{"type": "edit", "edited_action": {
            "name": APPROVAL_ACTION, "args": {"draft": "x", "ACME-SECRET-7f3a": 1}}}]},
        {"decisions": [{"type": "approve", "ACME-SECRET-7f3a": 1}]},
        {"decisions": [{"type": "approve"}], "ACME-SECRET-7f3a": 1},
        {"decisions": [{"type": "ACME-SECRET-7f3a"}]},
        {"decisions": [{"type": "reject", "message": "ACME-SECRET-7f3a"}], "by": ["ACME-SECRET-7f3a"]},
    ]
    for answer in answers:
        parsed = parse_resume(answer, approval())
        assert isinstance(parsed, InvalidDecision)
        assert "ACME" not in str(parsed), str(parsed)


def test_with_error_replaces_the_previous_error() -> None:
    first = with_error(approval(), InvalidDecision("decisions", "a"))
    second = with_error(first, InvalidDecision("by", "b"))
    assert second["error"] == "by: b"
    assert {k: v for k, v in second.items() if k != "error"} == approval()


# ------------------------------------------------------------------------- ask() in a real graph
class State(TypedDict, total=False):
    draft: str
    decisions: Annotated[list[Any], operator.add]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Mapping[str, Any], Coords]] = []

    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        self.calls.append((payload, coords))
        return NotifyOutcome(ok=True, attempts=1)


def review_graph(notifier: Recorder, errors: list[InvalidDecision] | None = None) -> Any:
    def on_error(error: InvalidDecision) -> None:
        if errors is None:
            raise RuntimeError("a failing hook")
        errors.append(error)

    def review(state: State) -> dict[str, Any]:
        request = approval_request(state["draft"], reasons=["autoapprove_off"])
        return {"decisions": [to_hitl_decision(ask(request, notifiers=[notifier], on_error=on_error))]}

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_ask_holds_as_a_pending_interrupt_and_notifies_once_per_raise() -> None:
    notifier = Recorder()
    graph = review_graph(notifier)
    config: Any = {"configurable": {"thread_id": "ask-1"}}
    graph.invoke({"draft": DRAFT}, config)
    (pending,) = graph.get_state(config).interrupts
    REQUEST.validate_python(pending.value, strict=True)
    assert flush(30)  # the notifiers run off the node, once the hold is stored
    assert len(notifier.calls) == 1
    payload, coords = notifier.calls[0]
    assert payload == pending.value
    assert coords == Coords(thread_id="ask-1", checkpoint_ns=coords.checkpoint_ns, interrupt_id=pending.id)
    assert coords.checkpoint_ns.startswith("review:")


def test_ask_reasks_a_malformed_answer_and_returns_each_decision_type() -> None:
    """A bad answer leaves the thread held (with the error shown); a good one is returned typed."""
    for answer, expected in [
        ({"type": "approve"}, Approve()),
        ({"type": "edit", "edited_action": {"name": APPROVAL_ACTION, "args": {"draft": "v2"}}},
         Edit(name=APPROVAL_ACTION, args={"draft": "v2"}, edit_key="draft")),
        ({"type": "reject", "message": "later"}, Reject("later")),
    ]:
        notifier = Recorder()
        errors: list[InvalidDecision] | None = [] if answer["type"] != "reject" else None
        graph = review_graph(notifier, errors)  # reject's run: on_error itself fails
        config: Any = {"configurable": {"thread_id": f"ask-{answer['type']}"}}
        graph.invoke({"draft": DRAFT}, config)
        assert flush(30)  # woken once the hold is stored; an answer before that delays the wake-up
        graph.invoke(Command(resume={"action": "approve"}), config)  # the old dialect: re-asked
        state = graph.get_state(config)
        (pending,) = state.interrupts
        assert pending.value["error"].startswith("resume: ")
        assert errors is None or [str(e) for e in errors] == [pending.value["error"]]
        REQUEST.validate_python(pending.value, strict=True)
        assert flush(30)
        assert len(notifier.calls) == 2
        assert notifier.calls[1][1].interrupt_id == pending.id
        assert not state.values.get("decisions")
        graph.invoke(Command(resume={"decisions": [answer], "by": "ana"}), config)
        final = graph.get_state(config)
        assert final.interrupts == ()
        assert final.values["decisions"] == [to_hitl_decision(_with_by(expected, "ana"))]
        assert flush(30)
        assert len(notifier.calls) == 2  # answering does not wake anyone again


class GatedSaver(InMemorySaver):
    """Stores an interrupt only once someone asked for it: the notify worker polling the saver
    (the hold is not stored yet), or a notifier being called (woken before the hold was stored)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()

    def get_tuple(self, config: Any) -> Any:
        if threading.current_thread().name == "liveguard-notify":
            self.asked.set()
        return super().get_tuple(config)

    def put_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        if any(channel == "__interrupt__" for channel, _ in writes):
            assert self.asked.wait(30), "nobody asked for the hold"
        super().put_writes(config, writes, task_id, task_path)

    def interrupts_stored(self) -> int:
        return sum(channel == "__interrupt__" for writes in list(self.writes.values())
                   for _task, channel, _value, _path in list(writes.values()))


def test_ask_wakes_the_person_only_once_the_interrupt_is_stored() -> None:
    """Issue 28, item 4: the notifier ran inside the node, before LangGraph stored the interrupt;
    now the worker waits until the checkpointer holds it. Deterministic: the saver stores the
    interrupt only once the worker has polled for it or a notifier was called."""
    saver = GatedSaver()
    stored_when_woken: list[int] = []

    def notifier(payload: Mapping[str, Any], coords: Coords, /) -> None:
        stored_when_woken.append(saver.interrupts_stored())
        saver.asked.set()

    def review(state: State) -> dict[str, Any]:
        request = approval_request(state["draft"], reasons=["autoapprove_off"])
        return {"decisions": [to_hitl_decision(ask(request, notifiers=[notifier]))]}

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "gated"}}
    graph.invoke({"draft": DRAFT}, config)
    assert flush(30)
    assert stored_when_woken == [1]
    assert len(graph.get_state(config).interrupts) == 1


def _with_by(decision: Any, by: str) -> Any:
    fields = {k: v for k, v in vars(decision).items() if k != "type"}
    return type(decision)(**{**fields, "by": by})


def test_the_new_modules_import_no_framework() -> None:
    """hitl, notify and results load without LangGraph, LangChain, httpx or LangSmith."""
    import subprocess
    import sys

    code = ("import sys, liveguard.live.hitl, liveguard.live.notify, liveguard.evaluate.results; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('langgraph', 'langchain', 'langchain_core', 'httpx', 'langsmith')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_aask_notifies_off_the_event_loop_and_holds() -> None:
    """The async twin: the same hold and re-ask; the notifier runs on the notify worker."""
    import asyncio
    import threading

    threads: list[int] = []
    notifier = Recorder()

    def recording(payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        threads.append(threading.get_ident())
        return notifier(payload, coords)

    async def review(state: State) -> dict[str, Any]:
        loop_threads.append(threading.get_ident())
        request = approval_request(state["draft"], reasons=["autoapprove_off"])
        return {"decisions": [to_hitl_decision(await aask(request, notifiers=[recording]))]}

    loop_threads: list[int] = []
    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "aask-1"}}

    async def run() -> Any:
        await graph.ainvoke({"draft": DRAFT}, config)
        assert await asyncio.to_thread(flush, 30)
        await graph.ainvoke(Command(resume={"decisions": []}), config)
        held = await graph.aget_state(config)
        await graph.ainvoke(Command(resume={"decisions": [{"type": "reject"}]}), config)
        return held, await graph.aget_state(config)

    held, final = asyncio.run(run())
    (pending,) = held.interrupts
    assert pending.value["error"].startswith("decisions: expected exactly one decision")
    assert flush(30)
    assert [c.interrupt_id for _, c in notifier.calls] == [notifier.calls[0][1].interrupt_id, pending.id]
    assert notifier.calls[1][0] == pending.value
    assert not set(threads) & set(loop_threads)
    assert final.values["decisions"] == [{"type": "reject"}]
