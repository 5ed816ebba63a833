"""Shared helpers for the scripted target graphs.

Nothing here is random or time-dependent: every target graph must replay byte
for byte (LangChain-generated message ids excepted).

* :data:`Steps` is the state channel each node appends its own name to. The
  channel uses an ``operator.add`` reducer, so a node's *update* is always the
  same one-element list (pathological repeats stay identical) while the
  accumulated state still lets nodes and routers count earlier visits.
* :func:`check_scenario` validates a scenario name against a graph's list.
* :class:`ScriptedChatModel` is a tool-calling fake chat model that answers
  from a fixed script, indexed by how many ``AIMessage`` turns the prompt
  already contains, so it is stateless: the same compiled agent can be invoked
  any number of times and always replays the same conversation.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool

__all__ = ["ScriptedChatModel", "Steps", "check_scenario", "visits"]

Steps = Annotated[list[str], operator.add]
"""State channel type: every node writes ``[<its own name>]``; the reducer appends."""


def check_scenario(graph_name: str, scenario: str, valid: Sequence[str]) -> str:
    """Return ``scenario`` unchanged, or raise ``ValueError`` naming the valid ones."""
    if scenario not in valid:
        msg = (
            f"unknown scenario {scenario!r} for graph {graph_name!r}; "
            f"valid scenarios: {', '.join(valid)}"
        )
        raise ValueError(msg)
    return scenario


def visits(state: Mapping[str, Any], node: str) -> int:
    """How many times ``node`` has already run in this thread (from the ``steps`` channel)."""
    steps: list[str] = state.get("steps") or []
    return steps.count(node)


class ScriptedChatModel(BaseChatModel):
    """Fake tool-calling chat model that replays a fixed script of ``AIMessage`` turns.

    Turn *n* of the conversation (``n`` = number of ``AIMessage`` objects already in
    the prompt) is answered with a deep copy of ``script[n]``. ``bind_tools``
    returns the model itself: the script already contains the tool calls.

    Unlike ``GenericFakeChatModel`` this class implements no ``_stream``, so
    LangChain always goes through ``_generate`` and tool calls survive even when
    the graph is streamed with ``stream_mode="messages"`` (the generic fake model's
    ``_stream`` only re-emits text content and ``additional_kwargs``, dropping
    ``tool_calls``).
    """

    script: tuple[AIMessage, ...]
    """One ``AIMessage`` per model turn, in order."""

    @property
    def _llm_type(self) -> str:
        return "liveguard-scripted-chat"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = sum(1 for message in messages if isinstance(message, AIMessage))
        if turn >= len(self.script):
            msg = (
                f"scripted model has {len(self.script)} turns but was called for turn "
                f"{turn + 1}; use a fresh thread_id for every run"
            )
            raise RuntimeError(msg)
        reply = self.script[turn].model_copy(deep=True)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return ``self``: the scripted turns already name the tools they call."""
        return self
