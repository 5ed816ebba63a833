"""A ``create_agent`` agent that loops on a failing tool, stopped by ``LivenessMiddleware``.

The model is scripted (no key, no network): it asks for ``fetch_report(7)`` on every turn,
and the tool fails the same way every time. The middleware sees the same (tool, args,
result) three times and stops the run with ``NoProgressError``; the stop is saved with the
thread, so the next invoke on it stops at once.

    python examples/agent_middleware.py
"""

from __future__ import annotations

import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from liveguard import NoProgressError
from liveguard.integrations.langchain import LivenessMiddleware


class LoopingModel(BaseChatModel):
    """A scripted chat model: every turn, the same tool call (with a fresh call id)."""

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


def build_agent(checkpointer: Any = None) -> Any:
    return create_agent(LoopingModel(), [fetch_report], middleware=[LivenessMiddleware()],
                        checkpointer=checkpointer, name="agent")


def main() -> int:
    agent = build_agent(InMemorySaver())
    config = {"configurable": {"thread_id": "report-7"}}
    ask = {"messages": [{"role": "user", "content": "Get me report 7."}]}
    try:
        agent.invoke(ask, config)
    except NoProgressError as exc:
        stop = exc.violation
        calls = sum(1 for m in agent.get_state(config).values["messages"] if m.type == "tool")
        print(f"stopped: {stop.code} at step {stop.step} (node {stop.node!r}, seen {stop.count} times); "
              f"the tool ran {calls} times")
    else:
        print("not stopped: the agent was expected to loop")
        return 1
    try:
        agent.invoke(ask, config)
    except NoProgressError as again:
        print(f"the thread stays stopped: {again.violation.code} at step {again.violation.step}")
        return 0 if (stop.code, again.violation.step) == ("tool_no_progress", stop.step) else 1
    print("the stopped thread ran again")
    return 1


if __name__ == "__main__":
    sys.exit(main())
