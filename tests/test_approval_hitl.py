"""The approval gate speaks LangChain's HITL protocol (issue 19, items 1 and 3; issue 20's twin bug).

A minimal real graph (write -> gate -> send) on a real SQLite checkpointer: the interrupt
value is validated against LangChain's own ``HITLRequest`` type and resumed with each
decision type as LangChain's own constructors build it. Notifiers are tested against a
local HTTP receiver on 127.0.0.1 (tests/test_notify.py's). No judge is configured, so the
verdict is unjudged and every draft waits for a person.
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain.agents.middleware import human_in_the_loop as lc
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import TypeAdapter

from liveguard.core.model import Step, Trajectory
from liveguard.evaluate.eval_graph import aevaluate_trajectory, evaluate_trajectory
from liveguard.live.approval import UNATTRIBUTED, approval_gate, approval_send
from liveguard.live.checkpoints import aopen_saver, open_saver
from liveguard.live.notify import Coords, WebhookNotifier, flush
from test_notify import SECRET, Hook, Sleeps

REQUEST = TypeAdapter(lc.HITLRequest)
DRAFT = "Hi Ada, the pricing sheet is attached."
NEW = "Hi Ada, the pricing sheet is attached. Best, Ann"


class _State(TypedDict, total=False):
    draft: str
    sent: Annotated[list[str], operator.add]
    steps: Annotated[list[str], operator.add]
    approvals: Annotated[list[dict[str, Any]], operator.add]
    approval: dict[str, Any]


def _graph(saver: Any, *, loop: bool = False, **gate: Any) -> Any:
    """write -> [a -> b -> a -> b ->] gate -> send (approval_send): the send appends to ``sent``."""
    builder: Any = StateGraph(_State)
    builder.add_node("write", lambda s: {"draft": DRAFT, "steps": ["write"]})
    builder.add_node("gate", approval_gate(send="send", **gate), destinations=("send", END))
    builder.add_node("send", approval_send(lambda s: {"sent": [s["draft"]], "steps": ["send"]}))
    builder.add_edge(START, "write")
    if loop:  # an a-b-a-b run: with max_revisits=1, node_revisit_cycle
        builder.add_node("a", lambda s: {"steps": ["a"]})
        builder.add_node("b", lambda s: {"steps": ["b"]})
        builder.add_edge("write", "a")
        builder.add_conditional_edges("b", lambda s: "a" if s["steps"].count("b") < 2 else "gate",
                                      ["a", "gate"])
        builder.add_edge("a", "b")
    else:
        builder.add_edge("write", "gate")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=saver)


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("AGENT_EVAL_API_KEY", "AGENT_EVAL_AUTOAPPROVE", "AGENT_EVAL_MAX_REVISITS"):
        monkeypatch.delenv(name, raising=False)
    return f"sqlite:///{tmp_path / 'threads.sqlite'}"


def claims(saver: Any) -> list[tuple[str, str]]:
    rows = saver.conn.execute("SELECT decided_by, action FROM liveguard_approval_claims "
                              "WHERE claim_key LIKE 'task:%'").fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


# ------------------------------------------------------------------------- the interrupt value
def test_the_held_draft_is_a_langchain_hitl_request(url: str) -> None:
    """Strictly valid against LangChain's HITLRequest, after a JSON round trip too (the server's)."""
    with open_saver(url) as saver:
        out = _graph(saver).invoke({}, cfg("shape"))
        (held,) = out["__interrupt__"]
        pending = _graph(saver).get_state(cfg("shape")).interrupts
    value = held.value
    for candidate in (value, json.loads(json.dumps(value))):
        valid = REQUEST.validate_python(candidate, strict=True)
        (action,), (review,) = valid["action_requests"], valid["review_configs"]
        assert (action["name"], action["args"]) == ("send_draft", {"draft": DRAFT})
        assert review == {"action_name": "send_draft", "allowed_decisions": ["approve", "edit", "reject"]}
        assert "auto-approval is off" in action["description"]
        assert "evidence is missing [unjudged:no_api_key]" in action["description"]
    assert value["kind"] == "liveguard.approval"
    assert value["reasons"] == ["autoapprove_off", "unjudged:no_api_key"]
    assert value["interrupt_id"] == held.id == pending[0].id, "the value names its own interrupt"
    assert value["verdict"]["run_id"] == "shape"


# ------------------------------------------------------------------------- each decision type
DECISIONS = {
    "approve": lc.ApproveDecision(type="approve"),
    "edit": lc.EditDecision(type="edit", edited_action=lc.Action(name="send_draft", args={"draft": NEW})),
    "reject": lc.RejectDecision(type="reject", message="not this week"),
}


@pytest.mark.parametrize("kind", sorted(DECISIONS))
def test_each_decision_type_resumes_the_held_draft(url: str, kind: str) -> None:
    """approve sends the draft, edit sends the edited one, reject sends nothing; each once, audited."""
    response = lc.HITLResponse(decisions=[DECISIONS[kind]])
    with open_saver(url) as saver:
        graph = _graph(saver)
        graph.invoke({}, cfg(kind))
        out = graph.invoke(Command(resume={**response, "by": "ann", "note": "checked"}), cfg(kind))
        assert "__interrupt__" not in out
        assert out["sent"] == {"approve": [DRAFT], "edit": [NEW], "reject": []}.get(kind, [])
        (record,) = out["approvals"]
        assert (record["actor"], record["action"], record["by"], record["note"]) == (
            "person", kind, "ann", "checked")
        assert record.get("message") == ("not this week" if kind == "reject" else None)
        assert ("edited_digest" in record) == (kind == "edit")
        assert NEW not in json.dumps(record)
        assert DRAFT not in json.dumps(record)
        assert claims(saver) == [("ann", kind)]
        # answered: nothing pending, and running the thread again sends nothing more
        assert graph.get_state(cfg(kind)).interrupts == ()
        assert graph.invoke(None, cfg(kind)).get("sent", []) == out["sent"]


def test_respond_is_refused_and_asked_again(url: str) -> None:
    """``respond`` is not an allowed decision here: a re-ask with the error, no claim, no send."""
    respond = lc.HITLResponse(decisions=[lc.RejectDecision(type="reject")])
    respond["decisions"] = [{"type": "respond", "message": "call me"}]  # type: ignore[list-item]
    with open_saver(url) as saver:
        graph = _graph(saver)
        first = graph.invoke({}, cfg("respond"))["__interrupt__"][0]
        out = graph.invoke(Command(resume={**respond, "by": "ann"}), cfg("respond"))
        (again,) = out["__interrupt__"]
        assert again.value["error"] == "decisions[0].type: respond is not allowed here; allowed: " \
            "approve, edit, reject"
        assert again.id != first.id
        assert again.value["interrupt_id"] == again.id
        REQUEST.validate_python(again.value, strict=True)
        assert out["sent"] == []
        assert claims(saver) == []
        assert graph.get_state(cfg("respond")).interrupts[0].id == again.id
        done = graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "bo"}), cfg("respond"))
        assert done["sent"] == [DRAFT]
        assert [(r["action"], r["by"]) for r in done["approvals"]] == [("approve", "bo")]


def test_an_answer_without_by_is_recorded_unattributed(url: str) -> None:
    """Review UIs send no ``by``: the decision goes through, recorded as nobody's."""
    with open_saver(url) as saver:
        graph = _graph(saver)
        graph.invoke({}, cfg("anon"))
        out = graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), cfg("anon"))
        assert out["sent"] == [DRAFT]
        assert [(r["actor"], r["by"]) for r in out["approvals"]] == [("person", None)]
        assert claims(saver) == [(UNATTRIBUTED, "approve")]


# ------------------------------------------------------------------------- waking a person
@pytest.fixture
def hooks() -> Iterator[list[Hook]]:
    made: list[Hook] = []
    yield made
    for hook in made:
        hook.close()


def _webhook(url: str, sleeps: Sleeps | None = None) -> WebhookNotifier:
    return WebhookNotifier(url=url, secret=SECRET, sleep=sleeps or Sleeps(), retries=1)


def test_a_held_draft_wakes_the_webhook_once_per_hold(url: str, hooks: list[Hook]) -> None:
    """One POST when the draft is held; none when a run replays the hold or an answer decides it;
    a re-ask after a malformed answer is a new hold (a new interrupt id): one more."""
    hook = Hook([200])
    hooks.append(hook)
    with open_saver(url) as saver:
        graph = _graph(saver, notifiers=[_webhook(hook.url)])
        held = graph.invoke({}, cfg("woken"))["__interrupt__"][0]
        assert flush(30)  # the notifiers run off the step, once the hold is stored
        assert len(hook.requests) == 1
        body = json.loads(hook.requests[0][1])
        assert (body["kind"], body["thread_id"]) == ("liveguard.approval", "woken")
        assert body["interrupt_id"] == held.id
        assert body["allowed_decisions"] == ["approve", "edit", "reject"]
        assert DRAFT not in hook.requests[0][1].decode()
        again = graph.invoke(None, cfg("woken"))  # a run without an answer: the same hold, replayed
        assert again["__interrupt__"][0].id == held.id
        assert flush(30)
        assert len(hook.requests) == 1, "a replayed hold woke the person again"
        reasked = graph.invoke(Command(resume={"decisions": "approve"}), cfg("woken"))["__interrupt__"][0]
        assert flush(30)
        assert len(hook.requests) == 2
        assert json.loads(hook.requests[1][1])["interrupt_id"] == reasked.id != held.id
        done = graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "ann"}), cfg("woken"))
        assert done["sent"] == [DRAFT]
        assert flush(30)
        assert len(hook.requests) == 2


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: connecting is refused


def test_a_dead_webhook_or_a_failing_notifier_leaves_the_hold_pending(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The notifiers fail (refused connection, retried; a notifier that raises): logged, and the
    draft is still held, unclaimed and unsent, until a person decides."""
    caplog.set_level(logging.WARNING, logger="liveguard")
    sleeps = Sleeps()
    seen: list[Coords] = []

    def broken(payload: Any, coords: Coords) -> None:
        seen.append(coords)
        raise RuntimeError("boom")

    dead = _webhook(f"http://127.0.0.1:{_dead_port()}/hook", sleeps)
    with open_saver(url) as saver:
        graph = _graph(saver, notifiers=[dead, broken])
        out = graph.invoke({}, cfg("dead"))
        (held,) = out["__interrupt__"]
        assert flush(30)
        assert out["sent"] == []
        assert claims(saver) == []
        assert graph.get_state(cfg("dead")).interrupts[0].id == held.id
        assert seen == [Coords(thread_id="dead", checkpoint_ns=seen[0].checkpoint_ns, interrupt_id=held.id)]
        assert seen[0].checkpoint_ns.startswith("gate:")
        assert sleeps.delays, "the dead webhook was retried"
        logged = "\n".join(r.getMessage() for r in caplog.records)
        assert "notifier=WebhookNotifier thread=dead" in logged
        assert "notifier=function thread=dead interrupt" in logged
        assert "failed=raised:RuntimeError" in logged
        assert DRAFT not in logged
        done = graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "ann"}), cfg("dead"))
        assert done["sent"] == [DRAFT]


def test_the_async_gate_wakes_the_webhook_once(url: str, hooks: list[Hook]) -> None:
    hook = Hook([200])
    hooks.append(hook)

    async def scenario() -> tuple[Any, Any]:
        async with aopen_saver(url) as saver:
            graph = _graph(saver, notifiers=[_webhook(hook.url)])
            held = (await graph.ainvoke({}, cfg("a-woken")))["__interrupt__"][0]
            await graph.ainvoke(None, cfg("a-woken"))
            done = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}], "by": "ann"}),
                                       cfg("a-woken"))
            return held, done

    held, done = asyncio.run(scenario())
    assert flush(30)
    assert [json.loads(body)["interrupt_id"] for _h, body in hook.requests] == [held.id]
    assert done["sent"] == [DRAFT]


def test_a_trickling_webhook_never_delays_the_hold(url: str, hooks: list[Hook],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Issue 28, case 5: the receiver trickles its answer (a byte every 0.1 s, until released).
    The step returned and the hold is stored while it still trickles, and the attempt ends at
    its own deadline (``timeout=1``), before the receiver does: nothing waited for it."""
    caplog.set_level(logging.WARNING, logger="liveguard.notify")
    hook = Hook([200], trickle=True)
    hooks.append(hook)
    webhook = WebhookNotifier(url=hook.url, secret=SECRET, timeout=1, retries=0)
    with open_saver(url) as saver:
        graph = _graph(saver, notifiers=[webhook])
        held = graph.invoke({}, cfg("slow"))["__interrupt__"][0]
        assert not hook.finished.is_set(), "the approval step waited for the webhook"
        assert graph.get_state(cfg("slow")).interrupts[0].id == held.id
        assert flush(30), "the attempt was not cut off at its deadline"
        assert not hook.finished.is_set(), "the attempt waited for the trickling receiver"
        assert [json.loads(body)["interrupt_id"] for _h, body in hook.requests] == [held.id]
        assert "thread=slow" in caplog.text
        assert "failed=timeout attempts=1" in caplog.text
        hook.release.set()
        done = graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "ann"}), cfg("slow"))
        assert done["sent"] == [DRAFT]


def test_the_person_is_woken_after_the_hold_is_stored(url: str, hooks: list[Hook]) -> None:
    """Issue 28, case 5: the hold is stored first, then the person is notified; whoever answers
    the webhook at once finds the thread waiting (it used to be woken before the hold was stored)."""
    with open_saver(url) as saver:
        reader = _graph(saver)
        seen: list[list[str]] = []

        def answer_at_once(headers: dict[str, str]) -> None:
            seen.append([i.id for i in reader.get_state(cfg("eager")).interrupts])

        hook = Hook([200], on_request=answer_at_once)
        hooks.append(hook)
        graph = _graph(saver, notifiers=[_webhook(hook.url)])
        held = graph.invoke({}, cfg("eager"))["__interrupt__"][0]
        assert flush(30)
        assert seen == [[held.id]]


def test_a_notifier_must_be_callable() -> None:
    from liveguard.live.approval import ApprovalError

    with pytest.raises(ApprovalError, match=r"notifiers\[1\] is not callable"):
        approval_gate(send="send", notifiers=[lambda p, c: None, "https://hooks.example/x"])


# ------------------------------------------------------------------------- sync and async agree
ABAB = Trajectory(run_id="abab", graph="g",
                  steps=[Step(node="a", summary="one"), Step(node="b", summary="two"),
                         Step(node="a", summary="three"), Step(node="b", summary="four")])


def _codes(verdict: Any) -> list[str]:
    return sorted({v.code for v in verdict.violations})


def test_sync_and_async_evaluation_agree_under_the_environments_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 20: ``AGENT_EVAL_MAX_REVISITS=1`` and no policy: both paths apply the environment's."""
    monkeypatch.delenv("AGENT_EVAL_API_KEY", raising=False)
    monkeypatch.setenv("AGENT_EVAL_MAX_REVISITS", "1")
    sync = evaluate_trajectory(ABAB)
    asynchronous = asyncio.run(aevaluate_trajectory(ABAB))
    assert "node_revisit_cycle" in _codes(sync)
    assert _codes(asynchronous) == _codes(sync)
    assert (asynchronous.passed, asynchronous.reason) == (sync.passed, sync.reason)


def test_the_approval_steps_sync_and_async_bodies_agree(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same a-b-a-b thread held by ``invoke`` and by ``ainvoke``: the same codes and reasons."""
    monkeypatch.setenv("AGENT_EVAL_MAX_REVISITS", "1")
    with open_saver(url) as saver:
        sync = _graph(saver, loop=True).invoke({}, cfg("sync"))["__interrupt__"][0].value

    async def held() -> Any:
        async with aopen_saver(url) as saver:
            return (await _graph(saver, loop=True).ainvoke({}, cfg("async")))["__interrupt__"][0].value

    asynchronous = asyncio.run(held())

    def found(value: Any) -> list[str]:
        return sorted({v["code"] for v in value["verdict"]["violations"]})

    assert "node_revisit_cycle" in found(sync)
    assert (found(asynchronous), asynchronous["reasons"]) == (found(sync), sync["reasons"])
