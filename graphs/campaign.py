"""Target graph ``campaign``: an outreach campaign for one sales lead.

Input: the lead to write to, ``{"lead_id": 17, "lead_name": "Ada Park", "steps": []}``
(:func:`initial_input`); ``lead_id`` and ``lead_name`` are required (``{}`` fails in the
first node with ``KeyError: 'lead_id'``), ``steps`` starts the node log.

Topology (what ``graph.get_graph()`` shows, see ``expected_paths/campaign.yaml``)::

    __start__ -> load_lead -> compose_touch -> gate_draft -> compose_touch | approve_send
    approve_send -> send_touch | compose_touch | __end__
    send_touch -> check_reply -> check_reply | compose_touch | __end__

* ``load_lead`` -> ``compose_touch`` and ``send_touch`` -> ``check_reply`` are static edges.
* ``compose_touch`` and ``gate_draft`` route with ``Command(goto=...)`` and declare their
  legal targets with ``add_node(..., destinations=...)``, so the edges are drawn.
* ``approve_send`` is liveguard's draft-first approval step
  (:func:`liveguard.live.approval.approval_gate`): it evaluates the thread so far and sends
  only when ``verdict_clears_autoapprove`` holds (``AGENT_EVAL_AUTOAPPROVE=1``, judged,
  passed); otherwise it calls ``interrupt()`` and a person approves (-> ``send_touch``),
  edits (-> ``send_touch`` with the new draft) or rejects (-> ``compose_touch``). It needs
  a checkpointer, unless ``build_graph(..., approver=...)`` scripts the person's answer.
* ``check_reply`` uses a conditional edge with a ``path_map``. Its self-edge is legal:
  it keeps polling the inbox. The ``check_reply -> compose_touch`` edge (follow-up touch
  when the lead asks for something else) is legal, but no scenario uses it.

Every node but ``approve_send`` writes ``summary`` (short readable text) and ``steps``
(``[<node name>]``, appended by an ``operator.add`` reducer so nodes can count earlier
visits while a repeated update stays byte-identical). Other keys: ``lead_profile``,
``draft``, ``verdict``, ``sent``, ``reply_status``, and the approval step's ``approval``
(the verdict row) and ``approvals`` (its audit records). The lead is always lead 17
(Ada Park). The sequences below omit ``approve_send``, which runs right before every
``send_touch`` reached through ``gate_draft``.

Scenarios (the scripted behaviour; ``__start__``/``__end__`` omitted):

``healthy``
    Draft v1 is rejected as too long, draft v2 is approved and sent; the inbox is
    polled three times with changing results (``waiting 1``, ``waiting 2``, then a
    reply), after which the run ends. Every revisit writes new content.
    ``load_lead, compose_touch, gate_draft, compose_touch, gate_draft, send_touch,
    check_reply, check_reply, check_reply`` (9 steps).
``looping``
    Draft v1 is approved and sent, then ``check_reply`` polls N=12 times and writes the
    identical update ``no reply from lead 17`` each time; after the 12th poll the poll
    budget is exhausted and the run ends.
    ``load_lead, compose_touch, gate_draft, send_touch, check_reply x 12`` (16 steps).
``ping_pong``
    ``compose_touch`` writes the same draft v1 and ``gate_draft`` the same rejection
    (missing unsubscribe link) for N=6 rounds; after the 6th identical rejection the
    gate's retry budget is exhausted and it escalates to ``approve_send`` (the update of
    that 6th visit is still identical, only the routing changes). One poll finds a
    reply.
    ``load_lead, (compose_touch, gate_draft) x 6, send_touch, check_reply`` (15 steps).
``stalled``
    Draft v1 is approved and sent, then ``check_reply`` writes the identical
    ``no reply from lead 17`` twice in a row (N=2), exhausting its poll budget, and the
    run ends.
    ``load_lead, compose_touch, gate_draft, send_touch, check_reply, check_reply``
    (6 steps).
``illegal_hop``
    ``compose_touch`` returns ``Command(goto="send_touch")``, skipping ``gate_draft``.
    ``send_touch`` is *not* among ``compose_touch``'s declared destinations, so the
    hop is invisible in ``get_graph()`` and absent from the allow-set. One poll finds
    a reply.
    ``load_lead, compose_touch, send_touch, check_reply`` (4 steps).
``dead_end``
    ``gate_draft`` rejects draft v1 because the lead opted out and returns
    ``Command(goto=END)`` (undeclared): the run finishes on ``gate_draft``, a node with
    no edge to ``__end__``.
    ``load_lead, compose_touch, gate_draft`` (3 steps).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, Command

from graphs._scripted import Steps, check_scenario, visits
from liveguard.core.allowset import AllowSet, load_allowset
from liveguard.live.approval import ApprovalState, approval_gate, approval_send

__all__ = [
    "GRAPH_NAME",
    "NODES",
    "SCENARIOS",
    "CampaignState",
    "build_graph",
    "graph",
    "initial_input",
    "scripted_graph",
]

GRAPH_NAME = "campaign"
SCENARIOS: tuple[str, ...] = (
    "healthy",
    "looping",
    "ping_pong",
    "stalled",
    "illegal_hop",
    "dead_end",
)
NODES: tuple[str, ...] = (
    "load_lead", "compose_touch", "gate_draft", "approve_send", "send_touch", "check_reply",
)
ALLOW_SET_PATH = Path(__file__).resolve().parent.parent / "expected_paths" / "campaign.yaml"

LEAD_ID = 17
LEAD_NAME = "Ada Park"
LOOPING_POLLS = 12
"""``looping``: identical ``check_reply`` visits before the poll budget runs out."""
PING_PONG_ROUNDS = 6
"""``ping_pong``: identical compose/gate rounds before the gate escalates."""
STALLED_POLLS = 2
"""``stalled``: identical consecutive ``check_reply`` visits before the run gives up."""
HEALTHY_REPLY_POLL = 3
"""``healthy``: the poll on which the lead's reply arrives."""
DEFAULT_POLL_BUDGET = 10


class CampaignState(ApprovalState, total=False):
    """State of one campaign run (plus the approval step's ``approval`` / ``approvals``)."""

    lead_id: int
    lead_name: str
    summary: str
    steps: Steps
    lead_profile: str
    draft: str
    verdict: str
    sent: str
    reply_status: str


def initial_input(scenario: str) -> dict[str, Any]:
    """Input for ``graph.invoke``/``graph.stream``; the same lead for every scenario."""
    check_scenario(GRAPH_NAME, scenario, SCENARIOS)
    return {"lead_id": LEAD_ID, "lead_name": LEAD_NAME, "steps": []}


def _allow_set() -> AllowSet | None:
    return load_allowset(ALLOW_SET_PATH) if ALLOW_SET_PATH.is_file() else None


def build_graph(
    scenario: str = "healthy",
    *,
    checkpointer: Checkpointer = None,
    approver: Callable[[dict[str, Any]], Any] | None = None,
    clock: Callable[[], datetime] | None = None,
) -> CompiledStateGraph[CampaignState, None, CampaignState, CampaignState]:
    """Compile the campaign graph with the scripted behaviour of ``scenario``.

    ``approver`` (optional) answers the approval step instead of a person (see
    :func:`liveguard.live.approval.approval_gate`'s ``decide``); ``clock`` stamps its audit records.
    """
    check_scenario(GRAPH_NAME, scenario, SCENARIOS)
    poll_budget = {"looping": LOOPING_POLLS, "stalled": STALLED_POLLS}.get(
        scenario, DEFAULT_POLL_BUDGET
    )

    def load_lead(state: CampaignState) -> dict[str, Any]:
        lead = f"lead {state['lead_id']}"
        return {
            "summary": f"loaded {lead} ({state['lead_name']}, VP Engineering at Acme)",
            "lead_profile": f"{state['lead_name']}, VP Engineering at Acme, asked about pricing",
            "steps": ["load_lead"],
        }

    def compose_touch(state: CampaignState) -> Command[str]:
        lead = f"lead {state['lead_id']}"
        version = 1 if scenario == "ping_pong" else visits(state, "compose_touch") + 1
        body = f"Hi {state['lead_name']}, following up on your pricing question"
        if scenario == "healthy" and version == 1:
            body += " with the full feature matrix, three case studies and a webinar invite"
        update = {
            "summary": f"draft v{version} for {lead}",
            "draft": f"v{version}: {body}.",
            "steps": ["compose_touch"],
        }
        if scenario == "illegal_hop":
            # Undeclared hop: "send_touch" is not in this node's destinations.
            return Command(update=update, goto="send_touch")
        return Command(update=update, goto="gate_draft")

    def gate_draft(state: CampaignState) -> Command[str]:
        lead = f"lead {state['lead_id']}"
        version = state["draft"].split(":", 1)[0]
        if scenario == "dead_end":
            # Undeclared END: gate_draft has no edge to __end__ in the graph.
            return Command(
                update={
                    "summary": f"rejected draft {version} for {lead}: lead opted out, dropping",
                    "verdict": "dropped",
                    "steps": ["gate_draft"],
                },
                goto=END,
            )
        if scenario == "ping_pong":
            rejections = visits(state, "gate_draft") + 1
            update = {
                "summary": f"rejected draft {version} for {lead}: missing unsubscribe link",
                "verdict": "rejected",
                "steps": ["gate_draft"],
            }
            # Same update every round; after the retry budget the gate escalates to sending.
            goto = "approve_send" if rejections >= PING_PONG_ROUNDS else "compose_touch"
            return Command(update=update, goto=goto)
        if scenario == "healthy" and visits(state, "gate_draft") == 0:
            return Command(
                update={
                    "summary": f"rejected draft {version} for {lead}: too long",
                    "verdict": "rejected",
                    "steps": ["gate_draft"],
                },
                goto="compose_touch",
            )
        return Command(
            update={
                "summary": f"approved draft {version} for {lead}",
                "verdict": "approved",
                "steps": ["gate_draft"],
            },
            goto="approve_send",
        )

    def send_touch(state: CampaignState) -> dict[str, Any]:
        version = state["draft"].split(":", 1)[0]
        return {
            "summary": f"sent draft {version} to lead {state['lead_id']}",
            "sent": state["draft"],
            "steps": ["send_touch"],
        }

    def check_reply(state: CampaignState) -> dict[str, Any]:
        lead = f"lead {state['lead_id']}"
        poll = visits(state, "check_reply") + 1
        if scenario in ("looping", "stalled"):
            # Identical update on every poll: nothing changes in the inbox.
            return {
                "summary": f"no reply from {lead}",
                "reply_status": "no reply",
                "steps": ["check_reply"],
            }
        if scenario == "healthy" and poll < HEALTHY_REPLY_POLL:
            return {
                "summary": f"waiting {poll} for reply from {lead}",
                "reply_status": f"waiting {poll}",
                "steps": ["check_reply"],
            }
        return {
            "summary": f"reply from {lead}: interested, asks for a demo",
            "reply_status": "replied",
            "steps": ["check_reply"],
        }

    def route_after_reply(
        state: CampaignState,
    ) -> Literal["check_reply", "compose_touch", "__end__"]:
        status = state.get("reply_status", "")
        if status == "replied":
            return "__end__"
        if status == "needs follow-up":
            return "compose_touch"
        if visits(state, "check_reply") >= poll_budget:
            return "__end__"
        return "check_reply"

    builder = StateGraph(CampaignState)
    builder.add_node("load_lead", load_lead)
    builder.add_node("compose_touch", compose_touch, destinations=("gate_draft",))
    builder.add_node("gate_draft", gate_draft, destinations=("compose_touch", "approve_send"))
    builder.add_node(
        "approve_send",
        approval_gate(
            send="send_touch", revise="compose_touch", draft_key="draft", recipient_key="lead_id",
            graph_name=GRAPH_NAME,
            allow_set=_allow_set(), decide=approver, clock=clock, name="approve_send",
        ),
        destinations=("send_touch", "compose_touch", END),
    )
    # The send runs only on a decision of the approval step (approval_send). The illegal_hop
    # scenario models a graph whose hop skips that step: its send is the bare node, so the hop
    # is taken and recorded (wrapped, the send would refuse it and the run would fail).
    builder.add_node("send_touch", send_touch if scenario == "illegal_hop"
                     else approval_send(send_touch, name="send_touch"))
    builder.add_node("check_reply", check_reply)
    builder.add_edge(START, "load_lead")
    builder.add_edge("load_lead", "compose_touch")
    builder.add_edge("send_touch", "check_reply")
    builder.add_conditional_edges(
        "check_reply",
        route_after_reply,
        {"check_reply": "check_reply", "compose_touch": "compose_touch", END: END},
    )
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)


SCRIPTED_DECISION: dict[str, Any] = {
    "decisions": [{"type": "approve"}], "by": "script", "note": "scripted approval"}
"""The approval step's answer in :func:`scripted_graph`."""
SCRIPTED_CLOCK = datetime(2025, 1, 1, tzinfo=UTC)
"""The audit clock of :func:`scripted_graph`, so its runs replay byte for byte."""


def scripted_graph(
    scenario: str = "healthy", *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[CampaignState, None, CampaignState, CampaignState]:
    """:func:`build_graph` whose approval step is answered by a script (:data:`SCRIPTED_DECISION`).

    For runs with no person to ask: recording the golden datasets, and tests that use the
    campaign as a workload. It runs with or without a checkpointer and never pauses.
    """
    return build_graph(
        scenario, checkpointer=checkpointer,
        approver=lambda payload: dict(SCRIPTED_DECISION), clock=lambda: SCRIPTED_CLOCK,
    )


graph = build_graph()
