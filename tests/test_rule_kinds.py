"""Rules that declare ``kinds`` are skipped by the Monitor for every other kind: that is
only sound when they return None and change nothing on those kinds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from liveguard import Policy
from liveguard.core._monitor import Monitor
from liveguard.core.allowset import AllowSet
from liveguard.core.rules import build
from liveguard.core.rules.base import OBSERVATION_KINDS, Observation


def _state(rule: Any) -> Any:
    """The rule's whole state: its snapshot, plus its attributes where Python shows them."""
    names = getattr(rule, "__slots__", ())
    ids: dict[str, int] = {}
    saved = rule.snapshot(lambda text: ids.setdefault(text, len(ids))) if hasattr(rule, "snapshot") else None
    return copy.deepcopy({**getattr(rule, "__dict__", {}), **{n: getattr(rule, n) for n in names
                                                               if hasattr(rule, n)},
                          "snapshot": saved, "strings": ids})


def _rules() -> list[Any]:
    allow = AllowSet(graph="g", transitions={"__start__": ["a"], "a": ["a", "b"]})
    return [r for r in build(Policy(), allow) if hasattr(r, "kinds")]


def test_some_rules_declare_kinds() -> None:
    names = {type(r).__name__ for r in _rules()}
    assert names >= {"RepeatedContent", "ToolNoProgress", "ToolEntropyCollapse"}


@pytest.mark.parametrize("rule", _rules(), ids=lambda r: type(r).__name__)
def test_a_rule_ignores_the_kinds_it_does_not_declare(rule: Any) -> None:
    for i in range(4):  # some state first, from its own kinds
        for kind in rule.kinds:
            rule.observe(Observation(i, "a", kind, f"k{i % 2}".encode(), tool="t"))
    for kind in set(OBSERVATION_KINDS) - set(rule.kinds):
        before = _state(rule)
        assert rule.observe(Observation(9, "b", kind, b"k0", tool="t")) is None
        assert _state(rule) == before


def test_the_monitor_hands_each_kind_only_to_its_rules() -> None:
    monitor = Monitor(Policy())
    for kind in OBSERVATION_KINDS:
        for rule in monitor._rules:
            assert (rule in monitor._by_kind[kind]) == (kind in getattr(rule, "kinds", OBSERVATION_KINDS))
