"""Allow-sets: loading with located errors, runtime rules both ways, static checks, derivation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

import pytest
import yaml

from liveguard import Policy, Step, check_trajectory
from liveguard.core.allowset import (
    AllowSet,
    AllowSetError,
    check_allowset,
    derive_transitions,
    load_allowset,
    load_allowsets,
)
from liveguard.testing import messages

ROOT = Path(__file__).resolve().parent.parent
PATHS = ROOT / "expected_paths"
EXE = Path(sys.executable).with_name("liveguard")

CAMPAIGN_OK = """\
graph: campaign
transitions:
  __start__: [load_lead]
  load_lead: [compose_touch]
  compose_touch: [gate_draft]
  gate_draft: [compose_touch, send_touch]
  send_touch: [check_reply]
  check_reply: [check_reply, compose_touch, __end__]
limits:
  check_reply: 10
"""


def write(tmp_path: Path, text: str, name: str = "g.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def codes(steps: list[Step], allow: AllowSet, policy: Policy | None = None) -> list[tuple[str, int]]:
    return [(v.code, v.step) for v in check_trajectory(steps, policy or Policy.workflow(), allow)]


def walk(*nodes: str) -> list[Step]:
    """Message steps with fresh content, so only the allow-set rules can fire."""
    return [Step(node=n, summary=f"{n} #{i}") for i, n in enumerate(nodes)]


# -- loading errors ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("graph: g\ntransitions: [a, b\n", ":3", "malformed YAML"),
        ("graph: g\n  bad: indent\n", ":2", "malformed YAML"),
        ("graph: g\ncolour: red\ntransitions:\n  __start__: [a]\n  a: [__end__]\n",
         ":2: colour", "unknown key"),
        ("graph: g\ntransitions:\n  __start__: [a]\n  a: [b, __end__]\n",
         ":4: transitions.a.0", "undeclared node 'b'"),
        ("graph: g\ntransitions:\n  __start__: [a]\n  a: [__end__]\nlimits:\n  a: 0\n",
         ":6: limits.a", "within 1..10000"),
        ("graph: g\ntransitions:\n  __start__: [a]\n  a: [__end__]\nlimits:\n  a: -3\n",
         ":6: limits.a", "within 1..10000"),
        ("graph: g\ntransitions:\n  __start__: [a]\n  a: [__end__]\nlimits:\n  zz: 2\n",
         ":6: limits.zz", "undeclared node 'zz'"),
        ("graph: g\ntransitions:\n  a: [__end__]\n", ":2: transitions", "missing __start__"),
        ("graph: g\ntransitions:\n  __start__: [a]\n  a: [__end__]\ntools:\n  t: {no_progress: 1}\n",
         ":6: tools.t.no_progress", "greater than or equal to 2"),
        ("- just\n- a list\n", ":1", "expected a mapping"),
    ],
)
def test_yaml_errors_name_file_line_and_key(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(AllowSetError) as info:
        load_allowset(path)
    assert str(info.value).startswith(f"{path}{where}")
    assert message in str(info.value)


def test_load_all_checked_in_allowsets() -> None:
    sets = load_allowsets(PATHS)
    assert set(sets) == {"campaign", "coder_reviewer", "sql_agent"}
    assert sets["campaign"].limits["check_reply"] == 10


# -- runtime rules ----------------------------------------------------------------------------
@pytest.fixture
def campaign() -> AllowSet:
    return AllowSet.parse(yaml.safe_load(CAMPAIGN_OK))


def test_legal_run_with_back_edge_is_silent(campaign: AllowSet) -> None:
    steps = walk("load_lead", "compose_touch", "gate_draft", "compose_touch", "gate_draft",
                 "send_touch", "check_reply", "check_reply", "compose_touch", "gate_draft",
                 "send_touch", "check_reply")
    assert codes(steps, campaign) == []


def test_illegal_hop_fires(campaign: AllowSet) -> None:
    steps = walk("load_lead", "compose_touch", "send_touch", "check_reply")
    assert codes(steps, campaign) == [("illegal_transition", 2)]


def test_bad_first_step_and_unknown_node_fire(campaign: AllowSet) -> None:
    hit = check_trajectory(walk("compose_touch"), Policy.workflow(), campaign)[0]
    assert (hit.code, hit.detail["from"]) == ("illegal_transition", "__start__")
    hits = check_trajectory(walk("load_lead", "mystery"), Policy.workflow(), campaign)
    assert (hits[0].code, hits[0].detail.get("unknown_node")) == ("illegal_transition", True)


def test_dead_end_is_soft(campaign: AllowSet) -> None:
    hits = check_trajectory(walk("load_lead", "compose_touch", "gate_draft"), Policy.workflow(), campaign)
    assert [(h.code, h.severity, h.step) for h in hits] == [("dead_end", "soft", 2)]
    finished = walk("load_lead", "compose_touch", "gate_draft", "send_touch", "check_reply")
    assert codes(finished, campaign) == []


def test_excessive_loop_uses_default_ceiling(campaign: AllowSet) -> None:
    """Five gate_draft visits (default ceiling 4) fire; the window rule is widened to isolate it."""
    nodes = ["load_lead"] + ["compose_touch", "gate_draft"] * 5 + ["send_touch", "check_reply"]
    policy = Policy.workflow(max_revisits=10)
    assert codes(walk(*nodes), campaign, policy) == [("excessive_loop", 9), ("excessive_loop", 10)]
    assert [c for c in codes(walk(*nodes[:9]), campaign, policy) if c[0] != "dead_end"] == []


def test_campaign_legal_cycle_of_ten_polls(campaign: AllowSet) -> None:
    """Ten check_reply visits pass under limit 10 and fail when the limit is lower."""
    nodes = ["load_lead", "compose_touch", "gate_draft", "send_touch"] + ["check_reply"] * 10
    steps = walk(*nodes)
    assert codes(steps, campaign) == []
    lower = campaign.model_copy(update={"limits": {"check_reply": 8}})
    assert codes(steps, lower) == [("node_revisit_cycle", 12), ("excessive_loop", 12)]


def test_allowset_tool_overrides_reach_the_tool_rule() -> None:
    transitions = {"__start__": ["tools"], "tools": ["tools", "__end__"]}
    allow = AllowSet.parse({"graph": "g", "transitions": transitions,
                            "tools": {"wait": {"no_progress": 5}}})
    steps = [Step(node="tools", tool="wait", args={}, result="running")] * 4
    assert codes(steps, allow, Policy.tool_agent()) == []
    assert ("tool_no_progress", 2) in codes(steps, AllowSet.parse(
        {"graph": "g", "transitions": {"__start__": ["tools"], "tools": ["tools", "__end__"]}}
    ), Policy.tool_agent())


# -- static checks ----------------------------------------------------------------------------
def test_check_good_protocol_has_no_findings(campaign: AllowSet) -> None:
    """The redraft loop shares a component with check_reply, whose limit bounds it."""
    assert check_allowset(campaign) == []


def test_check_finds_unreachable_trap_and_unbounded_cycles() -> None:
    broken = AllowSet.parse({
        "graph": "broken",
        "transitions": {
            "__start__": ["a"],
            "a": ["b", "__end__"],
            "b": ["c"],
            "c": ["b"],          # b <-> c: no way out to __end__
            "orphan": ["a"],     # nobody reaches orphan
            "spin": ["spin", "__end__"],
        },
    })
    found = {(f.level, f.code, f.nodes) for f in check_allowset(broken)}
    assert ("error", "unreachable", ("orphan", "spin")) in found
    assert ("error", "cannot_finish", ("b", "c")) in found
    assert ("error", "livelock_trap", ("b", "c")) in found
    assert ("warning", "unbounded_cycle", ("spin",)) in found


def test_paths_check_cli_exit_status(tmp_path: Path) -> None:
    good = subprocess.run([str(EXE), "paths", "check", *map(str, sorted(PATHS.glob("*.yaml")))],
                          capture_output=True, text=True, check=False)
    assert good.returncode == 0, good.stdout
    trap = write(tmp_path, "graph: t\ntransitions:\n  __start__: [a]\n  a: [b]\n  b: [a]\n", "t.yaml")
    bad = subprocess.run([str(EXE), "paths", "check", str(trap)], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 1
    assert f"{trap}: error: livelock_trap" in bad.stdout
    assert "a, b" in bad.stdout
    broken = write(tmp_path, "graph: [\n", "broken.yaml")
    assert subprocess.run([str(EXE), "paths", "check", str(broken)], capture_output=True,
                          check=False).returncode == 2


# -- derivation -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["campaign", "coder_reviewer", "sql_agent"])
def test_derive_equals_the_hand_written_transitions(name: str) -> None:
    """sql_agent's model -> model edge comes from create_agent's middleware wiring; it is in both."""
    module = __import__(f"graphs.{name}", fromlist=["graph"])
    transitions, warnings = derive_transitions(module.graph)
    hand = load_allowset(PATHS / f"{name}.yaml").transitions
    assert {k: sorted(v) for k, v in transitions.items()} == {k: sorted(v) for k, v in hand.items()}
    assert warnings == []


def test_derive_cli_writes_yaml_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "campaign.yaml"
    proc = subprocess.run([str(EXE), "paths", "derive", "graphs.campaign:graph", "-o", str(out)],
                          capture_output=True, text=True, cwd=ROOT, check=False,
                          env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert load_allowset(out).transitions == load_allowset(PATHS / "campaign.yaml").transitions or (
        {k: sorted(v) for k, v in load_allowset(out).transitions.items()}
        == {k: sorted(v) for k, v in load_allowset(PATHS / "campaign.yaml").transitions.items()}
    )


def test_derive_check_compares_without_touching_the_file(tmp_path: Path) -> None:
    """--check exits 0 on a match, 1 naming the differing hops; the file is never rewritten."""
    env = {**os.environ, "PYTHONPATH": ""}

    def check(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(EXE), "paths", "derive", "graphs.campaign:graph", "--check", str(path)],
                              capture_output=True, text=True, cwd=ROOT, check=False, env=env)

    checked_in = PATHS / "campaign.yaml"
    before = checked_in.read_bytes()
    same = check(checked_in)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "transitions match" in same.stdout
    assert checked_in.read_bytes() == before

    text = before.decode()
    assert "compose_touch: [" in text
    drifted = tmp_path / "campaign.yaml"
    edited = text.replace("__start__: [load_lead]", "__start__: [load_lead, send_touch]")
    assert edited != text
    drifted.write_text(edited)
    diff = check(drifted)
    assert diff.returncode == 1
    assert f"{drifted}: - __start__ -> send_touch" in diff.stdout
    assert drifted.read_text() == edited  # limits and description untouched


def test_derive_check_and_output_are_exclusive(tmp_path: Path) -> None:
    proc = subprocess.run([str(EXE), "paths", "derive", "graphs.campaign:graph", "-o", str(tmp_path / "x"),
                           "--check", str(PATHS / "campaign.yaml")], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert proc.returncode == 2
    assert not (tmp_path / "x").exists()


class State(TypedDict):
    n: int


def test_derive_warns_on_invisible_conditional_edge() -> None:
    from langgraph.graph import END, START, StateGraph

    def route(state: State) -> str:  # no Literal annotation, no path_map: invisible
        return "b" if state["n"] < 3 else END

    builder = StateGraph(State)
    builder.add_node("a", lambda s: {"n": s["n"] + 1})
    builder.add_node("b", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", route)
    builder.add_edge("b", "a")
    transitions, warnings = derive_transitions(builder.compile())
    if transitions["a"] == ["__end__"]:
        assert any("'a'" in w and "invisible" in w for w in warnings)
    else:  # this langgraph version draws an unannotated branch to every node
        assert "b" in transitions["a"]


def test_walk_helper_steps_are_distinct() -> None:
    assert len({s.summary for s in walk("a", "a", "a")}) == 3
    assert messages(("a", "x"))[0].summary == "x"
