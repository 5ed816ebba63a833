"""Tests for the scripted target graphs (``graphs/``) and their allow-sets (``expected_paths/``).

The expected node sequences below are the scripted behaviour documented in each graph
module's docstring; a change to a script must change both.

``sql_agent``: ``get_graph()`` shows a ``model -> model`` edge on top of the plain
``model <-> tools`` protocol. ``create_agent`` adds it because the agent has a
``wrap_model_call`` middleware (``StepSummaryMiddleware``, which writes ``summary``), and
such middleware may inject synthetic tool messages that send control back to the model.
The allow-set lists the edge because the compiled graph really has it. The scripted runs
never take it (see ``test_legal_scenarios_stay_inside_allow_set``).
"""

from __future__ import annotations

import importlib
import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPECTED_PATHS = REPO_ROOT / "expected_paths"
GRAPH_NAMES = ("campaign", "coder_reviewer", "sql_agent")
ALL_SCENARIOS = ("healthy", "looping", "ping_pong", "stalled", "illegal_hop", "dead_end")

Step = tuple[str, dict[str, Any]]

_CAMPAIGN_SENT = ["load_lead", "compose_touch", "gate_draft", "approve_send", "send_touch"]
EXPECTED_SEQUENCES: dict[tuple[str, str], list[str]] = {
    ("campaign", "healthy"): [
        "load_lead",
        "compose_touch",
        "gate_draft",
        "compose_touch",
        "gate_draft",
        "approve_send",
        "send_touch",
        "check_reply",
        "check_reply",
        "check_reply",
    ],
    ("campaign", "looping"): [*_CAMPAIGN_SENT, *["check_reply"] * 12],
    ("campaign", "ping_pong"): [
        "load_lead",
        *["compose_touch", "gate_draft"] * 6,
        "approve_send",
        "send_touch",
        "check_reply",
    ],
    ("campaign", "stalled"): [*_CAMPAIGN_SENT, "check_reply", "check_reply"],
    ("campaign", "illegal_hop"): ["load_lead", "compose_touch", "send_touch", "check_reply"],
    ("campaign", "dead_end"): ["load_lead", "compose_touch", "gate_draft"],
    ("coder_reviewer", "healthy"): ["coder", "coder", "reviewer", "coder", "reviewer"],
    ("coder_reviewer", "looping"): ["coder", "reviewer"] * 8,
    ("coder_reviewer", "ping_pong"): ["coder", "reviewer"] * 6,
    ("coder_reviewer", "stalled"): ["coder", "coder", "reviewer"],
    ("coder_reviewer", "illegal_hop"): ["coder", "reviewer", "reviewer"],
    ("coder_reviewer", "dead_end"): ["coder", "reviewer", "coder"],
    ("sql_agent", "healthy"): ["model", "tools", "model", "tools", "model"],
    ("sql_agent", "looping"): [*["model", "tools"] * 6, "model"],
    ("sql_agent", "ping_pong"): [*["model", "tools"] * 6, "model"],
    ("sql_agent", "stalled"): [*["model", "tools"] * 4, "model"],
}
CASES = sorted(EXPECTED_SEQUENCES)
APPROVAL_NODE = "approve_send"
"""The campaign's approval step (liveguard.live.approval): it writes the verdict row and an audit record."""


# ---------------------------------------------------------------------------- helpers


def load_module(graph_name: str) -> ModuleType:
    return importlib.import_module(f"graphs.{graph_name}")


def load_allow_set(graph_name: str) -> dict[str, Any]:
    with (EXPECTED_PATHS / f"{graph_name}.yaml").open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    assert isinstance(data, dict)
    return data


def build(module: ModuleType, scenario: str, checkpointer: Any = None) -> Any:
    """``build_graph``, or ``scripted_graph`` where the graph asks a person (campaign's approval step)."""
    return getattr(module, "scripted_graph", module.build_graph)(scenario, checkpointer=checkpointer)


def derive_transitions(compiled: Any) -> dict[str, list[str]]:
    """``{source: sorted targets}`` from the edges ``compiled.get_graph()`` draws."""
    targets: dict[str, set[str]] = {}
    for edge in compiled.get_graph().edges:
        targets.setdefault(edge.source, set()).add(edge.target)
    return {source: sorted(dests) for source, dests in sorted(targets.items())}


def run(
    graph_name: str, scenario: str, *, checkpointer: Any = None, thread_id: str | None = None
) -> list[Step]:
    """Stream one scenario with ``stream_mode="updates"`` and return its (node, update) steps."""
    module = load_module(graph_name)
    compiled = build(module, scenario, checkpointer)
    config = {
        "recursion_limit": 100,
        "configurable": {"thread_id": thread_id or f"{graph_name}-{scenario}"},
    }
    steps: list[Step] = []
    for chunk in compiled.stream(module.initial_input(scenario), config, stream_mode="updates"):
        assert len(chunk) == 1, f"expected one node per superstep, got {list(chunk)}"
        ((node, update),) = chunk.items()
        assert isinstance(update, dict), f"{node} wrote {update!r}"
        steps.append((node, update))
    return steps


def nodes_of(steps: list[Step]) -> list[str]:
    return [node for node, _ in steps]


def transitions_of(steps: list[Step]) -> list[tuple[str, str]]:
    """Consecutive hops of a run, including ``__start__ -> first`` and ``last -> __end__``."""
    path = [START, *nodes_of(steps), END]
    return list(itertools.pairwise(path))


def without_message_ids(value: Any) -> Any:
    """Plain data of ``value`` with LangChain message ``id`` fields removed."""
    if isinstance(value, BaseMessage):
        dumped = value.model_dump()
        dumped.pop("id", None)
        return without_message_ids(dumped)
    if isinstance(value, dict):
        return {key: without_message_ids(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_message_ids(item) for item in value]
    return value


def without_thread_ids(steps: Any) -> Any:
    """The approval step's verdict row names the thread (its run id): drop it for comparisons."""
    out = []
    for node, update in steps:
        if node == APPROVAL_NODE:
            row = {k: v for k, v in update["approval"].items() if k != "run_id"}
            out.append((node, {**update, "approval": row}))
        else:
            out.append((node, update))
    return out


def content_of(update: dict[str, Any]) -> Any:
    """An update minus every id (message ids, tool-call ids): what a loop detector compares."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                key: scrub(item) for key, item in value.items() if key not in ("id", "tool_call_id")
            }
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    return scrub(without_message_ids(update))


def updates_of(steps: list[Step], node: str) -> list[dict[str, Any]]:
    return [update for name, update in steps if name == node]


def summaries_of(steps: list[Step], node: str) -> list[str]:
    return [update["summary"] for update in updates_of(steps, node)]


def all_identical(items: list[Any]) -> bool:
    return len(items) > 1 and all(item == items[0] for item in items)


def all_distinct(items: list[Any]) -> bool:
    return all(items.count(item) == 1 for item in items)


def tool_calls_of(steps: list[Step]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for node, update in steps:
        if node != "model":
            continue
        (message,) = update["messages"]
        assert isinstance(message, AIMessage)
        calls.extend(dict(call) for call in message.tool_calls)
    return calls


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


# ---------------------------------------------------------------- module API, allow-sets


@pytest.mark.parametrize("graph_name", GRAPH_NAMES)
def test_module_api(graph_name: str) -> None:
    module = load_module(graph_name)
    assert graph_name == module.GRAPH_NAME
    assert isinstance(module.SCENARIOS, tuple)
    assert set(module.SCENARIOS) <= set(ALL_SCENARIOS)
    assert {s for g, s in EXPECTED_SEQUENCES if g == graph_name} == set(module.SCENARIOS)
    assert module.graph.get_graph() is not None
    for scenario in module.SCENARIOS:
        assert isinstance(module.initial_input(scenario), dict)


def test_scenario_coverage() -> None:
    """campaign and coder_reviewer support all six scenarios; sql_agent the four agent ones."""
    assert load_module("campaign").SCENARIOS == ALL_SCENARIOS
    assert load_module("coder_reviewer").SCENARIOS == ALL_SCENARIOS
    assert set(load_module("sql_agent").SCENARIOS) == {"healthy", "looping", "ping_pong", "stalled"}


@pytest.mark.parametrize("graph_name", GRAPH_NAMES)
def test_unknown_scenario_raises_value_error(graph_name: str) -> None:
    module = load_module(graph_name)
    with pytest.raises(ValueError, match=r"'nope'.*valid scenarios: healthy, looping") as info:
        module.build_graph("nope")
    for scenario in module.SCENARIOS:
        assert scenario in str(info.value)
    with pytest.raises(ValueError, match="nope"):
        module.initial_input("nope")


@pytest.mark.parametrize("graph_name", GRAPH_NAMES)
def test_allow_set_transitions_equal_get_graph_edges(graph_name: str) -> None:
    module = load_module(graph_name)
    allow_set = load_allow_set(graph_name)
    expected = {src: sorted(dests) for src, dests in allow_set["transitions"].items()}
    assert derive_transitions(module.graph) == expected
    for scenario in module.SCENARIOS:  # scenario builds never change the topology
        assert derive_transitions(module.build_graph(scenario)) == expected


@pytest.mark.parametrize("graph_name", GRAPH_NAMES)
def test_allow_set_file_is_well_formed(graph_name: str) -> None:
    module = load_module(graph_name)
    allow_set = load_allow_set(graph_name)
    assert set(allow_set) <= {"graph", "description", "transitions", "limits", "tools"}
    assert allow_set["graph"] == module.GRAPH_NAME
    transitions = allow_set["transitions"]
    nodes = set(module.graph.get_graph().nodes)
    assert START in transitions
    assert END not in transitions
    assert set(transitions) | {END} == nodes
    for dests in transitions.values():
        assert isinstance(dests, list)
        assert dests == sorted(dests)
        assert set(dests) <= nodes - {START}
    for node, ceiling in allow_set.get("limits", {}).items():
        assert node in nodes - {START, END}
        assert isinstance(ceiling, int)
        assert ceiling > 0
    for policy in allow_set.get("tools", {}).values():
        assert isinstance(policy, dict)


def test_sql_agent_uses_create_agent_node_names() -> None:
    module = load_module("sql_agent")
    assert (module.MODEL_NODE, module.TOOLS_NODE) == ("model", "tools")
    assert set(module.graph.get_graph().nodes) == {START, "model", "tools", END}
    assert set(load_allow_set("sql_agent")["tools"]) == {module.TOOL_NAME}


# ------------------------------------------------------------------ scripted behaviour


@pytest.mark.parametrize(("graph_name", "scenario"), CASES)
def test_node_sequence(graph_name: str, scenario: str) -> None:
    steps = run(graph_name, scenario)
    assert nodes_of(steps) == EXPECTED_SEQUENCES[(graph_name, scenario)]
    for node, update in steps:
        if node == APPROVAL_NODE:
            assert set(update) == {"approval", "approvals"}
            continue
        assert isinstance(update.get("summary"), str), f"{node} wrote no summary"
        assert update["summary"].strip()


@pytest.mark.parametrize(("graph_name", "scenario"), CASES)
def test_runs_are_deterministic(graph_name: str, scenario: str) -> None:
    """Two runs give the same updates byte for byte once LangChain message ids are removed."""
    first = without_thread_ids(without_message_ids(run(graph_name, scenario, thread_id="first")))
    second = without_thread_ids(without_message_ids(run(graph_name, scenario, thread_id="second")))
    assert first == second
    assert repr(first) == repr(second)


@pytest.mark.parametrize(("graph_name", "scenario"), CASES)
def test_invoke_terminates_within_recursion_limit(graph_name: str, scenario: str) -> None:
    module = load_module(graph_name)
    compiled = build(module, scenario)
    final = compiled.invoke(
        module.initial_input(scenario),
        {"recursion_limit": 100, "configurable": {"thread_id": "invoke"}},
    )
    assert final["summary"] == run(graph_name, scenario)[-1][1]["summary"]


@pytest.mark.parametrize("graph_name", GRAPH_NAMES)
def test_healthy_revisits_write_new_content(graph_name: str) -> None:
    steps = run(graph_name, "healthy")
    revisited = [node for node, count in Counter(nodes_of(steps)).items() if count > 1]
    assert revisited
    for node in revisited:
        summaries = summaries_of(steps, node)
        assert all_distinct(summaries), summaries
        assert all_distinct([content_of(u) for u in updates_of(steps, node)])


def test_campaign_healthy_polls_with_changing_status() -> None:
    steps = run("campaign", "healthy")
    statuses = [update["reply_status"] for update in updates_of(steps, "check_reply")]
    assert statuses == ["waiting 1", "waiting 2", "replied"]


def test_campaign_looping_polls_identically() -> None:
    steps = run("campaign", "looping")
    polls = [content_of(update) for update in updates_of(steps, "check_reply")]
    assert len(polls) == 12
    assert all_identical(polls)
    assert polls[0]["summary"] == "no reply from lead 17"


def test_campaign_ping_pong_bounces_the_same_draft() -> None:
    steps = run("campaign", "ping_pong")
    drafts = [content_of(u) for u in updates_of(steps, "compose_touch")]
    verdicts = [content_of(u) for u in updates_of(steps, "gate_draft")]
    assert len(drafts) == len(verdicts) == 6
    assert all_identical(drafts)
    assert all_identical(verdicts)
    assert verdicts[0]["verdict"] == "rejected"


def test_campaign_stalled_repeats_consecutively() -> None:
    steps = run("campaign", "stalled")
    (node_a, update_a), (node_b, update_b) = steps[-2:]
    assert node_a == node_b == "check_reply"
    assert content_of(update_a) == content_of(update_b)
    assert update_a["summary"] == "no reply from lead 17"


def test_coder_reviewer_ping_pong_repeats_identical_rounds() -> None:
    steps = run("coder_reviewer", "ping_pong")
    coder = [content_of(u) for u in updates_of(steps, "coder")]
    reviewer = [content_of(u) for u in updates_of(steps, "reviewer")]
    assert len(coder) == len(reviewer) == 6
    assert all_identical(coder)
    assert all_identical(reviewer)


def test_coder_reviewer_looping_is_new_content_beyond_limits() -> None:
    """looping never repeats content; it only exceeds the allow-set's visit ceilings."""
    steps = run("coder_reviewer", "looping")
    for node in ("coder", "reviewer"):
        assert all_distinct(summaries_of(steps, node))
        assert all_distinct([content_of(u) for u in updates_of(steps, node)])
    limits = load_allow_set("coder_reviewer")["limits"]
    visits = Counter(nodes_of(steps))
    assert all(visits[node] > ceiling for node, ceiling in limits.items())


def test_coder_reviewer_stalled_repeats_consecutively() -> None:
    steps = run("coder_reviewer", "stalled")
    (node_a, update_a), (node_b, update_b) = steps[:2]
    assert node_a == node_b == "coder"
    assert content_of(update_a) == content_of(update_b)
    assert update_a["build"].startswith("failed")


def test_sql_agent_looping_repeats_the_same_failing_call() -> None:
    steps = run("sql_agent", "looping")
    calls = tool_calls_of(steps)
    assert len(calls) == 6
    assert [call["id"] for call in calls] == [f"call_{n}" for n in range(1, 7)]
    assert all_identical([(call["name"], call["args"]) for call in calls])
    key_orders = {tuple(call["args"]) for call in calls}
    assert key_orders == {("query", "max_rows"), ("max_rows", "query")}
    results = [content_of(u) for u in updates_of(steps, "tools")]
    assert all_identical(results)
    assert results[0]["messages"][0]["content"] == (
        '{"error": "no such table: sales", "retryable": false}'
    )
    assert all_identical(summaries_of(steps, "model")[:-1])


def test_sql_agent_ping_pong_alternates_two_failing_queries() -> None:
    steps = run("sql_agent", "ping_pong")
    queries = [call["args"]["query"] for call in tool_calls_of(steps)]
    assert len(queries) == 6
    first, second = queries[0], queries[1]
    assert first != second
    assert queries == [first, second] * 3
    results = [content_of(u) for u in updates_of(steps, "tools")]
    assert results[0::2] == [results[0]] * 3
    assert results[1::2] == [results[1]] * 3
    assert results[0] != results[1]
    assert all("error" in r["summary"] for r in results)


def test_sql_agent_stalled_polls_without_progress() -> None:
    steps = run("sql_agent", "stalled")
    results = [content_of(u) for u in updates_of(steps, "tools")]
    assert len(results) == 4
    assert all_identical(results)
    assert results[0]["summary"] == 'run_sql ok: 1 row(s) [["running"]]'
    assert len({call["id"] for call in tool_calls_of(steps)}) == 4


def test_run_sql_tool_returns_json_rows_and_errors() -> None:
    run_sql = load_module("sql_agent").run_sql
    ok = run_sql.invoke({"query": "SELECT COUNT(*) AS n FROM orders"})
    assert ok == '{"columns": ["n"], "rows": [[5]]}'
    error = run_sql.invoke({"query": "SELECT * FROM x", "max_rows": 1})
    assert error == '{"error": "no such table: x", "retryable": false}'


def test_module_level_graph_can_be_run_repeatedly() -> None:
    """The module-level graphs (used by ``paths derive``) replay the healthy run every time."""
    for graph_name in GRAPH_NAMES:
        module = load_module(graph_name)
        finals = [
            (build(module, "healthy") if graph_name == "campaign" else module.graph).invoke(
                module.initial_input("healthy"), {"recursion_limit": 100}
            )
            for _ in range(2)
        ]
        assert finals[0]["summary"] == finals[1]["summary"]


# ------------------------------------------------------ allow-set conformance of runs


@pytest.mark.parametrize(
    ("graph_name", "scenario"),
    [case for case in CASES if case[1] not in ("illegal_hop", "dead_end")],
)
def test_legal_scenarios_stay_inside_allow_set(graph_name: str, scenario: str) -> None:
    transitions = load_allow_set(graph_name)["transitions"]
    for source, target in transitions_of(run(graph_name, scenario)):
        assert target in transitions[source], f"{source} -> {target}"


@pytest.mark.parametrize("graph_name", GRAPH_NAMES)
def test_healthy_runs_stay_within_limits(graph_name: str) -> None:
    limits = load_allow_set(graph_name).get("limits", {})
    visits = Counter(nodes_of(run(graph_name, "healthy")))
    for node, ceiling in limits.items():
        assert visits[node] <= ceiling, node


@pytest.mark.parametrize(
    ("graph_name", "hop"),
    [("campaign", ("compose_touch", "send_touch")), ("coder_reviewer", ("reviewer", "reviewer"))],
)
def test_illegal_hop_takes_one_undeclared_transition(graph_name: str, hop: tuple[str, str]) -> None:
    """The illegal_hop run takes exactly one hop that is neither drawn nor allowed."""
    module = load_module(graph_name)
    transitions = load_allow_set(graph_name)["transitions"]
    drawn = derive_transitions(module.build_graph("illegal_hop"))
    taken = transitions_of(run(graph_name, "illegal_hop"))
    assert hop in taken
    assert hop[1] not in transitions[hop[0]]
    assert hop[1] not in drawn[hop[0]]
    illegal = [(src, dst) for src, dst in taken if dst not in transitions[src]]
    assert illegal == [hop]


@pytest.mark.parametrize(
    ("graph_name", "last_node"), [("campaign", "gate_draft"), ("coder_reviewer", "coder")]
)
def test_dead_end_finishes_on_node_without_end_edge(graph_name: str, last_node: str) -> None:
    """The dead_end run stops on a node that has no edge to ``__end__`` in the allow-set."""
    transitions = load_allow_set(graph_name)["transitions"]
    taken = transitions_of(run(graph_name, "dead_end"))
    assert taken[-1] == (last_node, END)
    assert END not in transitions[last_node]
    assert all(dst in transitions[src] for src, dst in taken[:-1])


# ------------------------------------------------------------------------ checkpointer


@pytest.mark.parametrize(
    ("graph_name", "scenario"), [("campaign", "looping"), ("sql_agent", "healthy")]
)
def test_runs_with_sqlite_checkpointer(
    graph_name: str, scenario: str, sqlite_saver: SqliteSaver
) -> None:
    steps = run(graph_name, scenario, checkpointer=sqlite_saver, thread_id="persisted")
    assert nodes_of(steps) == EXPECTED_SEQUENCES[(graph_name, scenario)]
    compiled = build(load_module(graph_name), scenario, sqlite_saver)
    config = {"configurable": {"thread_id": "persisted"}}
    history = list(compiled.get_state_history(config))
    # one checkpoint for the input, one per step, plus the initial empty one
    assert len(history) == len(steps) + 2
    latest = compiled.get_state(config)
    assert latest.next == ()
    assert latest.values["summary"] == steps[-1][1]["summary"]
