"""liveguard.core.messages: one definition of message and tool-call shapes, mirrored by the C code."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from liveguard import Monitor, Policy, Step
from liveguard.core.fingerprint import Fingerprinter
from liveguard.core.messages import (
    MESSAGE_KEYS,
    content,
    dumpd_kwargs,
    field,
    is_ai_message,
    is_error_text,
    is_message_dump,
    is_message_shaped,
    is_tool_message,
    tool_call_args,
    tool_call_name,
    tool_calls,
    tool_message_step,
    tool_step,
)
from liveguard.readers.stream import UpdateStepper

LC_CALL = {"name": "run_sql", "args": {"q": "SELECT 1"}, "id": "c1", "type": "tool_call"}
OPENAI_CALL = {"id": "c2", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}


def test_field_reads_mappings_and_attributes() -> None:
    msg = ToolMessage("ok", tool_call_id="c1", name="run_sql")
    assert field(msg, "tool_call_id") == field({"tool_call_id": "c1"}, "tool_call_id") == "c1"
    assert field(msg, "missing", 7) == field({}, "missing", 7) == 7
    assert content("bare text") == "bare text"
    assert content(msg) == content({"content": "ok"}) == "ok"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (ToolMessage("ok", tool_call_id="c1"), True),
        ({"role": "tool", "content": "ok"}, True),
        ({"type": "tool", "content": "ok"}, True),
        ({"tool_call_id": "c1", "content": "ok"}, True),
        ({"tool_call_id": None, "role": "assistant", "content": "ok"}, False),
        (AIMessage("hi"), False),
        (HumanMessage("hi"), False),
        ({"role": "user", "content": "hi"}, False),
        ("plain text", False),
    ],
)
def test_is_tool_message(message: Any, expected: bool) -> None:
    assert is_tool_message(message) is expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (AIMessage("hi"), True),
        (AIMessageChunk(content="hi"), True),
        ({"role": "assistant", "content": "hi"}, True),
        ({"role": "ai", "content": "hi"}, True),
        ({"type": "ai", "content": "hi"}, True),
        ({"type": "AIMessageChunk", "content": "hi"}, True),
        (HumanMessage("hi"), False),
        (ToolMessage("ok", tool_call_id="c1"), False),
        ({"role": "user", "content": "hi"}, False),
        ({"role": "system", "content": "hi"}, False),
        ("plain text", False),
    ],
)
def test_is_ai_message(message: Any, expected: bool) -> None:
    """The model's messages, in every shape a message list may hold them (the one definition
    ``readers.message_list`` reads an assistant turn by)."""
    assert is_ai_message(message) is expected


def test_message_dumps_are_recognised_in_both_json_forms() -> None:
    """A real message's ``model_dump()`` and ``dumpd`` form; a dict with a key no message has,
    or no content, is data, not a message (the readers reduce only messages to MESSAGE_KEYS)."""
    from langchain_core.load import dumpd

    ai = AIMessage("", tool_calls=[{"name": "run_sql", "args": {"q": "SELECT 1"}, "id": "c1"}], id="m1")
    dumped = ai.model_dump()
    assert is_message_dump(dumped)
    assert is_message_dump(ToolMessage("ok", tool_call_id="c1").model_dump())
    assert not is_message_dump({**dumped, "scenario": "x"})
    assert not is_message_dump({"type": "ai"})
    assert not is_message_dump({"type": "search", "content": "x"})
    kwargs = dumpd_kwargs(dumpd(ai))
    assert kwargs is not None
    assert is_message_dump(kwargs)
    assert kwargs["tool_calls"][0]["name"] == "run_sql"
    assert dumpd_kwargs(dumped) is None
    assert dumpd_kwargs({"lc": 1, "type": "constructor", "id": ["x", "Graph"], "kwargs": {}}) is None
    assert {"id", "response_metadata", "usage_metadata"}.isdisjoint(MESSAGE_KEYS)


def test_tool_calls_and_their_names_and_args() -> None:
    ai = AIMessage("", tool_calls=[{"name": "run_sql", "args": {"q": "SELECT 1"}, "id": "c1"}])
    assert tool_calls(ai) == ai.tool_calls
    assert tool_calls({"role": "assistant", "tool_calls": [OPENAI_CALL]}) == [OPENAI_CALL]
    assert tool_calls({"role": "assistant", "tool_calls": []}) is None
    assert tool_calls(AIMessage("answer")) is None
    assert tool_calls("text") is None
    assert [tool_call_name(LC_CALL), tool_call_name(OPENAI_CALL)] == ["run_sql", "search"]
    assert tool_call_name({"name": ["not", "a", "name"]}) is None
    assert tool_call_name("run_sql") is None
    assert tool_call_args(LC_CALL) == {"q": "SELECT 1"}
    assert tool_call_args(OPENAI_CALL) == '{"q": "x"}'
    assert tool_call_args({"name": "f"}) is None


def test_the_monitor_names_a_request_by_its_first_call() -> None:
    """A request whose first call names no tool (a list) is still observed, never a TypeError."""
    monitor = Monitor(Policy.tool_agent())
    for call in (LC_CALL, OPENAI_CALL, {"name": ["x"], "args": {}}):
        assert monitor.observe(Step(node="model", output={"role": "assistant", "tool_calls": [call]})) == []


def test_one_tool_step_builder() -> None:
    assert tool_step("tools", None, {"a": 1}, "boom", failed=True) == Step(
        node="tools", tool="unknown_tool", args={"a": 1}, result="boom", error="boom")
    assert tool_step("tools", "t", None, None, error="Timeout").error == "Timeout"
    failed = ToolMessage("no such table", tool_call_id="c1", status="error")
    assert tool_message_step("tools", failed, name="run_sql", args={"q": 1}) == Step(
        node="tools", tool="run_sql", args={"q": 1}, result="no such table", error="no such table")
    named = {"role": "tool", "name": "own_name", "content": "ok", "tool_call_id": "c1"}
    assert tool_message_step("tools", named, name="called_name").tool == "own_name"


def test_the_stream_reader_builds_tool_steps_with_the_shared_builder() -> None:
    stepper = UpdateStepper()
    stepper.feed({"model": {"messages": [AIMessage("", tool_calls=[LC_CALL])]}})
    result = ToolMessage("no such table", tool_call_id="c1", status="error")
    (step,) = stepper.feed({"tools": {"messages": [result]}})
    assert step == tool_message_step("tools", result, name="run_sql", args={"q": "SELECT 1"})


# -- message-shaped dicts drop their id, in the fast path and the walker alike -----------------------
SHAPE_KEYS = ["role", "tool_call_id", "name", "args", "arguments", "function", "type", "content", "text",
              "id", "usage_metadata", "x", "Role", "names", "type "]
shape_values = st.none() | st.integers(0, 3) | st.sampled_from(["", "tool", "text", "ai"])
message_like = st.dictionaries(st.sampled_from(SHAPE_KEYS), shape_values, max_size=6).map(
    lambda d: {**d, "id": "volatile-or-data"})


@settings(max_examples=800, deadline=None)
@given(message_like)
def test_canonical_bytes_drop_id_exactly_when_message_shaped(d: dict[str, Any]) -> None:
    """The canonical bytes drop ``id`` exactly when the dict is message-shaped, and the fast path
    writes the walker's bytes."""
    out = Fingerprinter().canonical_bytes(d)
    assert (b'"id":' not in out) is is_message_shaped(d)
    assert out == Fingerprinter().reference_bytes(d)


# ----------------------------------------------------- issue 30: a failure said in text


@pytest.mark.parametrize(("text", "failed"), [
    ("Error: connection refused", True),
    ("  error: timeout", True),
    ("ERROR fetching page", True),
    ("Error invoking tool 'fetch' with kwargs {}", True),
    ("Traceback (most recent call last):\n  File ...", True),
    ("Errors: none", False),
    ("error-free run", False),
    ("no error", False),
    ("1 failed: test_slugify", False),
    ("", False),
])
def test_a_result_text_starting_with_error_is_a_failed_call(text: str, failed: bool) -> None:
    assert is_error_text(text) is failed
    step = tool_message_step("tools", ToolMessage(content=text, tool_call_id="c1", name="fetch"))
    observed = Monitor(Policy.tool_agent())._observation(step, 0)
    assert observed.failed is failed


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.integers(), st.none(), st.lists(st.text())))
def test_is_error_text_reads_any_value(value: Any) -> None:
    """Agent text is read safely: any value, a bool; only text can say it failed; leading
    white space does not matter; a text led by "Error: " always does."""
    found = is_error_text(value)
    assert isinstance(found, bool)
    if not isinstance(value, str):
        assert not found
        return
    assert is_error_text(" \n\t" + value) is found
    assert is_error_text("Error: " + value)
    assert not is_error_text("ok " + value)
