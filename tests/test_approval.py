"""Draft-first approval, end to end: the campaign graph, real checkpointers, the scripted judge server.

Every run goes through the real approval step (liveguard.live.approval) on a real saver: a
SQLite file (sync SqliteSaver and AsyncSqliteSaver), InMemorySaver, and a real PostgreSQL
server (tests/pg_server.py). Judges are the ``openai`` client against tests/fake_openai.py
on 127.0.0.1. Sends are counted from the checkpoints: every ``send_touch`` task that ran
leaves a write to ``sent`` on the checkpoint it ran from, whichever fork it is on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from fake_openai import FakeOpenAI
from graphs import campaign
from liveguard.core.model import Step, Trajectory
from liveguard.evaluate.eval_graph import aevaluate_trajectory, evaluate_trajectory
from liveguard.evaluate.rows import RunRow
from liveguard.live.approval import (
    KIND,
    ApprovalConflict,
    ApprovalError,
    approval_gate,
    aresume_approval,
    draft_digest,
    parse_decision,
    read_thread,
    resume_approval,
)
from liveguard.live.checkpoints import aclaim, aopen_saver, claim, open_saver
from liveguard.readers.checkpoints import thread_to_trajectory
from pg_server import postgres_url  # noqa: F401 - the throwaway PostgreSQL server fixture

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "approval_worker.py"
LIVEGUARD = Path(sys.executable).with_name("liveguard")
GOOD = {"score": 0.9, "confidence": 0.9, "reason": "fine"}
ROW_KEYS = set(RunRow(source="x").as_json()) - {"error"} | {"passed"}
LOOP_CODES = ["content_cycle", "excessive_loop", "node_revisit_cycle", "repeated_content"]


# -- helpers -----------------------------------------------------------------------------------
@pytest.fixture
def judges(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """Judges that answer 0.9 from the scripted server; auto-approve left to each test."""
    fake_openai.default_answer = dict(GOOD)
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("AGENT_EVAL_API_KEY", "test-key")
    monkeypatch.setenv("AGENT_EVAL_MODEL", "fake-judge")
    monkeypatch.delenv("AGENT_EVAL_CHECKPOINT_URL", raising=False)
    return fake_openai


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'threads.sqlite'}"


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 100}


def sends(saver: Any, thread: str) -> int:
    """How many send_touch tasks ran in this thread, on every fork of its history."""
    seen = set()
    for tup in saver.list({"configurable": {"thread_id": thread}}):
        for task, channel, _value in tup.pending_writes or ():
            if channel == "sent":
                seen.add((tup.config["configurable"]["checkpoint_id"], task))
    return len(seen)


def start(saver: Any, scenario: str, thread: str) -> dict[str, Any]:
    graph = campaign.build_graph(scenario, checkpointer=saver)
    out: dict[str, Any] = graph.invoke(campaign.initial_input(scenario), cfg(thread))
    return out


def resume(saver: Any, scenario: str, thread: str, answer: Any) -> dict[str, Any]:
    graph = campaign.build_graph(scenario, checkpointer=saver)
    out: dict[str, Any] = graph.invoke(Command(resume=answer), cfg(thread))
    return out


def payload_of(out: dict[str, Any]) -> dict[str, Any]:
    (interrupt,) = out["__interrupt__"]
    value: dict[str, Any] = interrupt.value
    return value


def worker(url: str, thread: str, scenario: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), url, thread, scenario, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result_of(proc: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-3000:]
    parsed: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return parsed


# -- the decision ------------------------------------------------------------------------------
def test_healthy_run_with_autoapprove_and_good_judges_sends_without_pause(
    judges: FakeOpenAI, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    with open_saver(sqlite_url) as saver:
        out = start(saver, "healthy", "auto")
        assert "__interrupt__" not in out
        assert out["sent"].startswith("v2:")
        (record,) = out["approvals"]
        assert (record["actor"], record["action"], record["by"]) == ("auto", "approve", "liveguard")
        assert record["draft_digest"] == draft_digest(out["sent"])
        assert out["approval"]["passed"] is True
        assert out["approval"]["score"] == pytest.approx(0.9)
        assert sends(saver, "auto") == 1
    assert judges.requests, "the verdict must have been judged"


def test_without_autoapprove_every_send_pauses(judges: FakeOpenAI, sqlite_url: str) -> None:
    with open_saver(sqlite_url) as saver:
        out = start(saver, "healthy", "manual")
        payload = payload_of(out)
        assert payload["reasons"] == ["autoapprove_off"]
        assert payload["verdict"]["passed"] is True
        assert "sent" not in out
        assert sends(saver, "manual") == 0
        state = campaign.build_graph("healthy", checkpointer=saver).get_state(cfg("manual"))
        assert state.next == ("approve_send",)


def test_interrupt_payload_shape(judges: FakeOpenAI, sqlite_url: str) -> None:
    with open_saver(sqlite_url) as saver:
        out = start(saver, "ping_pong", "shape")
    payload = payload_of(out)
    assert set(payload) == {"action_requests", "review_configs", "kind", "codes", "reasons", "edit_key",
                            "interrupt_id", "verdict", "digest", "recipient"}
    assert payload["kind"] == KIND
    (action,) = payload["action_requests"]
    assert (action["name"], action["args"]) == ("send_draft", {"draft": out["draft"]})
    assert "content_cycle" in action["description"]
    assert out["draft"] not in action["description"]
    assert payload["review_configs"] == [{"action_name": "send_draft",
                                          "allowed_decisions": ["approve", "edit", "reject"]}]
    assert payload["codes"] == LOOP_CODES
    assert payload["interrupt_id"] == out["__interrupt__"][0].id
    row = payload["verdict"]
    assert set(row) == ROW_KEYS
    assert row["run_id"] == "shape"
    assert row["graph"] == "campaign"
    assert row["passed"] is False
    for violation in row["violations"]:
        assert set(violation) == {"code", "severity", "step", "node", "count"}
    assert {"source", "reason", "judged", "levels"} <= set(row["provenance"])
    assert payload["reasons"] == ["autoapprove_off", *[f"hard:{c}" for c in LOOP_CODES]]


def test_looping_thread_is_never_sent_without_a_person(
    judges: FakeOpenAI, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    with open_saver(sqlite_url) as saver:
        out = start(saver, "ping_pong", "loop")
        payload = payload_of(out)
        assert payload["reasons"] == [f"hard:{c}" for c in LOOP_CODES]
        assert sends(saver, "loop") == 0
        # Invoking again without a decision does not send either.
        again = campaign.build_graph("ping_pong", checkpointer=saver).invoke(None, cfg("loop"))
        assert "sent" not in again
        assert sends(saver, "loop") == 0
    assert judges.requests == [], "a hard violation costs no judge call"


def test_unjudged_run_is_held_with_the_reason(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")  # but no key: the judges cannot run
    with open_saver(sqlite_url) as saver:
        out = start(saver, "healthy", "nokey")
    assert "unjudged:no_api_key" in payload_of(out)["reasons"]
    assert "sent" not in out


# -- person's decisions ------------------------------------------------------------------------
def test_approve_sends_once_and_keeps_an_audit_record(
    judges: FakeOpenAI, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="liveguard")
    with open_saver(sqlite_url) as saver:
        draft = start(saver, "ping_pong", "approve")["draft"]
        requests = len(judges.requests)
        out = resume(saver, "ping_pong", "approve", approve("ann", note="ok for once"))
        assert out["sent"] == draft
        (record,) = out["approvals"]
        assert record["actor"] == "person"
        assert (record["action"], record["by"], record["note"]) == ("approve", "ann", "ok for once")
        assert record["codes"] == LOOP_CODES
        assert record["draft_digest"] == draft_digest(draft)
        assert record["at"].endswith("+00:00")
        assert draft not in json.dumps(record)
        assert sends(saver, "approve") == 1
        # Durable: the record is in the thread's checkpoint.
        state = campaign.build_graph("ping_pong", checkpointer=saver).get_state(cfg("approve"))
        assert state.values["approvals"] == [record]
    assert len(judges.requests) == requests, "a resume reuses the verdict the person saw"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "thread=approve" in logged
    assert draft_digest(draft) in logged
    assert draft not in logged
    assert "Ada Park" not in logged


def test_reject_goes_back_to_revise_and_sends_nothing(judges: FakeOpenAI, sqlite_url: str) -> None:
    with open_saver(sqlite_url) as saver:
        start(saver, "healthy", "reject")
        out = resume(saver, "healthy", "reject",
                     {"decisions": [{"type": "reject"}], "by": "bob", "note": "tone"})
        assert "sent" not in out
        assert out["draft"].startswith("v3:"), "compose_touch wrote a new draft"
        assert [r["action"] for r in out["approvals"]] == ["reject"]
        assert payload_of(out)["kind"] == KIND, "the new draft waits for approval again"
        assert sends(saver, "reject") == 0


class _Plain(TypedDict, total=False):
    draft: str
    sent: str
    approvals: list[dict[str, Any]]
    approval: dict[str, Any]


def _plain_graph(saver: Any, **options: Any) -> Any:
    """write -> gate -> send: a minimal graph around the approval step (no revise node)."""
    builder: Any = StateGraph(_Plain)
    builder.add_node("write", lambda s: {"draft": "hello"})
    builder.add_node("gate", approval_gate(send="send", **options), destinations=("send", END))
    builder.add_node("send", lambda s: {"sent": s["draft"]})
    builder.add_edge(START, "write")
    builder.add_edge("write", "gate")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=saver)


def test_reject_without_revise_ends_the_run() -> None:
    graph = _plain_graph(InMemorySaver())
    graph.invoke({}, cfg("t"))
    out = graph.invoke(Command(resume={"decisions": [{"type": "reject"}], "by": "x"}), cfg("t"))
    assert "sent" not in out
    assert "__interrupt__" not in out
    assert graph.get_state(cfg("t")).next == ()


def test_edit_replaces_the_draft_then_sends(judges: FakeOpenAI, sqlite_url: str) -> None:
    new = "v9: Hi Ada, short and with an unsubscribe link."
    with open_saver(sqlite_url) as saver:
        old = start(saver, "ping_pong", "edit")["draft"]
        out = resume(saver, "ping_pong", "edit", edit_answer(new, by="cy"))
        assert out["sent"] == new
        (record,) = out["approvals"]
        assert (record["draft_digest"], record["edited_digest"]) == (draft_digest(old), draft_digest(new))
        assert new not in json.dumps(record)
        assert sends(saver, "edit") == 1


def approve(by: str | None = None, **extra: Any) -> dict[str, Any]:
    """LangChain's HITLResponse approving, ``by`` (and ``note``) beside ``decisions``."""
    return {"decisions": [{"type": "approve"}], **({"by": by} if by is not None else {}), **extra}


APPROVE_EDITED = {"type": "approve", "edited_action": {"name": "send_draft", "args": {"draft": "x"}}}
BAD_ANSWERS = [
    pytest.param(approve("  "), "by: expected a non-empty string", id="blank-by"),
    pytest.param({"decisions": [{"type": "send"}], "by": "ann"}, "decisions[0].type: expected one of",
                 id="unknown-type"),
    pytest.param({"decisions": [{"type": "respond", "message": "call me"}], "by": "ann"},
                 "decisions[0].type: respond is not allowed here", id="respond-refused"),
    pytest.param("approve", "resume: expected", id="not-a-dict"),
    pytest.param({"action": "approve", "by": "ann"}, "resume: expected", id="old-dialect"),
    pytest.param(approve(7), "by: expected a string", id="by-wrong-type"),
    pytest.param(approve("a\x00b"), "by: contains a control character", id="by-control-char"),
    pytest.param(approve("ann", note=3), "note: expected a string", id="note-wrong-type"),
    pytest.param({"decisions": [{"type": "edit", "edited_action": {"name": "send_draft", "args": {}}}],
                  "by": "ann"}, "decisions[0].edited_action.args.draft: required", id="edit-without-draft"),
    pytest.param({"decisions": [{"type": "edit", "edited_action": {"name": "wire_money",
                                                                    "args": {"draft": "x"}}}], "by": "ann"},
                 "decisions[0].edited_action.name", id="edit-renames-the-action"),
    pytest.param({"decisions": [APPROVE_EDITED], "by": "ann"}, "unknown key(s) edited_action for approve",
                 id="draft-without-edit"),
    pytest.param({"decisions": [{"type": "approve"}, {"type": "approve"}], "by": "ann"},
                 "decisions: expected exactly one decision", id="two-decisions"),
    pytest.param({"decisions": [{"type": "approve"}], "by": "ann", "extra": 1}, "unknown key",
                 id="unknown-key"),
]


def edit_answer(draft: str, by: str = "ann") -> dict[str, Any]:
    edit = {"type": "edit", "edited_action": {"name": "send_draft", "args": {"draft": draft}}}
    return {"decisions": [edit], "by": by}


@pytest.mark.parametrize(("answer", "message"), BAD_ANSWERS)
def test_bad_resume_is_rejected_and_the_thread_stays_interrupted(
    judges: FakeOpenAI, sqlite_url: str, answer: Any, message: str
) -> None:
    """A malformed answer is stored, never claimed, never sent on: the thread is asked again
    (a new interrupt, its value the same request plus ``error``), and a valid answer then
    sends once."""
    with open_saver(sqlite_url) as saver:
        out0 = start(saver, "ping_pong", "bad")
        first = payload_of(out0)
        with pytest.raises(ApprovalError, match=re.escape(message)):
            parse_decision(answer, first)
        out = resume(saver, "ping_pong", "bad", answer)
        again = payload_of(out)
        assert message in again["error"]
        same = {"error", "interrupt_id"}
        assert {k: v for k, v in again.items() if k not in same} == {
            k: v for k, v in first.items() if k not in same}
        assert again["interrupt_id"] == out["__interrupt__"][0].id != first["interrupt_id"]
        assert "sent" not in out
        assert sends(saver, "bad") == 0
        state = campaign.build_graph("ping_pong", checkpointer=saver).get_state(cfg("bad"))
        assert state.next == ("approve_send",)
        # nothing was claimed: a malformed answer decides nothing
        assert saver.conn.execute("SELECT claim_key FROM liveguard_approval_claims "
                                  "WHERE claim_key NOT LIKE 'asked:%'").fetchall() == []
        # A valid answer afterwards is taken, once.
        done = resume(saver, "ping_pong", "bad", approve("ann"))
        assert done["sent"] == done["draft"]
        assert [r["by"] for r in done["approvals"]] == ["ann"]
        assert sends(saver, "bad") == 1


def test_no_readable_history_is_held_never_auto_sent(
    judges: FakeOpenAI, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """durability="exit" writes no checkpoint during the run: no evidence, so a person decides."""
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    with open_saver(sqlite_url) as saver:
        graph = _plain_graph(saver, history_wait=0.2)
        out = graph.invoke({}, cfg("exit"), durability="exit")
        payload = payload_of(out)
        assert payload["reasons"] == ["unjudged:history_unavailable"]
        assert payload["verdict"]["passed"] is None
        assert "sent" not in out
        # The same graph with per-step checkpoints is judged and auto-approved.
        assert graph.invoke({}, cfg("async"))["sent"] == "hello"


def test_a_failing_evaluation_holds_the_draft_and_the_run_goes_on(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    monkeypatch.setenv("AGENT_EVAL_BASE_URL", "not a url")  # JudgeConfig.from_env raises
    with open_saver(sqlite_url) as saver:
        out = _plain_graph(saver).invoke({}, cfg("evalerr"))
    assert payload_of(out)["reasons"] == ["unjudged:eval_error"]
    assert "sent" not in out


def test_a_graph_without_checkpointer_is_refused() -> None:
    graph = _plain_graph(None)
    with pytest.raises(ApprovalError, match="needs a checkpointer"):
        graph.invoke({}, cfg("none"))


@pytest.mark.parametrize(("answer", "message"), BAD_ANSWERS[:5])
def test_resume_approval_raises_before_resuming(
    judges: FakeOpenAI, sqlite_url: str, answer: Any, message: str
) -> None:
    with open_saver(sqlite_url) as saver:
        graph = campaign.build_graph("ping_pong", checkpointer=saver)
        first = payload_of(graph.invoke(campaign.initial_input("ping_pong"), cfg("checked")))
        before = len(list(saver.list(None)))
        with pytest.raises(ApprovalError, match=re.escape(message)):
            resume_approval(graph, cfg("checked"), answer)
        assert len(list(saver.list(None))) == before, "nothing was resumed"
        assert "error" not in payload_of({"__interrupt__": graph.get_state(cfg("checked")).interrupts})
        assert graph.get_state(cfg("checked")).interrupts[0].value == first
        done = resume_approval(graph, cfg("checked"), {"decisions": [{"type": "approve"}], "by": "ann"})
        assert done["sent"] == done["draft"]
        with pytest.raises(ApprovalError, match="not waiting for approval"):
            resume_approval(graph, cfg("checked"), {"decisions": [{"type": "approve"}], "by": "ann"})
        assert sends(saver, "checked") == 1


def test_aresume_approval(judges: FakeOpenAI, sqlite_url: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with aopen_saver(sqlite_url) as saver:
            graph = campaign.build_graph("ping_pong", checkpointer=saver)
            await graph.ainvoke(campaign.initial_input("ping_pong"), cfg("achecked"))
            with pytest.raises(ApprovalError, match=r"^by: expected a non-empty"):
                await aresume_approval(graph, cfg("achecked"), approve(""))
            out: dict[str, Any] = await aresume_approval(
                graph, cfg("achecked"), {"decisions": [{"type": "reject"}], "by": "ann", "note": "no"})
            return out

    out = asyncio.run(scenario())
    assert "sent" not in out
    assert out["approvals"][-1]["action"] == "reject"


# -- savers: sync, async, in memory ------------------------------------------------------------
def test_in_memory_saver(judges: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    saver = InMemorySaver()
    assert start(saver, "healthy", "mem")["sent"].startswith("v2:")
    assert "__interrupt__" in start(saver, "ping_pong", "mem-loop")
    out = resume(saver, "ping_pong", "mem-loop", {"decisions": [{"type": "approve"}], "by": "ann"})
    assert out["sent"]
    graph = campaign.build_graph("ping_pong", checkpointer=saver)
    parent = list(graph.get_state_history(cfg("mem-loop")))
    interrupted = next(s for s in parent if s.next == ("approve_send",))
    with pytest.raises(ApprovalConflict):  # the same interrupt, decided twice in one process
        graph.invoke(Command(resume={"decisions": [{"type": "approve"}], "by": "bob"}), interrupted.config)
    assert sends(saver, "mem-loop") == 1


def test_async_sqlite_saver(judges: FakeOpenAI, sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with aopen_saver(sqlite_url) as saver:
            auto = await campaign.build_graph("healthy", checkpointer=saver).ainvoke(
                campaign.initial_input("healthy"), cfg("a-auto"))
            graph = campaign.build_graph("ping_pong", checkpointer=saver)
            held = await graph.ainvoke(campaign.initial_input("ping_pong"), cfg("a-loop"))
            done = await graph.ainvoke(Command(resume=approve("ann")), cfg("a-loop"))
            return auto, held, done

    auto, held, done = asyncio.run(scenario())
    assert auto["sent"].startswith("v2:")
    assert auto["approvals"][0]["actor"] == "auto"
    assert payload_of(held)["reasons"] == [f"hard:{c}" for c in LOOP_CODES]
    assert done["sent"] == done["draft"]
    with open_saver(sqlite_url) as saver:
        assert (sends(saver, "a-auto"), sends(saver, "a-loop")) == (1, 1)


# -- the eval graph runs isolated inside a checkpointed caller ---------------------------------
class _Caller(TypedDict, total=False):
    passed: bool


def _trajectory() -> Trajectory:
    return Trajectory(run_id="inner", graph="g", steps=[Step(node="a", summary="one"), Step(node="b")])


def test_eval_graph_inside_a_sync_sqlite_caller(sqlite_url: str) -> None:
    def node(state: _Caller) -> dict[str, Any]:
        return {"passed": evaluate_trajectory(_trajectory()).passed}

    builder: Any = StateGraph(_Caller)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    with open_saver(sqlite_url) as saver:
        graph = builder.compile(checkpointer=saver)
        assert graph.invoke({}, cfg("iso"))["passed"] in (True, False)
        namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}
    assert namespaces == {""}, "the eval graph wrote into the caller's thread"


def test_eval_graph_inside_an_async_in_memory_caller() -> None:
    async def node(state: _Caller) -> dict[str, Any]:
        return {"passed": (await aevaluate_trajectory(_trajectory())).passed}

    builder: Any = StateGraph(_Caller)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    asyncio.run(graph.ainvoke({}, cfg("iso")))
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(None)}
    assert namespaces == {""}, "the eval graph wrote into the caller's thread"
    assert len(list(saver.list(None))) == 3  # input, start, n: nothing of the eval graph


# -- several processes -------------------------------------------------------------------------
def _other_process_and_concurrency(url: str, tmp_path: Path) -> None:
    # Interrupt in one process; two workers resume the same interrupt at the same moment:
    # whoever loses is refused by the claim or finds nothing left to resume. (The exact
    # interleavings, paused at the worst points, are in tests/test_approval_races.py.)
    thread = "race"
    assert result_of(worker(url, thread, "ping_pong", "start"))["pending"] is True
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{who}" for who in ("w1", "w2")]
    procs = [worker(url, thread, "ping_pong", "resume", json.dumps(approve(who)),
                    str(flag), str(go)) for who, flag in zip(("w1", "w2"), ready, strict=True)]
    deadline = time.monotonic() + 60
    while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = [result_of(p) for p in procs]
    assert any(r.get("ok") and r.get("sent") for r in results), results
    assert all(r.get("ok") or "already decided" in r.get("conflict", "") for r in results), results
    with open_saver(url) as saver:
        assert sends(saver, thread) == 1, results
        values = campaign.build_graph("ping_pong", checkpointer=saver).get_state(cfg(thread)).values
        assert len(values["approvals"]) == 1
    # The loser's view, deterministically: a worker that loaded the interrupted checkpoint
    # before the winner moved the thread on resumes from it, and is refused by the claim.
    with open_saver(url) as saver:
        graph = campaign.build_graph("ping_pong", checkpointer=saver)
        stale = next(s for s in graph.get_state_history(cfg(thread)) if s.next == ("approve_send",))
        stale_id = stale.config["configurable"]["checkpoint_id"]
    answer = json.dumps({"decisions": [{"type": "approve"}], "by": "w3"})
    late = result_of(worker(url, thread, "ping_pong", "resume", answer, "-", "-", stale_id))
    assert "already decided (approve by w" in late["conflict"]
    with open_saver(url) as saver:
        assert sends(saver, thread) == 1


def test_sqlite_file_shared_by_processes(sqlite_url: str, tmp_path: Path) -> None:
    _other_process_and_concurrency(sqlite_url, tmp_path)


def test_postgres_shared_by_processes(postgres_url: str, tmp_path: Path) -> None:  # noqa: F811
    _other_process_and_concurrency(postgres_url, tmp_path)


def test_postgres_end_to_end(
    postgres_url: str, judges: FakeOpenAI, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setenv("AGENT_EVAL_AUTOAPPROVE", "1")
    with open_saver(postgres_url) as saver:
        assert start(saver, "healthy", "pg-auto")["sent"].startswith("v2:")
        start(saver, "ping_pong", "pg-edit")
        out = resume(saver, "ping_pong", "pg-edit", edit_answer("v2: fixed", by="ann"))
        assert out["sent"] == "v2: fixed"
        start(saver, "ping_pong", "pg-reject")
        rejected = resume(saver, "ping_pong", "pg-reject", {"decisions": [{"type": "reject"}], "by": "bob"})
        assert "sent" not in rejected
        assert payload_of(rejected)["kind"] == KIND
        assert (sends(saver, "pg-auto"), sends(saver, "pg-edit"), sends(saver, "pg-reject")) == (1, 1, 0)

    async def in_async() -> dict[str, Any]:
        async with aopen_saver(postgres_url) as saver:
            graph = campaign.build_graph("ping_pong", checkpointer=saver)
            await graph.ainvoke(campaign.initial_input("ping_pong"), cfg("pg-async"))
            out: dict[str, Any] = await graph.ainvoke(Command(resume=approve("a")),
                                                      cfg("pg-async"))
            return out

    assert asyncio.run(in_async())["sent"]


def test_approvals_cli_on_postgres(postgres_url: str) -> None:  # noqa: F811
    with open_saver(postgres_url) as saver:
        start(saver, "ping_pong", "pg-cli")
    listed = subprocess.run([str(LIVEGUARD), "approvals", "list",
                             "--checkpoint", postgres_url, "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    assert "pg-cli" in {row["thread_id"] for row in json.loads(listed.stdout)}
    done = subprocess.run([str(LIVEGUARD), "approvals", "approve", "pg-cli", "--by", "ann",
                           "--graph", "graphs.campaign:build_graph", "--checkpoint", postgres_url],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    with open_saver(postgres_url) as saver:
        assert sends(saver, "pg-cli") == 1



# -- the documented example -------------------------------------------------------------------
def test_documented_draft_first_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/approval.md's campaign example runs and prints what it says."""
    doc = (ROOT / "docs" / "approval.md").read_text(encoding="utf-8")
    section = doc.split("## Using the step", 1)[1].split("\n## ", 1)[0]
    example = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    exec(compile(example, "docs/approval.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("['autoapprove_off', 'hard:content_cycle'")
    assert printed[1].startswith("person ['content_cycle'")


# -- claims: one winner per interrupt, on every saver ------------------------------------------
def _claim_twice(saver: Any) -> tuple[bool, bool, str]:
    first = claim(saver, "t", "task:1", by="ann", action="approve", at="T1")
    second = claim(saver, "t", "task:1", by="bob", action="reject", at="T2")
    other = claim(saver, "t", "task:2", by="bob", action="reject", at="T3")
    assert other.won, "a later interrupt is a new claim"
    return first.won, second.won, f"{second.action} by {second.decided_by} at {second.decided_at}"


def test_claims_on_sync_savers(sqlite_url: str, postgres_url: str) -> None:  # noqa: F811
    assert _claim_twice(InMemorySaver()) == (True, False, "approve by ann at T1")
    for url in (sqlite_url, postgres_url):
        with open_saver(url) as saver:
            assert _claim_twice(saver) == (True, False, "approve by ann at T1"), url


def test_claims_on_async_savers(sqlite_url: str, postgres_url: str) -> None:  # noqa: F811
    async def both(url: str) -> tuple[tuple[bool, bool, str], tuple[bool, bool]]:
        async with aopen_saver(url) as saver:
            first = await aclaim(saver, "a", "task:1", by="ann", action="edit", at="T1")
            second = await aclaim(saver, "a", "task:1", by="bob", action="approve", at="T2")
            # A sync caller in a worker thread (a sync node under an async saver).
            third = await asyncio.to_thread(claim, saver, "a", "task:1", by="cy", action="approve", at="T3")
            fresh = await asyncio.to_thread(claim, saver, "a", "task:9", by="cy", action="approve", at="T4")
            return (first.won, second.won, f"{second.action} by {second.decided_by}"), (third.won, fresh.won)

    for url in (sqlite_url, postgres_url):
        assert asyncio.run(both(url)) == ((True, False, "edit by ann"), (False, True)), url


# -- the approval step's reader agrees with the graph-based checkpoint reader ------------------
@pytest.mark.parametrize("scenario", campaign.SCENARIOS)
def test_read_thread_gives_the_steps_of_the_graph_based_reader(scenario: str) -> None:
    saver = InMemorySaver()
    graph = campaign.scripted_graph(scenario, checkpointer=saver)
    graph.invoke(campaign.initial_input(scenario), cfg(scenario))
    from_saver = read_thread(saver, scenario, graph_name="campaign")
    from_graph = thread_to_trajectory(graph, cfg(scenario))
    assert from_saver.steps == from_graph.steps
    third = "send_touch" if scenario == "illegal_hop" else "gate_draft"
    assert [s.node for s in from_saver.steps][:3] == ["load_lead", "compose_touch", third]
    with pytest.raises(ApprovalError, match="no checkpoint"):
        read_thread(saver, "nobody")
