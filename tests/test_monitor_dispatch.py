"""How the Monitor calls its rules and reads a step, per step (issue 21, item 1).

These tests pin the shapes the per-step path relies on (every rule called in build order, for
the kinds it reads, whatever its base class; windows counted as their slices; tool output that
is not JSON object text never searched). Speed itself is measured in ``benchmarks/``.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from liveguard import Policy
from liveguard.core._monitor import Monitor, _dispatch, _nonretryable
from liveguard.core.allowset import AllowSet
from liveguard.core.model import Violation
from liveguard.core.rules.base import (
    MESSAGE,
    OBSERVATION_KINDS,
    TOOL,
    Observation,
    Rule,
    count_digest,
    has_digest,
)
from liveguard.core.rules.content import RepeatedContent, Stall


def test_the_monitor_calls_every_rule_in_build_order() -> None:
    """Every rule of every family (loop guard, allow-set, defects, step text, step limits) is
    handed its observations directly, per kind, in the order ``build`` gave them."""
    transitions = {"__start__": ["a"], "a": ["b", "__end__"], "b": ["a"]}
    allow = AllowSet.parse({"graph": "g", "transitions": transitions})
    policy = Policy(scan_text=True, run_steps=50)
    monitor = Monitor(policy, allow)
    rules = monitor._rules
    assert len(rules) >= 8
    names = [type(rule).__name__ for rule in rules]
    assert {"NodeRevisits", "Stall", "RepeatedContent", "ToolNoProgress", "ContentCycle",
            "TransitionRules", "ToolEntropyCollapse", "StepLimits"} <= set(names)
    for kind in OBSERVATION_KINDS:
        want = [rule for rule in rules if kind in getattr(rule, "kinds", OBSERVATION_KINDS)]
        assert list(monitor._by_kind[kind]) == want


class _Recorder:
    """A rule that is not a RuleBase (as the semantic layer's are): records what it sees."""

    kinds = (MESSAGE,)

    def __init__(self) -> None:
        self.seen: list[int] = []

    def observe(self, obs: Observation) -> list[Violation] | None:
        self.seen.append(obs.index)
        return [Violation(code="recorded", severity="soft", step=obs.index, node=obs.node, count=1)]

    def finish(self) -> list[Violation] | None:
        return None


def test_a_rule_without_the_base_class_is_called_in_its_place_with_its_kinds() -> None:
    """A rule without the base class is called, not skipped, and keeps its place: its
    violations come between those of the rules before and after it."""
    policy = Policy(stall=2)
    recorder = _Recorder()
    rules: tuple[Rule, ...] = (Stall(policy), recorder, RepeatedContent(policy))
    by_kind, _ = _dispatch(rules)
    assert by_kind[MESSAGE][1] is recorder
    assert list(by_kind[TOOL]) == [rules[0], rules[2]]  # the recorder: messages only
    found: list[str] = []
    for index in range(3):  # the same message three times: a stall at 1, a repeat at 2
        obs = Observation(index, "a", MESSAGE, b"\x01" * 16)
        for rule in by_kind[MESSAGE]:
            found += [v.code for v in rule.observe(obs) or ()]
    assert recorder.seen == [0, 1, 2]
    assert found == ["recorded", "no_progress_stall", "recorded", "recorded", "repeated_content"]


_digests = st.lists(st.sampled_from([os.urandom(16) for _ in range(4)]), max_size=40)


@given(_digests, st.integers(1, 6), st.integers(0, 5))
def test_count_digest_and_has_digest_read_a_window_as_its_slice(
    fields: list[bytes], stride: int, start: int
) -> None:
    """The rules' windows are flat lists with a digest every ``stride`` fields from
    ``start``: counted in place, they count what the slice would."""
    start = start % stride
    items: list[Any] = []
    for digest in fields:  # other fields in between are of other types, as in the rules
        items += [digest if i == start else i for i in range(stride)]
    for digest in {*fields, b"\x00" * 16}:
        want = items[start::stride].count(digest)
        assert count_digest(items, digest, start, stride) == want
        assert has_digest(items, digest, start, stride) is (want > 0)


class _Unsearchable(str):
    """Tool output text that fails the test if it is searched (``in``)."""

    def __contains__(self, key: object) -> bool:
        raise AssertionError("searched")


def test_only_json_object_text_is_searched_for_retryable_false() -> None:
    """Only JSON object text can say ``"retryable": false``: long tool output (a file, a
    log, a diff) is not scanned for the word; what can say it still does."""
    for text in ("<returncode>0</returncode>\n" + "x" * 1000, "", "[1, 2]", " \n\t(retryable)",
                 'Error: {"retryable": false}'):
        assert _nonretryable(_Unsearchable(text)) is False
    assert _nonretryable('{"error": "x", "retryable": false}') is True
    assert _nonretryable(' \n\t{"retryable": false}') is True
    assert _nonretryable('{"retryable": true}') is False
    assert _nonretryable('{"retryable": false') is False  # not JSON
    assert _nonretryable('[{"retryable": false}]') is False  # an array, not an object
    assert _nonretryable({"retryable": False}) is True
    assert _nonretryable({"role": "tool", "content": '{"retryable": false}'}) is True
