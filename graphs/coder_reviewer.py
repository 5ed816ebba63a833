"""Target graph ``coder_reviewer``: a coder and a reviewer iterate on one function.

Topology (what ``graph.get_graph()`` shows, see ``expected_paths/coder_reviewer.yaml``)::

    __start__ -> coder
    coder     -> reviewer | coder      (coder -> coder: self-retry after a failed build)
    reviewer  -> coder | __end__

Both nodes route with ``Command(goto=...)`` and declare their legal targets with
``add_node(..., destinations=...)``, so every legal edge is drawn and any other
``goto`` is an undeclared (illegal) hop. The task is always "implement slugify()".

Every node writes ``summary`` and ``steps`` (``[<node name>]``, appended by an
``operator.add`` reducer so nodes can count earlier visits while a repeated update stays
byte-identical). Other keys: ``code``, ``build`` and ``review``.

Scenarios (the scripted behaviour; ``__start__``/``__end__`` omitted):

``healthy``
    v1 fails its build and the coder retries (a legal self-retry with new content),
    v2 builds and the reviewer asks for tests, v3 adds tests and is approved.
    ``coder, coder, reviewer, coder, reviewer`` (5 steps, every revisit is new content).
``ping_pong``
    The coder submits the identical v1 and the reviewer writes the identical rejection
    (empty input not handled) for N=6 rounds; after the 6th rejection the reviewer's
    round budget is exhausted and it closes the task (legal ``reviewer -> __end__``;
    the 6th update is still identical, only the routing changes).
    ``(coder, reviewer) x 6`` (12 steps).
``looping``
    No identical repeats: the coder writes a *new* version every round (v1 ... v8) and
    the reviewer asks for a *new* nit every round, for N=8 rounds, then closes the task.
    Every transition is legal; the run only breaks the visit ceilings of the allow-set
    (``limits``: coder 5, reviewer 4). This is the "revisits with new content beyond
    limits" loop, as opposed to ``ping_pong``'s identical alternation.
    ``(coder, reviewer) x 8`` (16 steps).
``stalled``
    v1 fails its build and the coder retries with the identical code and identical
    build error twice in a row (N=2 identical consecutive ``coder`` steps); its retry
    budget is exhausted and the reviewer closes the task as failed.
    ``coder, coder, reviewer`` (3 steps).
``illegal_hop``
    After requesting changes on v1 the reviewer returns ``Command(goto="reviewer")``
    (a second review pass of its own) instead of going back to the coder; ``reviewer``
    is not among its declared destinations, so ``reviewer -> reviewer`` is absent from
    ``get_graph()`` and the allow-set. The second pass approves and ends.
    ``coder, reviewer, reviewer`` (3 steps).
``dead_end``
    After the reviewer requests changes, the coder abandons the task and returns
    ``Command(goto=END)`` (undeclared): the run finishes on ``coder``, a node with no
    edge to ``__end__``.
    ``coder, reviewer, coder`` (3 steps).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command

from graphs._scripted import Steps, check_scenario, visits

__all__ = [
    "GRAPH_NAME",
    "NODES",
    "SCENARIOS",
    "CoderReviewerState",
    "build_graph",
    "graph",
    "initial_input",
]

GRAPH_NAME = "coder_reviewer"
SCENARIOS: tuple[str, ...] = (
    "healthy",
    "looping",
    "ping_pong",
    "stalled",
    "illegal_hop",
    "dead_end",
)
NODES: tuple[str, ...] = ("coder", "reviewer")

TASK = "implement slugify(title: str) -> str"
PING_PONG_ROUNDS = 6
"""``ping_pong``: identical coder/reviewer rounds before the reviewer closes the task."""
LOOPING_ROUNDS = 8
"""``looping``: rounds with new content each time before the reviewer closes the task."""
STALLED_RETRIES = 2
"""``stalled``: identical consecutive coder attempts before the retry budget runs out."""

_NITS = (
    "rename s to title",
    "use a compiled regex",
    "add a docstring",
    "strip trailing dashes",
    "collapse repeated dashes",
    "lower-case before replacing",
    "add type hints",
    "handle unicode accents",
)


class CoderReviewerState(TypedDict, total=False):
    """State of one coder/reviewer run."""

    task: str
    summary: str
    steps: Steps
    code: str
    build: str
    review: str


def initial_input(scenario: str) -> dict[str, Any]:
    """Input for ``graph.invoke``/``graph.stream``; the same task for every scenario."""
    check_scenario(GRAPH_NAME, scenario, SCENARIOS)
    return {"task": TASK, "steps": []}


def _code(version: int) -> str:
    body = {
        1: "return s.replace(' ', '-')",
        2: "return re.sub(r'[^a-z0-9]+', '-', s.lower())",
        3: "return re.sub(r'[^a-z0-9]+', '-', s.lower()).strip('-')  # + tests",
    }.get(version, f"return _slug(s, rev={version})")
    return f"v{version}: def slugify(s): {body}"


def build_graph(
    scenario: str = "healthy", *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[CoderReviewerState, None, CoderReviewerState, CoderReviewerState]:
    """Compile the coder/reviewer graph with the scripted behaviour of ``scenario``."""
    check_scenario(GRAPH_NAME, scenario, SCENARIOS)

    def coder(state: CoderReviewerState) -> Command[str]:
        attempt = visits(state, "coder") + 1
        if scenario == "stalled":
            update = {
                "summary": "v1 build failed: ImportError: No module named 're2'",
                "code": _code(1),
                "build": "failed: ImportError: No module named 're2'",
                "steps": ["coder"],
            }
            return Command(update=update, goto="coder" if attempt < STALLED_RETRIES else "reviewer")
        if scenario == "dead_end" and attempt > 1:
            # Undeclared END: coder has no edge to __end__ in the graph.
            return Command(
                update={
                    "summary": "abandoned slugify after review, no new version",
                    "build": "not run",
                    "steps": ["coder"],
                },
                goto=END,
            )
        if scenario == "healthy" and attempt == 1:
            return Command(
                update={
                    "summary": "v1 build failed: NameError: name 're' is not defined",
                    "code": _code(1),
                    "build": "failed: NameError: name 're' is not defined",
                    "steps": ["coder"],
                },
                goto="coder",
            )
        version = 1 if scenario in ("ping_pong", "illegal_hop", "dead_end") else attempt
        return Command(
            update={
                "summary": f"wrote slugify v{version}, build ok",
                "code": _code(version),
                "build": "ok",
                "steps": ["coder"],
            },
            goto="reviewer",
        )

    def reviewer(state: CoderReviewerState) -> Command[str]:
        review_round = visits(state, "reviewer") + 1
        version = state["code"].split(":", 1)[0]
        if scenario == "stalled":
            return Command(
                update={
                    "summary": f"closed task: {version} still fails to build",
                    "review": "closed: build failing",
                    "steps": ["reviewer"],
                },
                goto=END,
            )
        if scenario == "ping_pong":
            update = {
                "summary": f"changes requested on {version}: empty input not handled",
                "review": "changes requested: empty input not handled",
                "steps": ["reviewer"],
            }
            done = review_round >= PING_PONG_ROUNDS
            return Command(update=update, goto=END if done else "coder")
        if scenario == "looping":
            nit = _NITS[(review_round - 1) % len(_NITS)]
            done = review_round >= LOOPING_ROUNDS
            return Command(
                update={
                    "summary": f"changes requested on {version} (round {review_round}): {nit}",
                    "review": f"changes requested: {nit}",
                    "steps": ["reviewer"],
                },
                goto=END if done else "coder",
            )
        if scenario == "illegal_hop" and review_round == 1:
            # Undeclared self-hop: "reviewer" is not in this node's destinations.
            return Command(
                update={
                    "summary": f"changes requested on {version}: second review pass needed",
                    "review": "changes requested: second pass",
                    "steps": ["reviewer"],
                },
                goto="reviewer",
            )
        if scenario in ("healthy", "dead_end") and review_round == 1:
            return Command(
                update={
                    "summary": f"changes requested on {version}: add tests",
                    "review": "changes requested: add tests",
                    "steps": ["reviewer"],
                },
                goto="coder",
            )
        return Command(
            update={
                "summary": f"approved {version}",
                "review": "approved",
                "steps": ["reviewer"],
            },
            goto=END,
        )

    builder = StateGraph(CoderReviewerState)
    builder.add_node("coder", coder, destinations=("coder", "reviewer"))
    builder.add_node("reviewer", reviewer, destinations=("coder", END))
    builder.add_edge(START, "coder")
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)


graph = build_graph()
