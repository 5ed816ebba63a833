"""role_drift and the allow-set's ``roles:`` (real local model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from liveguard import Policy, Step, check_trajectory
from liveguard.core.allowset import AllowSet, AllowSetError, load_allowset

ROLES = {
    "coder": "writes Python code that implements the requested function",
    "reviewer": "reviews the code and points out bugs, missing tests and style problems",
}
ALLOW = AllowSet.parse({
    "graph": "cr",
    "transitions": {"__start__": ["coder"], "coder": ["reviewer"], "reviewer": ["coder", "__end__"]},
    "limits": {"coder": 20, "reviewer": 20},
    "roles": ROLES,
})
CODE = [
    "def parse(items): return list(map(int, items))",
    "def mean(xs): return sum(xs)/len(xs)",
    'def slug(s): return s.lower().replace(" ", "-")',
    "def head(xs): return xs[0] if xs else None",
]
REVIEWS = [
    "The loop in parse() misses the last element; please add a test for empty input.",
    "Variable names are unclear and there is no docstring; the error path is untested.",
    "The function mutates its argument, which is a bug; also add type hints.",
    "Good fix, but the edge case with negative numbers still fails.",
]
REVIEWER_WRITES_CODE = [
    "def parse(xs):\n    return [int(x) for x in xs]",
    "def add(a, b):\n    return a + b",
    "class Cache:\n    def get(self, k):\n        return self.d.get(k)",
    'def total(rows):\n    return sum(r["amount"] for r in rows)',
]


def run(reviewer: list[str]) -> list[Step]:
    out = []
    for i, text in enumerate(reviewer):
        out += [Step(node="coder", summary=CODE[i % 4] + f"  # v{i}"), Step(node="reviewer", summary=text)]
    return out


def test_a_reviewer_that_starts_writing_code_drifts_toward_the_coder_role() -> None:
    found = [v for v in check_trajectory(run(REVIEWS + REVIEWER_WRITES_CODE), Policy(semantic=True), ALLOW)
             if v.code == "role_drift"]
    assert len(found) == 1
    drift = found[0]
    assert (drift.node, drift.severity, drift.step) == ("reviewer", "soft", 15)
    assert drift.detail["toward"] == "coder"
    assert "away" in drift.detail["kind"]
    assert "toward" in drift.detail["kind"]
    assert drift.detail["own_start"] - drift.detail["own_recent"] >= 0.15


def test_a_reviewer_that_keeps_reviewing_does_not_drift() -> None:
    found = check_trajectory(run(REVIEWS + REVIEWS[::-1]), Policy(semantic=True), ALLOW)
    assert [v for v in found if v.code == "role_drift"] == []


def test_role_drift_needs_the_semantic_layer_and_roles() -> None:
    steps = run(REVIEWS + REVIEWER_WRITES_CODE)
    assert not any(v.code == "role_drift" for v in check_trajectory(steps, Policy(), ALLOW))
    bare = ALLOW.model_copy(update={"roles": {}})
    assert not any(v.code == "role_drift" for v in check_trajectory(steps, Policy(semantic=True), bare))


@pytest.mark.parametrize(
    ("roles", "key", "reason"),
    [
        ("  ghost: haunts\n", "roles.ghost", "undeclared node"),
        ('  coder: "line one\\nline two"\n', "roles.coder", "one non-empty line"),
        ('  coder: ""\n', "roles.coder", "one non-empty line"),
        ("  coder: [not, text]\n", "roles.coder", "valid string"),
    ],
)
def test_bad_roles_name_the_file_line_and_key(tmp_path: Path, roles: str, key: str, reason: str) -> None:
    path = tmp_path / "cr.yaml"
    head = "graph: cr\ntransitions:\n  __start__: [coder]\n  coder: [__end__]\nroles:\n"
    path.write_text(head + roles, encoding="utf-8")
    with pytest.raises(AllowSetError, match=reason) as err:
        load_allowset(path)
    assert err.value.key == key
    assert err.value.source == f"{path}:6"


def test_roles_load_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "cr.yaml"
    path.write_text("graph: cr\ntransitions:\n  __start__: [coder]\n  coder: [__end__]\n"
                    "roles:\n  coder: writes the code\n", encoding="utf-8")
    assert load_allowset(path).roles == {"coder": "writes the code"}


def test_role_drift_embeds_only_the_outputs_it_measures() -> None:
    """A node with a role: only its first and last 4 outputs (and the role lines) are embedded,
    in one batch at the end; the outputs in between never are."""
    from collections.abc import Sequence
    from typing import Any

    from liveguard.core.semantic import cache_for, register_embedder

    calls: list[list[str]] = []

    class Counting:
        name = "counting-roles"

        def embed(self, texts: Sequence[str]) -> Any:
            calls.append(list(texts))
            return cache_for("local").embedder.embed(texts)

    register_embedder("counting-roles", Counting)
    # Every coder output carries a new number, so semantic_repeat embeds none of them.
    steps = [Step(node="coder", summary=f"def f{i}(x): return x + {i}") for i in range(12)]
    policy = Policy(semantic=True, semantic_embedder="counting-roles")
    check_trajectory(steps, policy, ALLOW)
    embedded = [t for call in calls for t in call]
    coder = [t for t in embedded if t.startswith("def f")]
    assert sorted(coder) == sorted(s.summary for s in steps[:4] + steps[-4:])
    assert set(ROLES.values()) <= set(embedded)
