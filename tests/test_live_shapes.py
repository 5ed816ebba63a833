"""Issue 30, items 1-3: live steps keep their inputs and their state, a repeat is judged with
what came back between, and a stop says what repeated and how to get out.

Each case of the issue's "Why" runs on real LangGraph graphs under ``guard()`` (InMemorySaver
and SqliteSaver on a file) and/or ``create_agent`` with ``LivenessMiddleware``; tools and
nodes count what really ran. Each healthy shape must run to its end (it was stopped on
main), and its looping twin must still be stopped, at the step main stopped it or earlier.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from graphs._scripted import ScriptedChatModel
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import ToolCallLimitMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

import liveguard
from liveguard import NodePolicy, NoProgressError, Policy, Violation
from liveguard.core.allowset import AllowSet
from liveguard.core.codes import CODES
from liveguard.core.stop_text import CLEAR_HOW, stop_text
from liveguard.integrations.langchain import LivenessMiddleware
from liveguard.integrations.langgraph import default_policy, guard

ROOT = Path(__file__).resolve().parent.parent
SAVERS = ["memory", "sqlite"]


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "shapes.sqlite"


@pytest.fixture
def savers(sqlite_path: Path) -> Iterator[dict[str, Any]]:
    conn = sqlite3.connect(sqlite_path, check_same_thread=False)
    try:
        yield {"memory": InMemorySaver(), "sqlite": SqliteSaver(conn)}
    finally:
        conn.close()


def thread(name: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}, **extra}


def outcome(app: Any, inputs: Any, config: dict[str, Any]) -> tuple[str, int] | str:
    """``"done"``, or the stop's (code, step)."""
    try:
        app.invoke(inputs, config)
    except NoProgressError as exc:
        return exc.violation.code, exc.violation.step
    return "done"


def call(n: int, name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}",
                                              "type": "tool_call"}])


# ------------------------------------------------- 1. a Send's input reaches its subgraph's steps


class File(TypedDict, total=False):
    file: str
    summary: str
    verdict: str
    notes: Annotated[list[str], operator.add]


class Batch(TypedDict, total=False):
    files: list[str]
    reviews: Annotated[list[str], operator.add]


def lint_graph() -> Any:
    """``lint``: every file is fine."""
    inner = StateGraph(File)
    inner.add_node("lint", lambda state: {"summary": "no issues"})
    inner.add_edge(START, "lint")
    inner.add_edge("lint", END)
    return inner.compile()


def deep_lint_graph() -> Any:
    """A subgraph that sends each file on to the lint subgraph again (depth 2)."""
    lint = lint_graph()

    def route(state: File) -> list[Send]:
        return [Send("deep", {"file": state["file"]})]

    mid = StateGraph(File)
    mid.add_node("triage", lambda state: {"verdict": "triaged"})
    mid.add_node("deep", lint)
    mid.add_edge(START, "triage")
    mid.add_conditional_edges("triage", route, ["deep"])
    mid.add_edge("deep", END)
    return mid.compile()


def map_reduce(files: list[str], shape: str, saver: Any) -> Any:
    """``plan`` sends every file to ``review``: the review subgraph as the node itself, invoked
    inside the node, or two subgraphs deep; ``reduce`` gathers the reviews."""
    inner = deep_lint_graph() if shape == "deep" else lint_graph()

    def review_inside(state: File) -> dict[str, Any]:
        return {"reviews": [inner.invoke(state)["summary"]]}

    def fan_out(state: Batch) -> list[Send]:
        return [Send("review", {"file": f}) for f in state["files"]]

    outer = StateGraph(Batch)
    outer.add_node("plan", lambda state: {"reviews": []})
    outer.add_node("review", review_inside if shape == "inside" else inner)
    outer.add_node("reduce", lambda state: {"reviews": []})
    outer.add_edge(START, "plan")
    outer.add_conditional_edges("plan", fan_out, ["review"])
    outer.add_edge("review", "reduce")
    outer.add_edge("reduce", END)
    return outer.compile(checkpointer=saver, name="map_reduce")




@pytest.mark.parametrize("saver_kind", SAVERS)
@pytest.mark.parametrize("shape", ["node", "inside", "deep"])
def test_twenty_files_sent_to_a_review_subgraph_each_no_issues_pass(
        shape: str, saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: no_progress_stall at step 2 (node review:lint), the Send's input lost."""
    files = [f"src/module_{i}.py" for i in range(20)]
    app = guard(map_reduce(files, shape, savers[saver_kind]))
    assert outcome(app, {"files": files}, thread(f"ok-{shape}")) == "done"
    assert len(app.get_state(thread(f"ok-{shape}")).values["reviews"]) == (20 if shape == "inside" else 0)
    same = ["src/module_0.py"] * 20  # the same file again with the same result: a loop
    twin = guard(map_reduce(same, shape, savers[saver_kind]))
    code, step = outcome(twin, {"files": same}, thread(f"twin-{shape}"))  # type: ignore[misc]
    # by the 3rd identical review (main stopped the healthy batch at step 2): the parallel
    # reviews' steps interleave in any order (depth 2: triage and lint steps of different
    # branches), so the stall or the repeat fires within the first six steps
    assert code in {"no_progress_stall", "repeated_content"}
    assert step <= (5 if shape == "deep" else 3)


# ----------------------------------- 2. an agent inside a node: its Command list is read whole


@tool
def send_email(to: str) -> str:
    """Queue an email to one person."""
    return "queued"


def executor_graph(recipients: list[str], saver: Any) -> Any:
    """A plan-and-execute executor: a ``create_agent`` runs inside the ``execute`` node."""
    script = tuple(call(i, "send_email", to=to) for i, to in enumerate(recipients))
    agent = create_agent(ScriptedChatModel(script=(*script, AIMessage(content="all queued"))),
                         [send_email])

    class Plan(TypedDict, total=False):
        task: str
        result: str

    def execute(state: Plan) -> dict[str, Any]:
        out = agent.invoke({"messages": [{"role": "user", "content": state["task"]}]})
        return {"result": out["messages"][-1].content}

    builder = StateGraph(Plan)
    builder.add_node("plan", lambda state: {"task": "email the ten attendees"})
    builder.add_node("execute", execute)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "execute")
    builder.add_edge("execute", END)
    return builder.compile(checkpointer=saver, name="executor")


@pytest.mark.parametrize("saver_kind", SAVERS)
def test_ten_emails_to_ten_people_by_an_agent_inside_a_node_pass(
        saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: the model node's list of Commands read as empty, so three calls with different
    arguments and the same result ("queued") fired tool_no_progress."""
    people = [f"person{i}@example.com" for i in range(10)]
    app = guard(executor_graph(people, savers[saver_kind]))
    assert outcome(app, {}, thread("ten")) == "done"
    assert app.get_state(thread("ten")).values["result"] == "all queued"
    twin = guard(executor_graph(["same@example.com"] * 10, savers[saver_kind]))
    assert outcome(twin, {}, thread("same")) == ("tool_no_progress", 6)  # as main


# ------------------------------------- 3. an update is judged with all its keys, messages too


class Queue(TypedDict, total=False):
    messages: Annotated[list[Any], operator.add]
    queue: list[str]
    results: Annotated[list[str], operator.add]


def queue_graph(items: int, saver: Any, *, stuck: bool = False) -> Any:
    """A worker posting the same status message per item while its queue shrinks and its
    results grow (``stuck``: the queue never shrinks, nothing new comes out)."""

    def work(state: Queue) -> dict[str, Any]:
        queue = state["queue"]
        if stuck:
            return {"messages": [AIMessage(content="working through the queue")], "queue": queue}
        return {"messages": [AIMessage(content="working through the queue")], "queue": queue[1:],
                "results": [f"done {queue[0]}"]}

    def route(state: Queue) -> str:
        left = state["queue"]
        return "work" if left and len(state.get("results", [])) < items else END

    builder = StateGraph(Queue)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_conditional_edges("work", route, ["work", END])
    return builder.compile(checkpointer=saver, name="queue")


@pytest.mark.parametrize("saver_kind", SAVERS)
def test_a_queue_worker_posting_the_same_status_while_its_queue_shrinks_passes(
        saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: the ``messages`` key hid the rest of the update: a stall at the second item."""
    items = [f"job{i}" for i in range(12)]
    app = guard(queue_graph(12, savers[saver_kind]))
    assert outcome(app, {"queue": items}, thread("q")) == "done"
    assert len(app.get_state(thread("q")).values["results"]) == 12
    twin = guard(queue_graph(12, savers[saver_kind], stuck=True))
    assert outcome(twin, {"queue": items}, thread("stuck"), ) == ("no_progress_stall", 1)  # as main


# ------------------------------------- 4. the same test failure after different edits


TEST_FAILS = "1 failed: test_slugify (AssertionError: 'a--b' != 'a-b')"


@tool
def run_tests() -> str:
    """Run the test suite."""
    return TEST_FAILS


@tool
def edit_file(path: str, content: str) -> str:
    """Write a file."""
    return f"wrote {path}"


def fixing_script(edits: int, *, edit_between: bool = True) -> tuple[AIMessage, ...]:
    """run_tests, then (edit, run_tests) ``edits`` times, then give up with an answer."""
    turns: list[AIMessage] = [call(0, "run_tests")]
    for i in range(edits):
        if edit_between:
            turns.append(call(len(turns), "edit_file", path="slug.py", content=f"version {i + 1}"))
        turns.append(call(len(turns), "run_tests"))
    return (*turns, AIMessage(content="still failing; handing over"))


@pytest.mark.parametrize("saver_kind", SAVERS)
@pytest.mark.parametrize("integration", ["guard", "middleware"])
def test_the_same_test_failure_after_different_edits_is_progress(
        integration: str, saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: tool_no_progress at step 9 in both integrations; each edit came back before the
    test ran. The same failing test with no edit between is still a loop (step 5)."""

    def agent(script: tuple[AIMessage, ...]) -> Any:
        middleware = [LivenessMiddleware()] if integration == "middleware" else []
        built = create_agent(ScriptedChatModel(script=script), [run_tests, edit_file],
                             middleware=middleware, checkpointer=savers[saver_kind])
        return guard(built) if integration == "guard" else built

    ask = {"messages": [{"role": "user", "content": "make the slug tests pass"}]}
    assert outcome(agent(fixing_script(3)), ask, thread("edits")) == "done"
    assert outcome(agent(fixing_script(3, edit_between=False)), ask, thread("no-edits")) == (
        "tool_no_progress", 5)


# ----------------------------------------------------- 5. a polling node can be given room


class Poll(TypedDict, total=False):
    summary: str
    polls: Annotated[list[str], operator.add]


def poller(polls: int | None, saver: Any) -> Any:
    """``poll`` says "pending" until its ``polls``-th visit (None: forever), then "done"."""

    def poll(state: Poll) -> dict[str, Any]:
        seen = len(state.get("polls", [])) + 1
        return {"summary": "done" if polls is not None and seen >= polls else "pending", "polls": ["p"]}

    def route(state: Poll) -> str:
        return END if state.get("summary") == "done" else "poll"

    builder = StateGraph(Poll)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_conditional_edges("poll", route, ["poll", END])
    return builder.compile(checkpointer=saver, name="poller")


POLLER_SET = {"graph": "poller", "transitions": {"__start__": ["poll"], "poll": ["poll", "__end__"]},
              "limits": {"poll": 100}, "stall": {"poll": 25}}


@pytest.mark.parametrize("saver_kind", SAVERS)
def test_a_polling_node_is_given_room_by_its_own_stall_ceiling(
        saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: stopped at its 3rd "pending" (repeated_content) whatever NodePolicy(stall=...) or
    the allow-set said. Now the node's ceiling holds for every repeat rule, and only for it."""
    saver = savers[saver_kind]
    roomy = default_policy(poller(20, None)) | {"nodes": {"poll": NodePolicy(stall=25)}}
    allow = AllowSet.parse(POLLER_SET)
    settings: list[dict[str, Any]] = [{"policy": roomy}, {"allow_set": allow}]
    for i, kwargs in enumerate(settings):
        app = guard(poller(20, saver), **kwargs)
        assert outcome(app, {}, thread(f"twenty-{i}", recursion_limit=200)) == "done"
        forever = guard(poller(None, saver), **kwargs)  # the twin: caught at its 25th "pending"
        assert outcome(forever, {}, thread(f"forever-{i}", recursion_limit=200)) == ("no_progress_stall", 24)
    # no ceiling: the poller is stopped at its 2nd "pending", as before
    assert outcome(guard(poller(20, saver)), {}, thread("plain")) == ("no_progress_stall", 1)
    # another node keeps the policy's own thresholds
    assert roomy.repeat_ceilings() == {"poll": 25}
    assert Policy.workflow(nodes={"env": NodePolicy(stall=3)}).repeat_ceilings() == {}


def test_the_allow_set_stall_ceiling_is_validated() -> None:
    with pytest.raises(liveguard.AllowSetError, match=r"stall\.poll"):
        AllowSet.parse({**POLLER_SET, "stall": {"poll": 1}})
    with pytest.raises(liveguard.AllowSetError, match="undeclared"):
        AllowSet.parse({**POLLER_SET, "stall": {"nope": 5}})
    applied = AllowSet.parse(POLLER_SET).apply(Policy.workflow())
    assert applied.nodes["poll"].stall == 25


# ------------------------------------- 6. a chat thread retrying one failing call


FETCHES: list[str] = []


@tool
def fetch(url: str) -> str:
    """Fetch a page."""
    FETCHES.append(url)
    return "Error: connection refused"


def retry_script(turns: int) -> tuple[AIMessage, ...]:
    out: list[AIMessage] = []
    for i in range(turns):
        out += [call(i, "fetch", url="https://status.example.com"), AIMessage(content="The fetch failed.")]
    return tuple(out)


@pytest.mark.parametrize("saver_kind", SAVERS)
@pytest.mark.parametrize("integration", ["guard", "middleware", "ToolCallLimitMiddleware"])
def test_a_chat_thread_retrying_one_failing_call_stops_at_the_third_execution(
        integration: str, saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: the 4th identical failing execution (the first turn's request differed from the
    "try again" turns). ToolCallLimitMiddleware(thread_limit=3) runs it 3 times too."""
    FETCHES.clear()
    middleware: list[Any] = {
        "middleware": [LivenessMiddleware()], "guard": [],
        "ToolCallLimitMiddleware": [ToolCallLimitMiddleware(thread_limit=3)]}[integration]
    agent = create_agent(ScriptedChatModel(script=retry_script(6)), [fetch], middleware=middleware,
                         checkpointer=savers[saver_kind])
    app = guard(agent) if integration == "guard" else agent
    for text in ["fetch the status page", *["try again"] * 5]:
        outcome(app, {"messages": [{"role": "user", "content": text}]}, thread("chat"))
    assert len(FETCHES) == 3


def test_a_failing_call_that_then_succeeds_is_not_stopped() -> None:
    """The healthy look-alike: the second retry gets through."""
    answers = iter(["Error: connection refused", "Error: connection refused", "status: all green"])

    @tool("fetch")
    def flaky(url: str) -> str:
        """Fetch a page."""
        return next(answers)

    agent = guard(create_agent(ScriptedChatModel(script=retry_script(3)), [flaky],
                               checkpointer=InMemorySaver()))
    for text in ["fetch the status page", "try again", "try again"]:
        assert outcome(agent, {"messages": [{"role": "user", "content": text}]}, thread("flaky")) == "done"


# ---------------------------------- 7. a constant acknowledgement between new results


def counter_tools(step: int) -> list[Any]:
    value = {"n": 0}

    @tool
    def read_counter() -> str:
        """Read the counter."""
        return str(value["n"])

    @tool
    def bump() -> str:
        """Bump the counter."""
        value["n"] += step
        return "bumped"

    return [read_counter, bump]


def counting_script(rounds: int) -> tuple[AIMessage, ...]:
    turns: list[AIMessage] = []
    for _ in range(rounds):
        turns += [call(len(turns), "read_counter"), call(len(turns) + 1, "bump")]
    return (*turns, AIMessage(content="counted"))


@pytest.mark.parametrize("saver_kind", SAVERS)
def test_a_constant_acknowledgement_between_new_results_is_progress(
        saver_kind: str, savers: dict[str, Any]) -> None:
    """Main: tool_no_progress at the third "bumped", with no other middleware in the stack."""
    ask = {"messages": [{"role": "user", "content": "count to eight"}]}
    saver = savers[saver_kind]
    app = guard(create_agent(ScriptedChatModel(script=counting_script(8)), counter_tools(1),
                             checkpointer=saver))
    assert outcome(app, ask, thread("count")) == "done"
    stuck = guard(create_agent(ScriptedChatModel(script=counting_script(8)), counter_tools(0),
                               checkpointer=saver))  # the twin: the counter never moves
    assert outcome(stuck, ask, thread("stuck")) == ("tool_no_progress", 9)  # as main


# ----------------------------------------- 8. what a stopped user reads (the stop message)


def test_the_stop_message_names_the_rule_the_repeating_steps_and_the_way_out(sqlite_path: Path) -> None:
    """Main said "no_progress_stall at step 2 (node 'review:lint', count 2)": neither what
    repeated nor how to clear the thread. Codes, indices and digests only, never step text."""
    conn = sqlite3.connect(sqlite_path, check_same_thread=False)
    try:
        app = guard(poller(None, SqliteSaver(conn)))
        with pytest.raises(NoProgressError) as stopped:
            app.invoke({}, thread("stopped"))
    finally:
        conn.close()
    text = str(stopped.value)
    violation = stopped.value.violation
    assert text.startswith("no_progress_stall at step 1 (node 'poll', count 2): ")  # what clients parse
    assert "gave the same output 2 times in a row" in text  # the rule in words
    assert f"Repeating: steps 0 and 1 (digest {violation.detail['digest']})" in text
    assert "liveguard.clear(graph, config)" in text
    assert "`liveguard threads clear MODULE:ATTR --thread THREAD_ID`" in text
    assert "POST /liveguard/threads/THREAD_ID/clear" in text
    assert "pending" not in text  # never the step's text
    # the ways named are the real ones
    assert callable(liveguard.clear)
    from liveguard.cli import build_parser

    args = build_parser().parse_args(["threads", "clear", "m:a", "--thread", "t1"])
    assert args.thread == "t1"
    assert "/liveguard/threads/$THREAD_ID/clear" in (ROOT / "docs" / "server.md").read_text()


_DETAIL = st.dictionaries(
    st.sampled_from(["steps", "digest", "digests", "period", "nodes", "tool", "window", "limit",
                     "scope", "matched_step", "nonretryable", "from", "to", "ceiling", "other"]),
    st.one_of(st.integers(-3, 50), st.text(max_size=20), st.lists(st.integers(-3, 50), max_size=4),
              st.lists(st.text(max_size=14), max_size=4), st.none(), st.booleans()),
    max_size=6)


@settings(max_examples=300, deadline=None)
@given(code=st.sampled_from([*CODES, "made_up"]), step=st.integers(0, 10_000), detail=_DETAIL)
def test_the_stop_text_reads_any_violation(code: str, step: int, detail: dict[str, Any]) -> None:
    """Any detail, well formed or not: the same head, the rule in some words, the way out."""
    violation = Violation(code=code, severity="hard", step=step, node="n", count=2, detail=detail)
    text = stop_text(violation)
    assert text.startswith(f"{code} at step {step} (node 'n', count 2): ")
    assert text.endswith(CLEAR_HOW)
    assert str(NoProgressError(violation)) == text
