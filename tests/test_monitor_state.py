"""The Monitor's compact state: raw digests, flat windows, and the v1 snapshot format.

The rules keep 16-byte digests in flat lists and count a window only when a C-level
pre-count says it can fire. These tests hold that representation to the rules' meaning:
a snapshot written before it (format v1, by main at a6ad731) restores and goes on
exactly as that Monitor did; brute-force re-implementations of the windowed rules agree
with the Monitor on random runs; snapshot/restore at any step changes nothing; and the
observation's fast paths read steps exactly as the generic message helpers do.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from liveguard import Policy, Step, Violation, check_trajectory
from liveguard.core._monitor import Monitor, _nonretryable
from liveguard.core.allowset import AllowSet
from liveguard.core.fingerprint import _maybe_json, fingerprint
from liveguard.core.messages import tool_call_name, tool_calls
from liveguard.core.rules.base import CONTENTLESS, MESSAGE, REQUEST, TOOL, Observation, digest_prefix

FIXTURE = Path(__file__).with_name("monitor_snapshot_v1.json")


def _dump(violations: list[Violation]) -> list[dict[str, Any]]:
    return [v.model_dump(mode="json") for v in violations]


# ------------------------------------------------------------------ a snapshot written by main


def test_a_v1_snapshot_written_by_main_restores_and_goes_on_the_same() -> None:
    case = json.loads(FIXTURE.read_text())
    policy = Policy.tool_agent(**case["policy"])
    allow = AllowSet.model_validate(case["allow_set"])
    steps = [Step.model_validate(s) for s in case["steps"]]
    at = case["at"]
    assert case["snapshot"]["t"], "the fixture's snapshot holds an open parallel turn"

    restored = Monitor.restore(case["snapshot"], policy, allow)
    after: list[Violation] = []
    for step in steps[at + 1:]:
        after += restored.observe(step)
    after += restored.finish()
    assert _dump(after) == case["after"]
    assert {v["code"] for v in case["after"]} >= {
        "tool_no_progress", "repeated_content", "content_cycle", "excessive_loop",
        "illegal_transition", "tool_entropy_collapse"}

    # Today's Monitor reports what main reported and writes the same snapshot, but for
    # repeated_content, which (issue 17) now also keeps what came back between the repeats.
    monitor = Monitor(policy, allow)
    before: list[Violation] = []
    for step in steps[: at + 1]:
        before += monitor.observe(step)
    assert _dump(before) == case["before"]
    ours = json.loads(json.dumps(monitor.snapshot()))
    strings, theirs = ours["s"], case["snapshot"]
    window = ours["r"].pop("RepeatedContent")["w"]
    saved = theirs["r"]["RepeatedContent"]
    assert [[strings[n], strings[k], i] for n, k, i, _ in window] == [
        [theirs["s"][n], theirs["s"][k], i] for n, k, i in saved]

    assert ours["n"] == theirs["n"]
    assert set(ours["r"]) == set(theirs["r"]) - {"RepeatedContent"}


def test_a_snapshot_key_that_is_not_hex_is_a_typed_error() -> None:
    from liveguard.errors import SnapshotError

    monitor = Monitor(Policy())
    monitor.observe(Step(node="a", summary="x"))
    snapshot = json.loads(json.dumps(monitor.snapshot()))
    snapshot["s"] = ["not hex" if len(s) == 32 else s for s in snapshot["s"]]
    with pytest.raises(SnapshotError, match="malformed"):
        Monitor.restore(snapshot, Policy())


# ------------------------------------------------------------------------------ random runs

NODES = ["a", "b", "model", "tools"]
TOOLS = ["t0", "t1", "poll"]


@st.composite
def runs(draw: st.DrawFn, sequential: bool = False) -> list[Step]:
    """Runs of messages, errors, contentless steps, requests and (shuffled, partial) turns."""
    steps: list[Step] = []
    for _ in range(draw(st.integers(0, 45))):
        what = draw(st.integers(0, 9))
        node = draw(st.sampled_from(NODES))
        if what <= 3:
            steps.append(Step(node=node, summary=draw(st.sampled_from(["s0", "s1", "s2", None])),
                              output=draw(st.sampled_from([None, "o", {"content": "c", "type": "ai"}]))))
        elif what == 4:
            steps.append(Step(node=node, error=draw(st.sampled_from(["e", {"retryable": False}]))))
        elif what == 5:
            steps.append(Step(node=node))
        else:
            width = 1 if sequential else draw(st.integers(1, 3))
            calls = [(draw(st.sampled_from(TOOLS)), {"k": draw(st.integers(0, 1))}) for _ in range(width)]
            if not sequential or draw(st.booleans()):
                steps.append(Step(node="model", output={"tool_calls": [
                    {"name": name, "args": args, "id": str(i)} for i, (name, args) in enumerate(calls)]}))
            results = [Step(node="tools", tool=name, args=args,
                            result=draw(st.sampled_from(["r", "r", '{"retryable": false}', {"ok": 1}])))
                       for name, args in calls]
            if not sequential:
                results = draw(st.permutations(results))[: draw(st.integers(max(0, width - 1), width))]
            steps += results
    return steps


SMALL = Policy.build(window=6, max_revisits=2, repeat=2, repeat_window=4, tool_repeats=2, tool_window=3,
                     tool_repeats_nonretryable=1, cycle_periods=(2, 3), run_steps=30, thread_steps=40,
                     tools={"poll": {"no_progress": 3, "window": 5}})


@settings(max_examples=150, deadline=None)
@given(steps=runs(), cut=st.integers(0, 45), policy=st.sampled_from([SMALL, Policy.tool_agent()]))
def test_snapshot_restore_at_any_step_changes_nothing(steps: list[Step], cut: int, policy: Policy) -> None:
    """Observe, snapshot (as JSON), restore, go on: the same violations and the same final state
    as the Monitor that never stopped; and ``check_trajectory`` (observe_all) agrees with both."""
    whole = Monitor(policy)
    found: list[Violation] = []
    for step in steps:
        found += whole.observe(step)
    found += whole.finish()
    assert check_trajectory(steps, policy) == found

    first = Monitor(policy)
    resumed: list[Violation] = []
    for step in steps[:cut]:
        resumed += first.observe(step)
    second = Monitor.restore(json.loads(json.dumps(first.snapshot())), policy)
    for step in steps[cut:]:
        resumed += second.observe(step)
    resumed += second.finish()
    assert resumed == found
    assert second.snapshot() == whole.snapshot()


def _reference(steps: list[Step], policy: Policy) -> list[tuple[str, int, Any]]:
    """Brute force, straight from the rules' definitions, for a sequential run: the last N
    steps are sliced afresh at every step, with no counters and no pre-count."""
    found: list[tuple[str, int, Any]] = []
    seen: list[tuple[int, str, int, str]] = []  # (index, node, kind, digest) per step so far
    tool_turns: list[tuple[int, str, str, bool]] = []  # (index, tool, digest, nonretryable)
    observed: list[tuple[str, str, bool]] = []  # (node, digest, new) per message or tool step
    epochs: dict[int, int] = {}  # a message step's epoch: new observations from other nodes
    for index, step in enumerate(steps):
        monitor = Monitor(policy)
        obs = monitor._observation(step, index)
        seen.append((index, step.node, obs.kind, obs.key))
        if obs.kind in (MESSAGE, TOOL):  # new: not among the last 64 observations' digests
            observed.append((step.node, obs.key, obs.key not in [d for _, d, _ in observed[-64:]]))
            epochs[index] = sum(1 for n, _, new in observed if new and n != step.node)
        limit = policy.revisit_limit(step.node)
        recent = [n for _, n, _, _ in seen[-policy.window:]]
        if limit is not None and recent.count(step.node) == limit + 1:
            found.append(("node_revisit_cycle", index, limit))
        if obs.kind == MESSAGE:
            messages = [(i, n, d) for i, n, k, d in seen if k == MESSAGE][-policy.repeat_window:]
            same = [i for i, n, d in messages
                    if (n, d, epochs[i]) == (step.node, obs.key, epochs[index])]
            if len(same) == policy.repeat:
                found.append(("repeated_content", index, same))
        if obs.kind == TOOL:
            tool_turns.append((index, obs.tool or "", obs.key, obs.nonretryable))
            limits = policy.tool_limits(obs.tool or "")
            if limits is not None:
                repeats, window, nonretryable = limits
                threshold = nonretryable if obs.nonretryable else repeats
                # the appearances in the window, back from this one while no turn strictly
                # between one and the next holds a signature seen once in the kept turns (the
                # widest window); a failed call: every appearance in the window
                widest = max([policy.tool_window] + [t.window or 0 for t in policy.tools.values()])
                kept = [d for _, _, d, _ in tool_turns[-widest:]]
                recent = tool_turns[-window:]
                same: list[int] = []
                later = len(recent)
                for j in range(len(recent) - 1, -1, -1):
                    if recent[j][2] != obs.key:
                        continue
                    if same and not obs.failed and any(kept.count(t[2]) == 1 for t in recent[j + 1:later]):
                        break
                    same.append(recent[j][0])
                    later = j
                same.reverse()
                if len(same) == threshold:
                    found.append(("tool_no_progress", index, same))
    return found


@settings(max_examples=200, deadline=None)
@given(steps=runs(sequential=True), policy=st.sampled_from([SMALL, Policy.workflow()]))
def test_windowed_rules_match_a_brute_force_reading_of_their_definitions(
    steps: list[Step], policy: Policy
) -> None:
    ours = [
        (v.code, v.step, v.detail["limit"] if v.code == "node_revisit_cycle" else v.detail["steps"])
        for v in check_trajectory(steps, policy)
        if v.code in {"node_revisit_cycle", "repeated_content", "tool_no_progress"}
    ]
    assert sorted(ours) == sorted(_reference(steps, policy))


def test_the_same_content_at_two_nodes_is_counted_per_node() -> None:
    """The digest alone reaches the threshold first; only node + digest fires."""
    policy = Policy.build(repeat=3, repeat_window=10, stall=5)
    steps = [Step(node=n, summary="same") for n in ["a", "b", "a", "b", "c", "a"]]
    found = [v for v in check_trajectory(steps, policy) if v.code == "repeated_content"]
    assert [(v.step, v.node, v.detail["steps"]) for v in found] == [(5, "a", [0, 2, 5])]
    assert found[0].detail["digest"] == fingerprint("same")[:12]


def test_evidence_carries_the_prefix_of_the_hex_digest() -> None:
    step = Step(node="tools", tool="q", args={"x": 1}, result="boom")
    found = check_trajectory([step] * 3, Policy.tool_agent())
    assert [v.code for v in found] == ["tool_no_progress"]
    assert found[0].detail["digest"] == fingerprint(("q", {"x": 1}, "boom", None))[:12]
    assert Monitor(Policy()).digest(step) == fingerprint(("q", {"x": 1}, "boom", None))


def test_an_observation_keeps_raw_bytes_and_shows_hex() -> None:
    digest = bytes.fromhex(fingerprint("hello"))
    obs = Observation(0, "a", MESSAGE, digest)
    assert obs.key == fingerprint("hello")
    assert digest_prefix(digest) == fingerprint("hello")[:12]
    assert Observation(0, "a", CONTENTLESS, b"").key == ""
    assert Observation.unpack(obs.pack(lambda s: 0), lambda i: obs.key).digest == digest
    assert Monitor(Policy()).digest(Step(node="a")) == ""


# ------------------------------------------------------------- the observation's fast paths


class _Calls:
    def __init__(self, calls: Any) -> None:
        self.tool_calls = calls


OUTPUTS: list[Any] = [
    {"tool_calls": [{"name": "search", "args": {"q": 1}, "id": "1"}]},
    {"tool_calls": [{"name": "", "function": {"name": "fn", "arguments": '{"a": 1}'}}]},
    {"tool_calls": [{"id": "x", "type": "function", "function": {"name": "fn", "arguments": "[1]"}}]},
    {"tool_calls": [{"function": MappingProxyType({"name": "proxied"})}]},
    {"tool_calls": [{"function": "not a mapping"}]},
    {"tool_calls": [{"name": 7}]},
    {"tool_calls": [{"function": {"name": 7}}]},
    {"tool_calls": [MappingProxyType({"name": "m"})]},
    {"tool_calls": ["not a call"]},
    {"tool_calls": ({"name": "in a tuple"},)},
    {"tool_calls": []},
    {"tool_calls": None},
    {"content": "no calls"},
    MappingProxyType({"tool_calls": [{"name": "proxied output"}]}),
    AIMessage(content="", tool_calls=[{"name": "lc", "args": {"a": 1}, "id": "i"}]),
    AIMessage(content="plain"),
    _Calls([{"name": "attr"}, {"name": "second"}]),
    "text",
]


@pytest.mark.parametrize("output", OUTPUTS, ids=range(len(OUTPUTS)))
def test_requests_are_read_as_the_message_helpers_read_them(output: Any) -> None:
    step = Step(node="model", output=output)
    obs = Monitor(Policy())._observation(step, 0)
    calls = tool_calls(output)
    if calls:
        assert (obs.kind, obs.tool, obs.calls) == (REQUEST, tool_call_name(calls[0]), len(calls))
        assert obs.key == fingerprint(calls)
    else:
        assert (obs.kind, obs.key) == (MESSAGE, fingerprint(output))


def _reference_nonretryable(value: Any) -> bool:
    """The check as main wrote it (abc checks first), the oracle for the reordered one."""
    from collections.abc import Mapping

    if value is None:
        return False
    if isinstance(value, Mapping):
        if "retryable" in value:
            return value["retryable"] is False
        content = value.get("content")
        return content is not None and content is not value and _reference_nonretryable(content)
    if isinstance(value, str):
        if "retryable" not in value:
            return False
        parsed = _maybe_json(value)
        return isinstance(parsed, Mapping) and parsed.get("retryable") is False
    content = getattr(value, "content", None)
    return content is not None and content is not value and _reference_nonretryable(content)


class _Text(str):
    pass


@dataclasses.dataclass
class _Message:
    """A message-like object (fingerprinted as a dataclass) whose ``content`` is read."""

    content: Any


RESULTS: list[Any] = [
    None, "", "ok", "retryable", '{"retryable": false}', '  {"retryable": false}', '{"retryable": true}',
    '[{"retryable": false}]', '{"retryable": false', _Text('{"retryable": false}'), _Text("x"),
    {"retryable": False}, {"retryable": 0}, {"retryable": True}, {"content": '{"retryable": false}'},
    {"content": {"retryable": False}}, {"content": None}, {"other": 1},
    MappingProxyType({"retryable": False}), MappingProxyType({"content": '{"retryable": false}'}),
    _Message('{"retryable": false}'), _Message({"retryable": False}), _Message("fine"), 3, [1],
]


@pytest.mark.parametrize("result", RESULTS, ids=range(len(RESULTS)))
@pytest.mark.parametrize("error", [None, "boom", {"retryable": False}, '{"retryable": false}'])
def test_nonretryable_reads_every_form_as_before(result: Any, error: Any) -> None:
    expected = _reference_nonretryable(result) or _reference_nonretryable(error)
    assert (_nonretryable(result) or _nonretryable(error)) is expected
    step = Step(node="tools", tool="t", args={}, result=result, error=error)
    assert Monitor(Policy())._observation(step, 0).nonretryable is expected


@settings(max_examples=80, deadline=None)
@given(
    items=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 80), st.booleans()),
                   min_size=70, max_size=220),
    cut=st.integers(0, 220),
)
def test_repeats_remember_exactly_the_last_64_observations(
    items: list[tuple[str, int, bool]], cut: int
) -> None:
    """``repeated_content`` counts an observation as new when its digest is not among the last 64
    observations' (a look-up table kept beside that window): over long runs whose digests leave
    the window and come back, its count of new observations is the definition's at every step,
    its findings are the brute-force reading's, and a restore at any step goes on the same."""
    steps = [
        Step(node=node, summary=f"m{k}") if message else Step(node="tools", tool="t", args={}, result=f"r{k}")
        for node, k, message in items
    ]
    policy = Policy.build(repeat=2, repeat_window=6)
    monitor = Monitor(policy)
    (rule,) = [r for r in monitor._rules if type(r).__name__ == "RepeatedContent"]
    keys: list[str] = []
    new = 0
    found: list[Violation] = []
    for index, step in enumerate(steps):
        found += monitor.observe(step)
        key = Monitor(policy)._observation(step, index).key
        new += key not in keys[-64:]
        keys.append(key)
        assert rule._new == new, index  # type: ignore[attr-defined]
    ours = [(v.code, v.step, v.detail["steps"]) for v in found if v.code == "repeated_content"]
    reference = [item for item in _reference(steps, policy) if item[0] == "repeated_content"]
    assert sorted(ours) == sorted(reference)
    first = Monitor(policy)
    for step in steps[:cut]:
        first.observe(step)
    second = Monitor.restore(json.loads(json.dumps(first.snapshot())), policy)
    for step in steps[cut:]:
        second.observe(step)
    assert second.snapshot() == monitor.snapshot()
