"""Parallel tool calls are one turn, and a Monitor's state is a small value.

The turn-level rule must not depend on the order in which parallel calls finish: each
case runs under 40 shuffled completion orders. Then the same through real agents
(``create_agent`` under ``guard()`` and under ``LivenessMiddleware``) whose tools finish
in a different order each run.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from liveguard import Monitor, Policy, Step, Violation
from liveguard.errors import SnapshotError
from liveguard.integrations.langchain import LivenessMiddleware
from liveguard.integrations.langgraph import guard

ORDERS = 40


def turn(n: int, calls: list[tuple[str, dict[str, Any], Any]]) -> tuple[Step, list[Step]]:
    """A model step requesting ``calls`` and the tool steps answering them (call order)."""
    request = Step(node="model", output={"tool_calls": [
        {"name": name, "args": args, "id": f"c{n}_{i}"} for i, (name, args, _) in enumerate(calls)]})
    results = [Step(node="tools", tool=name, args=args, result=result) for name, args, result in calls]
    return request, results


def run(turns: list[list[tuple[str, dict[str, Any], Any]]], seed: int | None) -> list[Violation]:
    """Feed the turns, each turn's results in a shuffled order (``seed=None``: call order)."""
    rng = random.Random(seed)
    monitor = Monitor(Policy.tool_agent())
    found: list[Violation] = []
    for n, calls in enumerate(turns):
        request, results = turn(n, calls)
        found += monitor.observe(request)
        if seed is not None:
            rng.shuffle(results)
        for step in results:
            found += monitor.observe(step)
        found += monitor.observe(Step(node="model", summary=f"read turn {n}"))
    return found + monitor.finish()


def whoami() -> tuple[str, dict[str, Any], Any]:
    return ("whoami", {}, "user 7")


def search(i: int) -> tuple[str, dict[str, Any], Any]:
    return ("search", {"q": f"q{i}"}, f"hits for q{i}")


FAILING = ("fetch", {"url": "https://example.com"}, "error: timeout")


def test_a_constant_side_call_beside_progressing_calls_is_silent_in_every_order() -> None:
    turns = [[whoami(), search(2 * i), search(2 * i + 1)] for i in range(12)]
    narrow = [[whoami(), search(i)] for i in range(12)]  # one progressing call per turn
    for seed in range(ORDERS):
        assert run(turns, seed) == []
        assert run(narrow, seed) == []


def test_twelve_turns_of_three_new_parallel_calls_are_silent() -> None:
    turns = [[search(3 * i), search(3 * i + 1), search(3 * i + 2)] for i in range(12)]
    for seed in range(ORDERS):
        assert run(turns, seed) == []


def test_the_same_failing_call_across_turns_fires_at_the_threshold_in_every_order() -> None:
    alone = [[FAILING] for _ in range(5)]
    (first, *_) = run(alone, None)
    assert (first.code, first.count, first.detail["tool"]) == ("tool_no_progress", 3, "fetch")
    beside = [[whoami(), FAILING] for _ in range(5)]  # nothing new after the first turn
    expected = run(beside, None)
    assert [v.code for v in expected][:1] == ["tool_no_progress"]
    assert expected[0].step == 9  # the 3rd turn (steps 8-11), its first tool step in canonical order
    for seed in range(ORDERS):
        assert run(beside, seed) == expected
    # progress beside it: a repeated successful result is free; "error: timeout" is a failed
    # call (its text says so), and the same failure counts whatever else its turn did
    same_page = ("fetch", {"url": "https://example.com"}, "the same page")
    mixed = [[search(i), same_page] for i in range(5)]
    assert all(run(mixed, seed) == [] for seed in range(ORDERS))
    failing = [[search(i), FAILING] for i in range(5)]
    assert [(v.code, v.detail["tool"]) for v in run(failing, None)][:1] == [("tool_no_progress", "fetch")]


def test_the_turn_is_closed_by_the_next_request_when_a_result_is_missing() -> None:
    monitor = Monitor(Policy.tool_agent())
    found: list[Violation] = []
    for n in range(4):
        request, results = turn(n, [FAILING, whoami()])
        found += monitor.observe(request)
        found += monitor.observe(results[0])  # whoami's result never arrives
    assert found[0].code == "tool_no_progress"
    assert found[0].step == 5  # the 3rd turn's result, when request 6 closes that turn short


# ---------------------------------------------------------------------------- real agents


class ParallelModel(BaseChatModel):
    """Asks for whoami() beside two new lookups per turn, for 12 turns, then answers."""

    @property
    def _llm_type(self) -> str:
        return "liveguard-parallel"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        n = sum(isinstance(m, AIMessage) for m in messages)
        if n >= 12:
            reply = AIMessage(content="all done")
        else:
            reply = AIMessage(content="", tool_calls=[
                {"name": "who", "args": {}, "id": f"w{n}", "type": "tool_call"},
                {"name": "look", "args": {"key": f"a{n}"}, "id": f"a{n}", "type": "tool_call"},
                {"name": "look", "args": {"key": f"b{n}"}, "id": f"b{n}", "type": "tool_call"},
            ])
        return ChatResult(generations=[ChatGeneration(message=reply)])


DELAYS: list[float] = []


def _pause() -> None:
    time.sleep(DELAYS.pop() if DELAYS else 0.0)


@tool
def who() -> str:
    """Who am I."""
    _pause()
    return "user 7"


@tool
def look(key: str) -> str:
    """Look a key up."""
    _pause()
    return f"value of {key}"


@pytest.mark.parametrize("seed", range(4))
def test_real_parallel_turns_are_silent_under_both_integrations(seed: int) -> None:
    rng = random.Random(seed)
    DELAYS[:] = [rng.choice([0.0, 0.002, 0.004]) for _ in range(200)]
    guarded = guard(create_agent(ParallelModel(), [who, look]))
    final = guarded.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert final["messages"][-1].content == "all done"
    middleware = create_agent(ParallelModel(), [who, look], checkpointer=InMemorySaver(),
                              middleware=[LivenessMiddleware()])
    result = middleware.invoke({"messages": [{"role": "user", "content": "go"}]},
                               {"configurable": {"thread_id": f"p{seed}"}})
    assert result["messages"][-1].content == "all done"
    assert sum(isinstance(m, ToolMessage) for m in result["messages"]) == 36


# ----------------------------------------------------------------------------- the snapshot


def test_a_snapshot_is_small_json_and_restores_exactly() -> None:
    """200 steps of a tool agent: under 4 KiB as JSON, and a restored Monitor goes on the same."""
    steps = []
    for i in range(100):
        request, results = turn(i, [("run_sql", {"q": f"select {i % 7}"}, f"rows {i % 5}")])
        steps += [request, *results]
    original, copy = Monitor(Policy.tool_agent()), None
    found_a: list[Violation] = []
    found_b: list[Violation] = []
    for i, step in enumerate(steps):
        found_a += original.observe(step)
        if i == 150:
            text = json.dumps(original.snapshot(), separators=(",", ":"))
            copy = Monitor.restore(json.loads(text), Policy.tool_agent())
        elif copy is not None:
            found_b += copy.observe(step)
    assert copy is not None
    size = len(json.dumps(original.snapshot(), separators=(",", ":")))
    assert size <= 4096
    assert found_b == [v for v in found_a if v.step > 150]
    assert copy.snapshot() == original.snapshot()


def test_a_bad_snapshot_is_a_typed_error() -> None:
    with pytest.raises(SnapshotError, match="version"):
        Monitor.restore({"v": 99})
    with pytest.raises(SnapshotError, match="malformed"):
        Monitor.restore({"v": 1, "n": 0, "e": 0, "t": [], "r": {"Stall": [0, 1, 2, 3]}, "s": []})
    with pytest.raises(SnapshotError, match="mapping"):
        Monitor.restore([1, 2])  # type: ignore[arg-type]


def test_a_semantic_monitor_snapshots_its_loop_guard_state() -> None:
    """The loop guard's state carries, and (issue 17) so does the semantic layer's: it is thread
    state like every other rule's (test_semantic_confirm.py checks it goes on the same)."""
    policy = Policy(semantic=True)
    monitor = Monitor(policy)
    for text in ("looking up the invoice", "looking up the invoice"):
        monitor.observe(Step(node="agent", summary=text))
    snapshot = json.loads(json.dumps(monitor.snapshot()))
    assert "SemanticRepeat" in snapshot["r"]
    again = Monitor.restore(snapshot, policy)
    assert again.steps_seen == 2
    found = again.observe(Step(node="agent", summary="looking up the invoice"))
    assert "repeated_content" in [v.code for v in found]  # the third identical message
