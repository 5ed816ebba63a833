"""An agent's message list → :class:`~liveguard.core.model.Trajectory` (openevals' ``outputs``).

openevals and agentevals pass a run as its messages: a list of OpenAI-style dicts or
LangChain messages, or ``{"messages": [...]}``. They are read as a ``create_agent`` run:
each assistant message is a ``model`` step, each run of consecutive tool messages one
``tools`` update (one tool step per message, its ``args`` found by ``tool_call_id`` among
the earlier assistant messages' calls, exactly as in a stream); user and system messages
are inputs, not steps. The run's policy preset is ``tool_agent``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from liveguard.core.messages import is_ai_message, is_tool_message
from liveguard.core.model import Step, Trajectory
from liveguard.errors import TrajectoryReadError
from liveguard.readers.stream import UpdateStepper

__all__ = ["MODEL_NODE", "TOOLS_NODE", "steps_from_messages", "trajectory_from_messages"]

MODEL_NODE: Final = "model"
TOOLS_NODE: Final = "tools"

def _message_list(outputs: Any) -> list[Any]:
    messages = outputs.get("messages") if isinstance(outputs, Mapping) else outputs
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes):
        return list(messages)
    raise TypeError(
        "expected a list of messages or {'messages': [...]}, got "
        f"{type(messages if isinstance(outputs, Mapping) else outputs).__name__}"
    )


def steps_from_messages(outputs: Any) -> list[Step]:
    """The steps of a message list (see the module docstring)."""
    stepper = UpdateStepper()
    steps: list[Step] = []
    pending_tools: list[Any] = []

    def flush() -> None:
        if pending_tools:
            steps.extend(stepper.feed({TOOLS_NODE: {"messages": list(pending_tools)}}))
            pending_tools.clear()

    for message in _message_list(outputs):
        if is_tool_message(message):
            pending_tools.append(message)
            continue
        flush()
        if is_ai_message(message):
            steps += stepper.feed({MODEL_NODE: {"messages": [message]}})
    flush()
    return steps


def trajectory_from_messages(
    outputs: Any, *, run_id: str = "messages", graph: str | None = None
) -> Trajectory:
    """A Trajectory of a message list; a shape that is not one raises TrajectoryReadError."""
    try:
        steps = steps_from_messages(outputs)
    except TypeError as exc:
        raise TrajectoryReadError(run_id, str(exc)) from None
    return Trajectory(run_id=run_id, graph=graph, steps=steps,
                      metadata={"source": "messages", "policy": "tool_agent"})
