"""LangGraph ``stream_mode="updates"`` chunks → liveguard :class:`~liveguard.core.model.Step` objects.

Framework-free: nothing from LangChain or LangGraph is imported. Messages are
duck-typed: LangChain message objects (``.tool_calls``, ``.tool_call_id``, ``.name``,
``.content``, ``.status``, ``.type``) and OpenAI-style / LangChain-style dicts
(``role``/``type``, ``tool_calls``, ``tool_call_id``, ``name``, ``content``, ``status``).

One chunk is ``{node_name: update}``. For each node of a chunk:

* a key starting with ``__`` (``__interrupt__``, ``__metadata__``) is skipped;
* an update whose last new message is a tool message gives one **tool step** per
  tool message of the update, its ``args`` looked up by ``tool_call_id`` among the
  tool calls of earlier AI messages (a bounded memory of the last calls);
* an update whose last new message is an AI message requesting tool calls gives a
  step whose ``output`` is that message (the Monitor classifies it as a request);
* any other update gives a **message step**: ``summary`` from the update's
  ``summary`` key (when it is text), ``output`` the last message's content, or the
  update minus its bookkeeping keys (:data:`BOOKKEEPING_KEYS`). An update with a new
  message *and* other keys is judged with all of them: ``output`` is the update minus its
  bookkeeping keys, ``messages`` replaced by the last message's content (a worker posting
  the same status while its queue shrinks and its results grow makes progress);
* a tool message already seen (same message id and tool call id, as
  ``SummarizationMiddleware`` re-emits the messages it keeps) is not a new result; an
  update of nothing but such messages is a contentless visit;
* a list of updates (several tasks of one node in the same superstep, e.g. parallel
  tool calls) is read element by element;
* a ``Command`` (or a list holding ``Command`` objects, as the model node of an agent run
  inside a node returns) is read for its ``update``, as ``stream_mode="updates"`` shows
  it (:func:`liveguard.readers.updates.live_update`): its messages and tool calls count;
  a ``Command`` to the parent graph or without an update is a contentless visit;
* anything else (``None``, a non-mapping) gives a contentless ``Step(node=node)``: the
  visit is still counted, nothing is compared.

:class:`UpdateStepper` does this incrementally (one chunk at a time) so a live guard
can feed it as the graph streams; :func:`steps_from_updates` converts a whole run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from liveguard.core.messages import (
    content,
    field,
    is_tool_message,
    tool_call_args,
    tool_call_name,
    tool_calls,
    tool_message_step,
)
from liveguard.core.model import Step
from liveguard.readers.updates import live_update

__all__ = ["BOOKKEEPING_KEYS", "UpdateStepper", "steps_from_updates"]

BOOKKEEPING_KEYS: frozenset[str] = frozenset({
    "summary", "steps",
    "liveguard",  # LivenessMiddleware's own saved state
    "jump_to",  # create_agent's private jump channel
    # LangChain's call-limit middleware counters (they change on every pass of a loop)
    "thread_model_call_count", "run_model_call_count", "thread_tool_call_count", "run_tool_call_count",
})
"""Update keys that are not a node's output: dropped from message-step ``output``."""

DEFAULT_MAX_CALLS = 256
"""How many tool calls (by id) the stepper remembers to find a tool result's args."""

class UpdateStepper:
    """Turns ``stream_mode="updates"`` chunks into Steps, one chunk at a time.

    Remembers the tool calls of AI messages it has seen (the last ``max_calls`` of
    them, by call id) so a later tool message gets the arguments it was called with.
    Not thread-safe: one stepper per run.
    """

    def __init__(self, max_calls: int = DEFAULT_MAX_CALLS) -> None:
        if max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, got {max_calls}")
        self._max_calls = max_calls
        self._calls: OrderedDict[str, tuple[str | None, Any]] = OrderedDict()
        self._results: OrderedDict[tuple[str, str], None] = OrderedDict()  # tool messages seen

    def feed(self, chunk: Mapping[str, Any]) -> list[Step]:
        """The steps of one chunk (``{node: update}``), in the chunk's order."""
        steps: list[Step] = []
        if not isinstance(chunk, Mapping):
            return steps
        for node, value in chunk.items():
            if not isinstance(node, str) or not node or node.startswith("__"):
                continue
            update = live_update(value)
            if isinstance(update, list | tuple):
                for item in update:
                    steps += self._steps(node, item)
            else:
                steps += self._steps(node, update)
        return steps

    # -- one node update --------------------------------------------------------------------
    def _steps(self, node: str, update: Any) -> list[Step]:
        if not isinstance(update, Mapping):
            return [Step(node=node)]
        given = _messages_of(update.get("messages"))
        messages = [m for m in given if not self._repeat(m)]
        for message in messages:
            self._remember(message)
        if given and not messages:  # only messages already seen (a kept ToolMessage): a visit
            return [Step(node=node)]
        summary = update.get("summary")
        summary = summary if isinstance(summary, str) else None
        rest = {
            key: value
            for key, value in update.items()
            if key not in BOOKKEEPING_KEYS and key != "messages"
        }
        if messages:
            last = messages[-1]
            if is_tool_message(last):
                return [self._tool_step(node, m) for m in messages if is_tool_message(m)]
            if tool_calls(last):
                return [Step(node=node, output=last, summary=None)]
            said = content(last)
            # the message alone when it is the whole update; else every key, the message's with it
            return [Step(node=node, summary=summary, output={**rest, "messages": said} if rest else said)]
        return [Step(node=node, summary=summary, output=rest or None)]

    def _repeat(self, message: Any) -> bool:
        """A tool message seen before (same message id and call id): not a new result.

        ``SummarizationMiddleware`` re-emits the messages it keeps after a summary; the
        kept ``ToolMessage`` is the same result, not another call.
        """
        if not is_tool_message(message):
            return False
        key = (field(message, "id"), field(message, "tool_call_id"))
        if not isinstance(key[0], str) or not isinstance(key[1], str):
            return False
        seen = self._results
        if key in seen:
            return True
        seen[key] = None
        while len(seen) > self._max_calls:
            seen.popitem(last=False)
        return False

    def _tool_step(self, node: str, message: Any) -> Step:
        call_id = field(message, "tool_call_id")
        called_name, args = (None, None)
        if isinstance(call_id, str):
            called_name, args = self._calls.get(call_id, (None, None))
        return tool_message_step(node, message, name=called_name, args=args)

    def _remember(self, message: Any) -> None:
        calls = tool_calls(message)
        if not calls:
            return
        memory = self._calls
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            call_id = call.get("id")
            if not isinstance(call_id, str):
                continue
            memory[call_id] = (tool_call_name(call), tool_call_args(call))
            memory.move_to_end(call_id)
            while len(memory) > self._max_calls:
                memory.popitem(last=False)


def steps_from_updates(chunks: Iterable[Mapping[str, Any]]) -> list[Step]:
    """All steps of a run streamed with ``stream_mode="updates"``."""
    stepper = UpdateStepper()
    steps: list[Step] = []
    for chunk in chunks:
        steps += stepper.feed(chunk)
    return steps


# -- duck typing (message shapes themselves live in liveguard.core.messages) ----------------------
def _messages_of(value: Any) -> list[Any]:
    """The update's new messages as a list (a single message counts as one)."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]
