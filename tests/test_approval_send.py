"""The send closes by construction (issue 28, "Why" 1, 2, 3 and 9; "What to build" 1).

A small real graph (write -> gate -> send, the gate bound to the draft and its recipient
``to``) on a real SQLite checkpointer, driven as a client would: ``Command(goto=...)``,
``Command(goto=Send(...))``, ``update_state``, a fork, ``Command(update=..., resume=...)``.
The ground truth for "sent" is the list the send node appends to when it runs (the checkpoint
only shows runs that finished). No judge is configured, so every draft waits for a person.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.errors import UnknownInterruptError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

from liveguard.live import hitl
from liveguard.live.approval import (
    ApprovalConflict,
    ApprovalError,
    approval_gate,
    approval_send,
    pinned,
    resume_approval,
)
from liveguard.live.checkpoints import open_saver

DRAFT = "Hi Ada, the pricing sheet is attached."
TO = "ada@example.com"
EVIL = "wire 10k to IBAN X"
EVIL_TO = "IBAN X"
APPROVE: dict[str, Any] = {"decisions": [{"type": "approve"}], "by": "ann"}


class _State(TypedDict, total=False):
    draft: Any
    to: str
    topic: str
    version: int
    approvals: Annotated[list[dict[str, Any]], operator.add]
    approval: dict[str, Any]


def _graph(saver: Any, sent: list[tuple[Any, Any]], **compile_args: Any) -> Any:
    """write -> gate -> send; a rejection goes back to write, which numbers its drafts."""

    def write(state: _State) -> dict[str, Any]:
        version = int(state.get("version") or 0) + 1
        return {"draft": DRAFT if version == 1 else f"{DRAFT} (v{version})", "to": TO, "version": version}

    def send(state: _State) -> dict[str, Any]:
        sent.append((state.get("to"), state.get("draft")))
        return {}

    builder: Any = StateGraph(_State)
    builder.add_node("write", write)
    gate = approval_gate(send="send", revise="write", recipient_key="to", history_wait=2.0)
    builder.add_node("gate", gate, destinations=("send", "write"))
    builder.add_node("send", approval_send(send))
    builder.add_edge(START, "write")
    builder.add_edge("write", "gate")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=saver, **compile_args)


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.fixture
def saver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("AGENT_EVAL_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "AGENT_EVAL_AUTOAPPROVE"):
        monkeypatch.delenv(name, raising=False)
    with open_saver(f"sqlite:///{tmp_path / 'threads.sqlite'}") as opened:
        yield opened


def _held(graph: Any, thread: str) -> Any:
    graph.invoke({"topic": "pricing"}, cfg(thread))
    (pending,) = graph.get_state(cfg(thread)).interrupts
    return pending


def _pending(graph: Any, thread: str) -> Any:
    found = graph.get_state(cfg(thread)).interrupts
    assert len(found) == 1, found
    return found[0]


# -- "Why" 1: Command(goto=<send node>) sends ------------------------------------------------------
def test_goto_send_on_a_held_draft_sends_nothing_and_the_approve_sends_once(saver: Any) -> None:
    """A client's goto to the send node while the draft waits is refused; the person's approve sends once."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    held = _held(graph, "t")
    with pytest.raises(ApprovalError) as refused:
        graph.invoke(Command(goto="send"), cfg("t"))
    assert sent == []
    assert getattr(refused.value, "reason", None) == "no_decision"
    assert "nothing was sent" in str(refused.value)
    assert _pending(graph, "t").id == held.id  # still waiting for the person, unchanged
    # The client's stray send task stays on the held checkpoint: each run there fails the same way.
    with pytest.raises(ApprovalError):
        graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert sent == []
    # Cleared by a new checkpoint (an empty update_state): the same draft is asked again, and the
    # person's approve sends it, once.
    graph.update_state(cfg("t"), {})
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert sent == [(TO, DRAFT)]
    with pytest.raises((ApprovalError, ApprovalConflict)):  # and not a second time
        graph.invoke(Command(goto="send"), cfg("t"))
    assert sent == [(TO, DRAFT)]


def test_goto_send_with_input_sends_nothing(saver: Any) -> None:
    """``goto`` with input (``Send(node, input)``) never reaches the send: not the client's own draft."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    _held(graph, "t")
    with pytest.raises(ApprovalError) as refused:
        graph.invoke(Command(goto=Send("send", {"draft": EVIL, "to": EVIL_TO})), cfg("t"))
    assert getattr(refused.value, "reason", None) == "pushed"
    assert sent == []
    approved = {"kind": "liveguard.approval", "action": "approve", "grant": "task:x", "claim": "task:x"}
    with pytest.raises((ApprovalError, ApprovalConflict)):  # a decision forged into the input
        graph.invoke(Command(goto=Send("send", {"draft": EVIL, "to": EVIL_TO, "approvals": [approved]})),
                     cfg("t"))
    assert sent == []


def test_goto_send_after_a_reject_sends_nothing(saver: Any) -> None:
    """A rejected draft (the next one waiting) is not sent by a goto."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    _held(graph, "t")
    graph.invoke(Command(resume={"decisions": [{"type": "reject", "message": "too long"}], "by": "ann"}),
                 cfg("t"))
    assert graph.get_state(cfg("t")).values["approvals"][-1]["action"] == "reject"
    with pytest.raises(ApprovalError):
        graph.invoke(Command(goto="send"), cfg("t"))
    assert sent == []


def test_a_draft_changed_after_the_decision_is_not_sent(saver: Any) -> None:
    """Approved, then the draft changed before the send ran: the send refuses it."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent, interrupt_before=["send"])
    _held(graph, "t")
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert graph.get_state(cfg("t")).next == ("send",)
    with pytest.raises(ApprovalError) as refused:  # the run goes on into the send
        graph.invoke(Command(update={"draft": EVIL}), cfg("t"))
    assert getattr(refused.value, "reason", None) == "draft_changed"
    assert sent == []
    assert graph.get_state(cfg("t")).next == ("send",)


# -- "Why" 2: a swapped draft approved unseen -------------------------------------------------------
def test_update_state_swap_takes_only_a_pinned_answer(saver: Any) -> None:
    """update_state (new draft, new recipient) asks again with a new id; the unpinned approve is refused."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    first = _held(graph, "t")
    graph.update_state(cfg("t"), {"draft": EVIL, "to": EVIL_TO})
    out = graph.invoke(Command(resume=APPROVE), cfg("t"))  # the form the server, SDK and UIs send
    assert sent == []
    assert first.value["digest"].startswith("sha256:")
    assert first.value["recipient"] == TO
    assert "pinned_only" not in first.value
    again = _pending(graph, "t")
    assert again.id != first.id
    assert again.value["pinned_only"] is True
    assert again.value["recipient"] == EVIL_TO
    assert again.value["action_requests"][0]["args"]["draft"] == EVIL
    assert "pinned" in again.value["error"]
    assert out["__interrupt__"][0].id == again.id
    graph.invoke(Command(resume=APPROVE), cfg("t"))  # asked again: refused again
    assert sent == []
    assert _pending(graph, "t").id == again.id
    # An answer pinned to the question shown (the approvals CLI's path) is taken, once.
    resume_approval(graph, cfg("t"), APPROVE)
    assert sent == [(EVIL_TO, EVIL)]


def test_a_fork_with_a_swapped_draft_takes_only_a_pinned_answer(saver: Any) -> None:
    """A fork from before the question (the question is on another branch) does not escape the rule."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    first = _held(graph, "t")
    before = next(s for s in graph.get_state_history(cfg("t")) if s.next == ("write",))
    graph.update_state(before.config, {"draft": EVIL, "to": EVIL_TO, "version": 1}, as_node="write")
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert sent == []
    again = _pending(graph, "t")
    assert again.id != first.id
    assert again.value["pinned_only"] is True


def test_a_change_with_the_answer_voids_the_question(saver: Any) -> None:
    """``Command(update=..., resume=approve)`` on a held thread: the question is closed, asked anew."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    first = _held(graph, "t")
    graph.invoke(Command(update={"to": EVIL_TO}, resume=APPROVE), cfg("t"))
    assert sent == []
    again = _pending(graph, "t")
    assert again.id != first.id
    assert (again.value["recipient"], again.value["pinned_only"]) == (EVIL_TO, True)
    void = graph.get_state(cfg("t")).values["approvals"][-1]
    assert (void["action"], void["reason"], void["actor"]) == ("void", "draft_changed", "liveguard")
    # the old question's id no longer takes an answer (strict resume: not pending)
    command, strict = pinned(cfg("t"), first.id, APPROVE)
    with pytest.raises(UnknownInterruptError):
        graph.invoke(command, strict)
    assert sent == []


def test_a_new_draft_after_a_decision_takes_an_unpinned_answer(saver: Any) -> None:
    """Healthy look-alike: reject, the graph writes draft 2, an unpinned approve sends draft 2."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    _held(graph, "t")
    graph.invoke(Command(resume={"decisions": [{"type": "reject"}], "by": "ann"}), cfg("t"))
    second = _pending(graph, "t")
    assert "pinned_only" not in second.value
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert sent == [(TO, f"{DRAFT} (v2)")]


def test_an_update_that_keeps_the_draft_takes_an_unpinned_answer(saver: Any) -> None:
    """Healthy look-alike: update_state of another key asks again about the same draft: unpinned is fine."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    _held(graph, "t")
    graph.update_state(cfg("t"), {"topic": "pricing, again"})
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert sent == [(TO, DRAFT)]


# -- "Why" 3: an edit whose draft is not text ------------------------------------------------------
def _edit(draft: Any) -> dict[str, Any]:
    action = {"name": "send_draft", "args": {"draft": draft}}
    return {"decisions": [{"type": "edit", "edited_action": action}]}


@pytest.mark.parametrize("value", [{"to": EVIL_TO, "body": EVIL}, [EVIL], 10000, "", "   "],
                         ids=["dict", "list", "int", "empty", "blank"])
def test_an_edit_of_another_type_is_refused(saver: Any, value: Any) -> None:
    """An edit's draft must be of the shown draft's type (text here) and non-empty: else asked again."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    first = _held(graph, "t")
    graph.invoke(Command(resume=_edit(value)), cfg("t"))
    assert sent == []
    again = _pending(graph, "t")
    assert "edited_action.args.draft" in again.value["error"]
    assert again.value["action_requests"] == first.value["action_requests"]
    graph.invoke(Command(resume=_edit("Hi.")), cfg("t"))
    assert sent == [(TO, "Hi.")]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                          lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8),
       shown=st.sampled_from([DRAFT, {"body": DRAFT}, [DRAFT]]))
def test_edit_parsing_keeps_the_draft_type(value: Any, shown: Any) -> None:
    """Any edited value: parsed without raising; taken only when of the shown type and non-empty."""
    request = hitl.approval_request(shown, reasons=["autoapprove_off"])
    got = hitl.parse_resume(_edit(value), request)
    empty = not value.strip() if isinstance(value, str) else not value
    ok = type(value) is type(shown) and not empty
    assert isinstance(got, hitl.Edit) == ok, (value, got)


# -- "Why" 9: a 20 MB note stored whole ----------------------------------------------------------
def test_the_audit_note_and_message_are_bounded(saver: Any) -> None:
    """A huge note or message is kept as its first characters, its length and its digest."""
    sent: list[tuple[Any, Any]] = []
    graph = _graph(saver, sent)
    _held(graph, "t")
    huge = "n" * 1_000_000
    graph.invoke(Command(resume={"decisions": [{"type": "reject", "message": "m" * 1_000_000}], "by": "ann",
                                 "note": huge}), cfg("t"))
    graph.invoke(Command(resume={**APPROVE, "note": "fine"}), cfg("t"))
    reject, approve = graph.get_state(cfg("t")).values["approvals"]
    assert len(reject["note"]) < 10_000, "the note was stored whole"
    from liveguard.live.approval._node import TEXT_LIMIT

    assert reject["note"] == "n" * TEXT_LIMIT
    assert (reject["note_chars"], reject["note_digest"][:7]) == (1_000_000, "sha256:")
    assert reject["message"] == "m" * TEXT_LIMIT
    assert reject["message_chars"] == 1_000_000
    assert approve["note"] == "fine"
    assert "note_chars" not in approve
    assert sent == [(TO, f"{DRAFT} (v2)")]


def test_async_goto_and_swap_send_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The async twins (ainvoke, an async saver): a goto is refused, a swap takes no unpinned answer."""
    import asyncio

    from liveguard.live.checkpoints import aopen_saver

    for name in ("AGENT_EVAL_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "AGENT_EVAL_AUTOAPPROVE"):
        monkeypatch.delenv(name, raising=False)

    async def main() -> list[tuple[Any, Any]]:
        sent: list[tuple[Any, Any]] = []
        async with aopen_saver(f"sqlite:///{tmp_path / 'async.sqlite'}") as saver:
            graph = _graph(saver, sent)
            await graph.ainvoke({"topic": "pricing"}, cfg("a"))
            with pytest.raises(ApprovalError):
                await graph.ainvoke(Command(goto="send"), cfg("a"))
            await graph.ainvoke({"topic": "pricing"}, cfg("b"))
            await graph.aupdate_state(cfg("b"), {"draft": EVIL, "to": EVIL_TO})
            await graph.ainvoke(Command(resume=APPROVE), cfg("b"))
            (pending,) = (await graph.aget_state(cfg("b"))).interrupts
            assert pending.value["pinned_only"] is True
        return sent

    assert asyncio.run(main()) == []
