"""Live and offline are one rule engine: every golden scenario, replayed both ways, agrees.

Offline: the recorded run in ``golden_datasets/`` through ``check_trajectory`` (the same
call the eval graph's ``loop_guard`` makes). Live: the real target graph, wrapped by
``guard()`` with the same policy and allow-set, run to its first hard violation. The guard
must stop exactly where offline scoring finds the first hard violation (same step, a code
found there), and a run that offline scoring passes must run to its end untouched.

Forks and replays (issue 17): the guard's verdict on a fork or a replay equals
``check_trajectory`` on the fork's own history (the lineage of its checkpoints), not on
everything the thread ever ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graphs import campaign, coder_reviewer, sql_agent
from liveguard import NoProgressError, Policy, Trajectory, Violation, check_trajectory, read_jsonl
from liveguard.core.allowset import load_allowsets
from liveguard.integrations.langgraph import guard
from test_live_core import cfg, poll_graph

ROOT = Path(__file__).resolve().parent.parent
ALLOW_SETS = load_allowsets(ROOT / "expected_paths")
MODULES: dict[str, Any] = {"campaign": campaign, "coder_reviewer": coder_reviewer, "sql_agent": sql_agent}


def _golden() -> list[Trajectory]:
    runs: list[Trajectory] = []
    for name in MODULES:
        for item in read_jsonl(ROOT / "golden_datasets" / f"{name}.jsonl"):
            assert isinstance(item, Trajectory), item
            runs.append(item)
    return runs


def _policy(run: Trajectory) -> Policy:
    preset = (run.metadata or {}).get("policy", "workflow")
    return Policy.tool_agent() if preset == "tool_agent" else Policy.workflow()


def _compiled(graph: str, scenario: str) -> Any:
    module = MODULES[graph]
    if graph == "campaign":  # its approval step needs a person: the scripted one answers
        return module.scripted_graph(scenario)
    return module.build_graph(scenario)


def _first_hard(found: list[Violation]) -> tuple[int, set[str]] | None:
    hard = [v for v in found if v.hard]
    if not hard:
        return None
    step = min(v.step for v in hard)
    return step, {v.code for v in hard if v.step == step}


@pytest.mark.parametrize("run", _golden(), ids=lambda r: r.run_id)
def test_live_guard_stops_where_offline_scoring_finds_the_first_hard_violation(run: Trajectory) -> None:
    assert run.graph is not None
    scenario = (run.metadata or {})["scenario"]
    policy, allow = _policy(run), ALLOW_SETS[run.graph]
    offline = _first_hard(check_trajectory(run.steps, policy, allow))

    app = guard(_compiled(run.graph, scenario), policy=policy, allow_set=allow, exit_behavior="error")
    try:
        app.invoke(MODULES[run.graph].initial_input(scenario))
    except NoProgressError as exc:
        live: tuple[int, str] | None = (exc.violation.step, exc.violation.code)
    else:
        live = None

    if offline is None:
        assert live is None, f"live stopped a run offline scoring passes: {live}"
        assert run.expected is not None
        assert run.expected.passed
    else:
        assert live is not None, f"offline found {offline}, the live guard let the run finish"
        step, codes = offline
        assert live[0] == step, (live, offline)
        assert live[1] in codes, (live, offline)


# -------------------------------------------------------------------- forks and replays
def own_history(app: Any, config: dict[str, Any]) -> list[Any]:
    """The poll graph's steps on the lineage of ``config``'s checkpoint, oldest first."""
    from liveguard.readers.stream import steps_from_updates

    lineage = []
    snapshot = app.get_state(config)
    while snapshot is not None:
        if snapshot.next == () and "notes" in snapshot.values:
            lineage.append(snapshot.values["notes"])
        parent = snapshot.parent_config
        snapshot = app.get_state(parent) if parent else None
    return steps_from_updates([{"poll": {"notes": notes}} for notes in reversed(lineage)])


def live_findings(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int]]:
    return [(r.args[0], r.args[1]) for r in caplog.records  # type: ignore[index]
            if r.name == "liveguard.guard" and "at step" in r.msg]


@pytest.mark.parametrize("kind", ["fork", "replay"])
def test_the_verdict_on_a_fork_or_replay_equals_check_trajectory_on_its_own_history(
        kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """Live/offline agreement: the guard on a fork or a replay judges the lineage it runs on."""
    app = guard(poll_graph(InMemorySaver()), exit_behavior="warn")
    thread = cfg(f"agree-{kind}")
    app.invoke({"topic": "a"}, thread)
    first = [s.config for s in app.get_state_history(thread)]
    after_a, before_a = first[0], first[1]
    app.invoke({"topic": "b"}, thread)
    caplog.clear()
    if kind == "fork":
        app.invoke(None, app.update_state(after_a, {"topic": "a"}, as_node="__start__"))
    else:
        app.invoke(None, before_a)
    latest = app.get_state(thread).config
    offline = check_trajectory(own_history(app, latest), Policy.workflow(max_revisits=25))
    assert live_findings(caplog) == [(v.code, v.step) for v in offline if v.hard]
    assert bool(offline) is (kind == "fork")  # the fork's own history is a stall; the replay's is not
