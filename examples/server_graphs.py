"""The graphs `langgraph dev` serves from ``examples/langgraph.json``.

* ``guarded``: a StateGraph whose ``poll`` node keeps writing the same status, wrapped in
  ``guard()``; the server gives it its own checkpointer, and the guard keeps the thread's
  liveness in it.
* ``agent``: a ``create_agent`` agent with ``LivenessMiddleware``, driven by a scripted model
  that asks for the same failing tool call again and again.
* ``campaign``: the outreach campaign of ``graphs/campaign.py`` with its draft-first approval
  step (``liveguard.approval.approval_gate``): with no judge configured, every draft is held
  for a person.

Run from this directory: ``langgraph dev --config langgraph.json`` (``".."`` in the config's
dependencies puts the repository root, and so ``graphs``, on the path).
"""

from __future__ import annotations

from typing import Any, TypedDict

from graphs.campaign import build_graph
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from liveguard.integrations.langchain import LivenessMiddleware
from liveguard.integrations.langgraph import guard


# -- guarded: a job poller that never sees the job change -----------------------------------
class PollState(TypedDict, total=False):
    job: str
    status: str


def poll(state: PollState) -> dict[str, Any]:
    return {"status": f"job {state['job']}: still queued"}  # the same update every time


def next_step(state: PollState) -> str:
    return END if "done" in state.get("status", "") else "poll"


def build_poller() -> Any:
    builder = StateGraph(PollState)
    builder.add_node("poll", poll)
    builder.add_edge(START, "poll")
    builder.add_conditional_edges("poll", next_step, ["poll", END])
    return builder.compile(name="guarded")


guarded = guard(build_poller())


# -- agent: a scripted model that repeats one failing tool call -----------------------------
class LoopingModel(BaseChatModel):
    """A scripted chat model (no key, no network): it always asks for ``fetch_report(7)``."""

    @property
    def _llm_type(self) -> str:
        return "scripted-looping"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        call = {"name": "fetch_report", "args": {"report_id": 7}, "id": f"call_{turn}"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])

    def bind_tools(self, tools: Any, **kwargs: Any) -> LoopingModel:
        return self


@tool
def fetch_report(report_id: int) -> str:
    """Fetch a report by id."""
    return f"error: report {report_id} is locked by another user"  # the same failure every time


agent = create_agent(LoopingModel(), [fetch_report], middleware=[LivenessMiddleware()], name="agent")

# -- campaign: draft-first approval ----------------------------------------------------------
campaign = build_graph("healthy")
