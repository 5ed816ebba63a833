"""LangSmith run trees (readers.langsmith) and checkpoint histories → Trajectories.

The equivalence tests record every scenario of the target graphs (``graphs/``) twice
over in one execution: under a ``langchain_core`` run collector (the run tree LangSmith
stores) and with a real ``SqliteSaver`` (the checkpoint history). Each golden run then
comes in four forms: the JSONL trajectory, the LangSmith JSON export
(``golden_datasets/langsmith/``), the live tracer run and the checkpoint history. All four
must give the same steps and the same verdict, the expected one. The online path talks
HTTP to ``tests/fake_langsmith.py``; nothing contacts a real service.
"""

from __future__ import annotations

import importlib
import operator
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypedDict

import orjson
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

from fake_langsmith import FakeLangSmith, OffHostRequestError, flatten
from liveguard import Policy, Step, Trajectory, TrajectoryReadError, check_trajectory, read_jsonl
from liveguard.core.allowset import load_allowsets
from liveguard.core.model import Expected
from liveguard.integrations.langsmith import list_project_trajectories, push_feedback
from liveguard.readers.checkpoints import thread_to_trajectory
from liveguard.readers.langsmith import MAX_RUN_DEPTH, load_export, run_to_dict, run_to_trajectory

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "golden_datasets"
EXPORTS = GOLDEN / "langsmith"
ALLOW_SETS = load_allowsets(ROOT / "expected_paths")
GRAPHS = ("campaign", "coder_reviewer", "sql_agent")
POLICY = {"sql_agent": "tool_agent"}


def verdict(run: Trajectory) -> tuple[bool, list[str]]:
    """(passed, hard codes) with the run's policy preset and its graph's allow-set."""
    preset = (run.metadata or {}).get("policy", "workflow")
    policy = Policy.tool_agent() if preset == "tool_agent" else Policy.workflow()
    violations = check_trajectory(run.steps, policy, ALLOW_SETS.get(run.graph or ""))
    hard = sorted({v.code for v in violations if v.hard})
    return not hard, hard


def expected_pair(expected: Expected | None) -> tuple[bool, list[str]]:
    assert expected is not None
    return expected.passed, expected.hard_codes


def golden_jsonl(graph: str) -> dict[str, Trajectory]:
    """The JSONL runs of a graph, by scenario."""
    runs = {}
    for item in read_jsonl(GOLDEN / f"{graph}.jsonl"):
        assert isinstance(item, Trajectory), item
        runs[(item.metadata or {})["scenario"]] = item
    return runs


def golden_export(graph: str) -> dict[str, Trajectory]:
    """The LangSmith export runs of a graph, by scenario."""
    runs = {}
    for item in load_export(EXPORTS / f"{graph}.json"):
        assert isinstance(item, Trajectory), item
        runs[(item.metadata or {})["scenario"]] = item
    return runs


def golden_cases() -> list[tuple[str, str]]:
    return [(graph, scenario) for graph in GRAPHS for scenario in golden_jsonl(graph)]


@contextmanager
def recorded(graph: str, scenario: str) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """Run a scenario once under a run collector with a real SqliteSaver.

    Yields (root run, compiled graph, thread config); the saver stays open inside.
    """
    module = importlib.import_module(f"graphs.{graph}")
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        build = getattr(module, "scripted_graph", module.build_graph)  # campaign: scripted approval
        compiled = build(scenario, checkpointer=SqliteSaver(conn))
        collector = RunCollectorCallbackHandler()
        metadata = {"scenario": scenario, **({"policy": POLICY[graph]} if graph in POLICY else {})}
        thread = {"configurable": {"thread_id": f"{graph}-{scenario}"}}
        compiled.invoke(module.initial_input(scenario),
                        {"recursion_limit": 100, "callbacks": [collector], "metadata": metadata, **thread})
        assert len(collector.traced_runs) == 1
        yield collector.traced_runs[0], compiled, thread
    finally:
        conn.close()


# ------------------------------------------------------------------- every format, same verdict


@pytest.mark.parametrize(("graph", "scenario"), golden_cases(), ids="-".join)
def test_every_input_format_gives_the_same_steps_and_verdict(graph: str, scenario: str) -> None:
    jsonl = golden_jsonl(graph)[scenario]
    export = golden_export(graph)[scenario]
    with recorded(graph, scenario) as (root, compiled, thread):
        live = run_to_trajectory(root)
        history = thread_to_trajectory(compiled, thread)
    want = expected_pair(jsonl.expected)
    for name, run in (("export", export), ("tracer", live), ("checkpoints", history)):
        assert run.steps == jsonl.steps, name
        assert run.graph == graph, name
        assert (run.metadata or {}).get("policy") == (jsonl.metadata or {}).get("policy"), name
        assert verdict(run) == want, name
    assert verdict(jsonl) == want
    assert expected_pair(export.expected) == want  # the export carries its verdict in metadata
    assert live.status == export.status == history.status == "success"


def test_tracer_run_and_its_json_export_convert_identically() -> None:
    with recorded("sql_agent", "looping") as (root, _, _):
        live = run_to_trajectory(root)
        exported = orjson.loads(orjson.dumps(run_to_dict(root)))
    from_json = run_to_trajectory(exported)
    assert from_json == live
    assert live.run_id == str(root.id)
    start = (live.metadata or {}).pop("start_time")  # the root's start: the gate's window order
    assert datetime.fromisoformat(start) == root.start_time.replace(tzinfo=UTC)
    assert live.metadata == {"source": "langsmith", "scenario": "looping", "policy": "tool_agent"}
    # the outcome is the root's outputs, messages without ids or provider metadata
    last = live.outcome["messages"][-1]
    assert last == {"type": "ai", "content": last["content"], "name": "sql_agent"}
    assert all("id" not in message and "response_metadata" not in message
               for message in live.outcome["messages"])


def test_golden_exports_are_self_describing() -> None:
    for graph in GRAPHS:
        roots = orjson.loads((EXPORTS / f"{graph}.json").read_bytes())
        jsonl = golden_jsonl(graph)
        exported = golden_export(graph)
        assert set(exported) == set(jsonl)
        for root in roots:
            metadata = root["extra"]["metadata"]
            assert metadata["graph"] == graph
            run = exported[metadata["scenario"]]
            assert run.run_id == root["id"]
            assert (run.metadata or {}).pop("start_time") == root["start_time"].replace("Z", "+00:00")
            assert run.metadata == {
                "source": "langsmith",
                **(jsonl[metadata["scenario"]].metadata or {}),
                "session_id": root["session_id"],
            }
            assert run.expected == jsonl[metadata["scenario"]].expected
            # a flat list of the same runs (children naming their parent) is the same run
            flat = list(flatten(root))[::-1]
            assert run_to_trajectory(flat).steps == run.steps


def test_record_graphs_reproduces_the_exports_byte_for_byte(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "record_graphs.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True)
    for graph in GRAPHS:
        assert (tmp_path / "langsmith" / f"{graph}.json").read_bytes() == (
            EXPORTS / f"{graph}.json").read_bytes(), graph
        assert (tmp_path / f"{graph}.jsonl").read_bytes() == (GOLDEN / f"{graph}.jsonl").read_bytes()


def test_module_imports_no_framework() -> None:
    code = (
        "import sys, liveguard, liveguard.readers.langsmith\n"
        "import liveguard.readers.checkpoints\n"
        "import liveguard.readers.message_list, liveguard.integrations.langsmith\n"
        "import liveguard.report\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('langsmith', 'langchain', "
        "'langchain_core', 'langgraph', 'openai')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------- subgraphs


class Loop(TypedDict, total=False):
    summary: str
    steps: Annotated[list[str], operator.add]


def _subgraph_graph() -> Any:
    """prep -> sub (a compiled subgraph node) -> wrap (a node invoking it) -> deep (nested)."""

    def poll(state: Loop) -> dict[str, Any]:
        return {"summary": "still waiting", "steps": ["poll"]}

    def done(state: Loop) -> dict[str, Any]:
        return {"summary": f"done after {len(state.get('steps') or [])}", "steps": ["done"]}

    inner_builder = StateGraph(Loop)
    inner_builder.add_node("poll", poll)
    inner_builder.add_node("done", done)
    inner_builder.add_edge(START, "poll")
    inner_builder.add_conditional_edges(
        "poll", lambda s: "poll" if (s.get("steps") or []).count("poll") < 2 else "done", ["poll", "done"])
    inner = inner_builder.compile()

    middle_builder = StateGraph(Loop)
    middle_builder.add_node("mid", inner)
    middle_builder.add_edge(START, "mid")
    middle = middle_builder.compile()

    def prep(state: Loop) -> dict[str, Any]:
        return {"summary": "prepared", "steps": ["prep"]}

    def wrap(state: Loop) -> dict[str, Any]:
        result: dict[str, Any] = inner.invoke({"steps": []})
        return {"summary": result["summary"]}

    builder = StateGraph(Loop)
    builder.add_node("prep", prep)
    builder.add_node("sub", inner)
    builder.add_node("wrap", wrap)
    builder.add_node("deep", middle)
    builder.add_edge(START, "prep")
    builder.add_edge("prep", "sub")
    builder.add_edge("sub", "wrap")
    builder.add_edge("wrap", "deep")
    return builder.compile(checkpointer=InMemorySaver(), name="nested")


def test_subgraph_nodes_keep_their_namespace() -> None:
    graph = _subgraph_graph()
    collector = RunCollectorCallbackHandler()
    thread = {"configurable": {"thread_id": "nested-1"}}
    graph.invoke({"steps": []}, {"callbacks": [collector], **thread})
    run = run_to_trajectory(collector.traced_runs[0])
    names = [step.node for step in run.steps]
    assert names == [
        "prep",
        "sub:poll", "sub:poll", "sub:done",  # a compiled subgraph added as a node
        "wrap:poll", "wrap:poll", "wrap:done",  # a node function invoking the subgraph
        "deep:mid:poll", "deep:mid:done",  # two levels (the state already holds 2 polls)
    ]
    assert run.graph == "nested"
    # the checkpoint history (subgraph checkpoints under <node>:<task id>) and the JSON
    # export give the same steps
    history = thread_to_trajectory(graph, thread, graph_name="nested-graph")
    assert (history.steps, history.graph, history.run_id) == (run.steps, "nested-graph", "nested-1")
    assert run_to_trajectory(orjson.loads(orjson.dumps(run_to_dict(collector.traced_runs[0])))) == run
    # the two identical inner polls are a stall of the namespaced node
    hits = {(v.code, v.node) for v in check_trajectory(run.steps, Policy.workflow()) if v.hard}
    assert {("no_progress_stall", "sub:poll"), ("no_progress_stall", "wrap:poll")} <= hits


def test_namespace_falls_back_to_enclosing_node_names_without_checkpoint_ns() -> None:
    graph = _subgraph_graph()
    collector = RunCollectorCallbackHandler()
    graph.invoke({"steps": []}, {"callbacks": [collector], "configurable": {"thread_id": "n2"}})
    data = run_to_dict(collector.traced_runs[0])

    def strip(run: dict[str, Any]) -> None:
        for key in ("langgraph_checkpoint_ns", "checkpoint_ns"):
            run["extra"]["metadata"].pop(key, None)
        for child in run["child_runs"]:
            strip(child)

    strip(data)
    names = [step.node for step in run_to_trajectory(data).steps]
    assert names[:4] == ["prep", "sub:poll", "sub:poll", "sub:done"]
    assert names[-1] == "deep:mid:done"


# ---------------------------------------------------------------------------------- tool runs


@tool
def lookup(q: str) -> str:
    """Look a row up."""
    return f"row for {q}"


@tool
def explode(q: str) -> str:
    """Always fails."""
    raise ValueError(f"boom {q}")


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


def test_tool_runs_become_tool_steps() -> None:
    def worker(state: MessagesState) -> dict[str, Any]:
        """A node calling tools itself: its steps are read from the tool runs."""
        lookup.invoke({"q": "x"})
        echo.invoke("hello")  # a string input: recorded as {"input": "hello"}
        with suppress(ValueError):
            explode.invoke({"q": "y"})
        return {"messages": []}

    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("", tool_calls=[
            {"name": "explode", "args": {"q": "z"}, "id": "c1"},
            {"name": "lookup", "args": {"q": "w"}, "id": "c2"},
        ])]}

    builder = StateGraph(MessagesState)
    builder.add_node("worker", worker)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([explode, lookup], handle_tool_errors=True))
    builder.add_edge(START, "worker")
    builder.add_edge("worker", "model")
    builder.add_edge("model", "tools")
    graph = builder.compile(checkpointer=InMemorySaver())
    collector = RunCollectorCallbackHandler()
    thread = {"configurable": {"thread_id": "tools-1"}}
    graph.invoke({"messages": []}, {"callbacks": [collector], **thread})
    steps = run_to_trajectory(collector.traced_runs[0]).steps
    failure = "Error: ValueError('boom z')\n Please fix your mistakes."
    assert steps == [
        Step(node="worker", tool="lookup", args={"q": "x"}, result="row for x"),
        Step(node="worker", tool="echo", args="hello", result="hello"),
        # the tool run's error, cut before its traceback
        Step(node="worker", tool="explode", args={"q": "y"}, error="ValueError('boom y')"),
        Step(node="model", output={"type": "ai", "content": "", "tool_calls": [
            {"name": "explode", "args": {"q": "z"}, "id": "c1", "type": "tool_call"},
            {"name": "lookup", "args": {"q": "w"}, "id": "c2", "type": "tool_call"},
        ]}),
        # a ToolNode: the stream's steps, matched to the tool runs by call id
        Step(node="tools", tool="explode", args={"q": "z"}, result=failure, error=failure),
        Step(node="tools", tool="lookup", args={"q": "w"}, result="row for w"),
    ]
    # The checkpoint history has no tool runs: the worker node's update is all it shows.
    assert thread_to_trajectory(graph, thread).steps == [Step(node="worker"), *steps[3:]]


# -------------------------------------------------------------------------- odd / broken runs


def _node(run_id: str, node: str, step: int, outputs: Any = None, **fields: Any) -> dict[str, Any]:
    return {"id": run_id, "name": node, "run_type": "chain", "outputs": outputs,
            "extra": {"metadata": {"langgraph_node": node, "langgraph_step": step,
                                   "langgraph_checkpoint_ns": f"{node}:{run_id}"}},
            "start_time": f"2025-01-01T00:00:0{step}+00:00", "child_runs": [], **fields}


def _root(*children: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": "root-1", "name": "g", "run_type": "chain", "start_time": "2025-01-01T00:00:00Z",
            "end_time": "2025-01-01T00:00:09Z", "outputs": {"done": True},
            "child_runs": list(children), **fields}


def test_odd_but_readable_runs() -> None:
    run = run_to_trajectory(_root(
        _node("n3", "c", 3, {"output": "a bare string"}),  # not a state update: contentless
        _node("n1", "a", 1, {"summary": "first", "x": 1}),
        _node("n2", "b", 2, None, error="ValueError('no')"),  # a failed task: no step
        _node("n4", "d", 4, {"output": [{"graph": None, "update": {"summary": "cmd"}, "resume": None,
                                          "goto": "e"},
                                         {"graph": "__parent__", "update": {"x": 2}, "resume": None,
                                          "goto": []}]}),
        _node("n5", "e", 5, {"output": {"graph": None, "update": [["v", 1], ["v", 2]], "resume": None,
                                        "goto": []}}),
    ), graph="odd")
    assert run.steps == [
        Step(node="a", summary="first", output={"x": 1}),
        Step(node="c"),
        Step(node="d", summary="cmd"),  # the Command for the parent graph writes nothing here
        Step(node="e", output={"v": 1}),  # a channel written twice: two updates
        Step(node="e", output={"v": 2}),
    ]
    assert (run.run_id, run.graph, run.status, run.outcome) == ("root-1", "odd", "success", {"done": True})
    # the root run's name ("g"), not the graph's given here, is kept to show beside the id
    assert run.metadata == {"source": "langsmith", "start_time": "2025-01-01T00:00:00+00:00", "run_name": "g"}
    failed = run_to_trajectory(_root(error="RuntimeError('x')"))
    assert (failed.status, failed.steps) == ("error", [])


@pytest.mark.parametrize(
    ("run", "source", "reason"),
    [
        (_root(child_runs="nope"), "root-1", "child_runs is str"),
        (_root({"name": "no id"}), "root-1", "a run has no id"),
        (_root(extra=["not", "a", "dict"]), "root-1", "extra is list"),
        (_root(extra={"metadata": {"expected": {"passed": "maybe"}}}), "root-1", "passed"),
        (_root(_node("n1", "a", 1), _node("n2", "b", 2, child_runs=[_node("n1", "a", 1)])),
         "root-1", "appears twice"),
        (42, "<run>", "expected a run, got int"),
        ({"name": "no id at all"}, "<run>", "a run has no id"),
        ([{"id": "a", "parent_run_id": "b"}, {"id": "b", "parent_run_id": "a"}], "<run>", "cycle"),
        ([{"id": "a"}, {"id": "b"}], "<run>", "exactly one root run, found 2"),
    ],
)
def test_broken_runs_raise_a_read_error_named_by_the_run(run: Any, source: str, reason: str) -> None:
    with pytest.raises(TrajectoryReadError) as caught:
        run_to_trajectory(run)
    assert caught.value.source == source
    assert reason in caught.value.reason


def test_a_too_deep_run_tree_is_a_read_error_not_a_recursion_error() -> None:
    tree: dict[str, Any] = {"id": "leaf", "name": "x", "run_type": "chain"}
    for depth in range(MAX_RUN_DEPTH + 5):
        tree = {"id": f"r{depth}", "name": "x", "run_type": "chain", "child_runs": [tree]}
    with pytest.raises(TrajectoryReadError, match="deeper than"):
        run_to_trajectory(tree)


def test_a_run_object_whose_fields_raise_is_a_read_error() -> None:
    class Odd:
        id = "odd-1"

        @property
        def child_runs(self) -> list[Any]:
            raise RuntimeError("lazy load failed")

    with pytest.raises(TrajectoryReadError) as caught:
        run_to_trajectory(Odd())
    assert caught.value.source == "odd-1"
    # a foreign exception's message may quote the run: its type and place only
    assert caught.value.reason.startswith("RuntimeError: message withheld")
    assert "lazy load failed" not in caught.value.reason


def test_load_export_locates_errors_at_file_and_index(tmp_path: Path) -> None:
    good = orjson.loads((EXPORTS / "campaign.json").read_bytes())[0]
    path = tmp_path / "export.json"
    path.write_bytes(orjson.dumps([good, 42, _root(child_runs="nope"),
                                   {"id": "x", "parent_run_id": "y"}, {"id": "y", "parent_run_id": "x"}]))
    items = list(load_export(path))
    assert isinstance(items[0], Trajectory)
    errors = [(e.source, e.reason) for e in items[1:] if isinstance(e, TrajectoryReadError)]
    assert errors == [
        (f"{path}:1", "expected a run object, got int"),
        (f"{path}:2", "run root-1: child_runs is str, not a list"),
        (f"{path}:3", "run x is not reachable from a root run (parent_run_id cycle)"),
        (f"{path}:4", "run y is not reachable from a root run (parent_run_id cycle)"),
    ]

    single = tmp_path / "one.json"
    single.write_bytes(orjson.dumps(good))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_bytes(orjson.dumps({"runs": list(flatten(good))}))  # a flat /runs/query page
    flat, = load_export(wrapped)
    one, = load_export(single)
    assert isinstance(one, Trajectory)
    assert isinstance(flat, Trajectory)
    assert one.steps == flat.steps == items[0].steps  # type: ignore[union-attr]

    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    missing = tmp_path / "missing.json"
    scalar = tmp_path / "scalar.json"
    scalar.write_text("3")
    for file, reason in ((bad_json, "invalid JSON"), (missing, "cannot open"), (scalar, "got int")):
        error, = load_export(file)
        assert isinstance(error, TrajectoryReadError)
        assert error.source == str(file)
        assert reason in error.reason


# -------------------------------------------------------------------------- checkpoint errors


def test_thread_to_trajectory_errors_and_statuses() -> None:
    graph = _subgraph_graph()
    with pytest.raises(TrajectoryReadError) as caught:
        thread_to_trajectory(graph, {"configurable": {}})
    assert caught.value.source == "<thread>"
    with pytest.raises(TrajectoryReadError, match="no checkpoints") as caught:
        thread_to_trajectory(graph, {"configurable": {"thread_id": "never-ran"}})
    assert caught.value.source == "never-ran"

    def ok(state: Loop) -> dict[str, Any]:
        return {"summary": "ok", "steps": ["ok"]}

    def fails(state: Loop) -> dict[str, Any]:
        raise RuntimeError("down")

    def asks(state: Loop) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"summary": f"answer {answer}", "steps": ["asks"]}

    for second, status in ((fails, "error"), (asks, "interrupted")):
        builder = StateGraph(Loop)
        builder.add_node("ok", ok)
        builder.add_node("second", second)
        builder.add_edge(START, "ok")
        builder.add_edge("ok", "second")
        compiled = builder.compile(checkpointer=InMemorySaver())
        thread = {"configurable": {"thread_id": status}}
        collector = RunCollectorCallbackHandler()
        with suppress(RuntimeError):
            compiled.invoke({"steps": []}, {"callbacks": [collector], **thread})
        run = thread_to_trajectory(compiled, thread)
        assert (run.status, run.steps) == (status, [Step(node="ok", summary="ok")])
        assert run.metadata == {"source": "checkpoint"}
        traced = run_to_trajectory(collector.traced_runs[0])
        assert traced.steps == run.steps  # the failed / interrupted task gives no step
    assert traced.status == "success"  # an interrupt ends the traced run normally


# ---------------------------------------------------------------------------- online (fake API)


def test_list_project_runs_and_push_feedback(fake_langsmith: FakeLangSmith) -> None:
    fake_langsmith.page_size = 2  # the client follows the cursors
    client = fake_langsmith.client()
    runs = list(list_project_trajectories(client, "sql_agent"))
    exported = golden_export("sql_agent")
    assert all(isinstance(run, Trajectory) for run in runs)
    by_scenario = {(run.metadata or {})["scenario"]: run for run in runs}  # type: ignore[union-attr]
    assert by_scenario == exported  # the same runs as the JSON export, read over HTTP
    paths = {path for _, path in fake_langsmith.requests}
    assert {"/info", "/sessions", "/runs/query"} <= paths
    assert sum(1 for _, p in fake_langsmith.requests if p.startswith("/runs/") and p != "/runs/query") == 4

    for run in by_scenario.values():
        passed, codes = verdict(run)
        push_feedback(client, run.run_id, key="liveness", score=int(passed),
                      comment=",".join(codes) or None, session_id=(run.metadata or {})["session_id"])
    rows = {row["run_id"]: row for row in fake_langsmith.feedback}
    assert set(rows) == {run.run_id for run in runs}  # type: ignore[union-attr]
    looping = rows[by_scenario["looping"].run_id]
    assert (looping["key"], looping["score"], looping["comment"]) == (
        "liveness", 0, "content_cycle,excessive_loop,tool_no_progress")
    healthy = rows[by_scenario["healthy"].run_id]
    assert (healthy["score"], healthy.get("comment")) == (1, None)
    assert {row["session_id"] for row in rows.values()} == {fake_langsmith.projects["sql_agent"]}
    assert fake_langsmith.unexpected == []


def test_list_project_limit_unknown_project_and_unreadable_run(fake_langsmith: FakeLangSmith) -> None:
    import langsmith.utils

    client = fake_langsmith.client()
    assert len(list(list_project_trajectories(client, "campaign", limit=2))) == 2
    with pytest.raises(langsmith.utils.LangSmithNotFoundError):
        list(list_project_trajectories(client, "no-such-project"))

    items = list_project_trajectories(client, "coder_reviewer")
    first = next(items)
    assert isinstance(first, Trajectory)
    # the roots are listed already; one of the remaining ones disappears before it is read
    gone = next(r for r in golden_export("coder_reviewer").values() if r.run_id != first.run_id)
    with fake_langsmith.lock:
        del fake_langsmith.runs[gone.run_id]
    rest = list(items)
    errors = [item for item in rest if isinstance(item, TrajectoryReadError)]
    assert [(e.source, "cannot read run" in e.reason) for e in errors] == [(gone.run_id, True)]
    assert len(rest) == 5


def test_fake_client_never_leaves_the_local_server(fake_langsmith: FakeLangSmith) -> None:
    client = fake_langsmith.client()
    assert client.api_url == fake_langsmith.url
    with pytest.raises(OffHostRequestError):
        client.session.get("https://api.smith.langchain.com/info")
    assert fake_langsmith.unexpected == [("GET", "https://api.smith.langchain.com/info")]


def test_a_parent_chain_running_two_graphs_keeps_their_order() -> None:
    """Runs that are not node runs (a parent app) keep their order: graph by graph."""
    from langchain_core.runnables import RunnableLambda

    def first(state: Loop) -> dict[str, Any]:
        return {"summary": "first", "steps": ["first"]}

    def second(state: Loop) -> dict[str, Any]:
        return {"summary": "second", "steps": ["second"]}

    builder = StateGraph(Loop)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    graph = builder.compile()
    app = RunnableLambda(lambda _: [graph.invoke({"steps": []}), graph.invoke({"steps": []})])
    collector = RunCollectorCallbackHandler()
    app.invoke(None, {"callbacks": [collector]})
    run = run_to_trajectory(collector.traced_runs[0])
    assert [step.node for step in run.steps] == ["first", "second", "first", "second"]
    assert run.graph is None  # the root is the app, not a graph


def test_messages_in_dumpd_constructor_form() -> None:
    """Exports that store messages as ``dumpd`` constructor dicts read the same."""

    def lc(kind: str, **kwargs: Any) -> dict[str, Any]:
        return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", kind],
                "kwargs": {"id": "volatile", "response_metadata": {"t": 1}, **kwargs}}

    call = {"name": "run_sql", "args": {"query": "SELECT 1"}, "id": "c1", "type": "tool_call"}
    run = run_to_trajectory(_root(
        _node("m", "model", 1, {"messages": [lc("AIMessage", type="ai", content="", tool_calls=[call])]}),
        _node("t", "tools", 2, {"messages": [lc("ToolMessage", type="tool", content="[[1]]",
                                                 tool_call_id="c1", name="run_sql")]}),
    ))
    assert run.steps == [
        Step(node="model", output={"type": "ai", "content": "", "tool_calls": [call]}),
        Step(node="tools", tool="run_sql", args={"query": "SELECT 1"}, result="[[1]]"),
    ]
