"""The one place that knows what a message and a tool call look like.

Framework-free: LangChain message objects are duck-typed (``.tool_calls``,
``.tool_call_id``, ``.type``, ``.name``, ``.content``, ``.status``), and so are
OpenAI-style and LangChain-style dicts (``role`` / ``type``, ``tool_calls``,
``tool_call_id``, ``name``, ``content``, ``status``). A tool call is LangChain's
``{"name", "args", "id"}`` or OpenAI's ``{"id", "type": "function", "function":
{"name", "arguments"}}``.

Every reader (JSONL, stream updates, LangSmith run trees, checkpoint history), the
Monitor and the integrations ask these functions, so "the same verdict however the run
was recorded" rests on one definition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from liveguard.core.model import Step

__all__ = [
    "AI_ROLES",
    "AI_TYPES",
    "MESSAGE_DUMP_FIELDS",
    "MESSAGE_DUMP_TYPES",
    "MESSAGE_KEYS",
    "UNKNOWN_TOOL",
    "content",
    "dumpd_kwargs",
    "field",
    "is_ai_message",
    "is_error_text",
    "is_message_dump",
    "is_message_shaped",
    "is_tool_message",
    "is_user_input",
    "is_user_message",
    "is_user_turn",
    "tool_call_args",
    "tool_call_name",
    "tool_calls",
    "tool_message_step",
    "tool_step",
]

UNKNOWN_TOOL: Final = "unknown_tool"
"""The tool name of a tool step whose tool could not be named."""

_MISSING: Final[Any] = object()


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a mapping, else ``obj.name``; ``default`` when absent."""
    if type(obj) is dict or isinstance(obj, Mapping):  # a plain dict skips the ABC check
        return obj.get(name, default)
    return getattr(obj, name, default)


def content(message: Any) -> Any:
    """A message's content; a bare string is its own content."""
    return message if isinstance(message, str) else field(message, "content")


def tool_calls(output: Any) -> list[Any] | None:
    """The tool calls an output requests (AIMessage or OpenAI/LangChain dict), else None."""
    calls = field(output, "tool_calls")
    if isinstance(calls, list | tuple) and calls:
        return list(calls)
    return None


def is_tool_message(message: Any) -> bool:
    """A tool result message: ``role``/``type`` ``"tool"``, or a ``tool_call_id``."""
    return (
        field(message, "tool_call_id") is not None
        or field(message, "type") == "tool"
        or field(message, "role") == "tool"
    )


AI_ROLES: Final = frozenset({"assistant", "ai"})
"""``role`` values of a model's (assistant's) message dict."""
AI_TYPES: Final = ("ai", "AIMessageChunk")
"""``type`` values of LangChain's ``AIMessage`` / ``AIMessageChunk`` (objects and dumps)."""


def is_ai_message(message: Any) -> bool:
    """A model's message: ``{"role": "assistant"}`` (or ``"ai"``), or LangChain's
    ``AIMessage`` / ``AIMessageChunk`` (``type`` ``"ai"`` / ``"AIMessageChunk"``)."""
    return field(message, "role") in AI_ROLES or field(message, "type") in AI_TYPES


USER_NODES: Final = frozenset({"user", "human", "__input__"})
"""Node names whose message steps are the user's input (the requests replies answer);
``__input__`` is the live guards' user turn (``liveguard.live.thread_guard.INPUT_NODE``)."""


def is_user_message(message: Any) -> bool:
    """A user's message: LangChain's ``HumanMessage`` (``type`` ``"human"``) or a
    ``{"role": "user"}`` / ``{"type": "human"}`` dict."""
    if isinstance(message, str) or message is None:
        return False
    return bool(field(message, "type") == "human" or field(message, "role") == "user")


def is_user_input(step: Step) -> bool:
    """A message step that is the user's input: node ``"user"`` (or ``"human"``), or an
    output that is a user message. The content rules key the replies on it."""
    return step.tool is None and is_user_turn(step.node, step.output)


def is_user_turn(node: str, output: Any) -> bool:
    """:func:`is_user_input` of a step without a tool, from its node and its output (the
    Monitor has both at hand)."""
    if node in USER_NODES:
        return True
    return output is not None and not isinstance(output, str | int | float | bool) and is_user_message(output)


def tool_call_name(call: Any) -> str | None:
    """A tool call's tool name: ``name``, else OpenAI's ``function.name``; None if neither."""
    if type(call) is not dict and not isinstance(call, Mapping):
        return None
    name = call.get("name")
    if not name:
        function = call.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) and name else None


def tool_call_args(call: Any, default: Any = None) -> Any:
    """A tool call's arguments: ``args``, else OpenAI's ``function.arguments`` (JSON text)."""
    if not isinstance(call, Mapping):
        return default
    args = call.get("args", _MISSING)
    if args is _MISSING:
        function = call.get("function")
        args = function.get("arguments", default) if isinstance(function, Mapping) else default
    return args


def is_message_shaped(d: Mapping[Any, Any]) -> bool:
    """OpenAI/LangChain message dicts, content blocks and tool-call dicts.

    Their ids and provider metadata are volatile (the fingerprint drops them); elsewhere an
    ``id`` is data.
    """
    if "role" in d or "tool_call_id" in d:
        return True
    if "name" in d and ("args" in d or "arguments" in d):
        return True
    if "function" in d and "type" in d:
        return True
    return isinstance(d.get("type"), str) and ("content" in d or "text" in d)


_ERROR_TEXT: Final = re.compile(r"\s*(?:error\b(?!-)|traceback \(most recent call last\))", re.IGNORECASE)


def is_error_text(value: Any) -> bool:
    """A tool result that reports its own failure in text: it starts with ``Error``
    (``"Error: connection refused"``, LangChain's ``ToolNode`` error text) or a Python
    traceback. Such a call failed, whatever its status says."""
    return isinstance(value, str) and _ERROR_TEXT.match(value) is not None


def tool_step(
    node: str,
    tool: str | None,
    args: Any,
    result: Any,
    *,
    failed: bool = False,
    error: Any = None,
) -> Step:
    """The one builder of tool Steps.

    ``error`` is an explicit error (a tool run's error text); otherwise a ``failed``
    result (a tool message with ``status: "error"``) is its own error.
    """
    if error is None and failed:
        error = result
    return Step(node=node, tool=tool or UNKNOWN_TOOL, args=args, result=result, error=error)


def tool_message_step(node: str, message: Any, *, name: str | None = None, args: Any = None) -> Step:
    """A tool Step from a tool result message; ``name`` is used when the message has none."""
    own = field(message, "name")
    tool = own if isinstance(own, str) and own else name
    return tool_step(node, tool, args, content(message), failed=field(message, "status") == "error")


# -- LangChain message dumps (JSON form) -----------------------------------------------------
MESSAGE_KEYS: Final[tuple[str, ...]] = (
    "type", "content", "name", "tool_calls", "invalid_tool_calls", "tool_call_id", "status",
)
"""Message fields the readers keep in steps (never ``id``, ``response_metadata`` or
``usage_metadata``)."""

MESSAGE_DUMP_TYPES: Final = frozenset({
    "ai", "human", "system", "tool", "function", "chat", "developer", "remove",
    "AIMessageChunk", "HumanMessageChunk", "SystemMessageChunk", "ToolMessageChunk",
    "FunctionMessageChunk", "ChatMessageChunk",
})
"""``type`` values of LangChain's message classes, as ``model_dump()`` writes them."""

MESSAGE_DUMP_FIELDS: Final = frozenset({
    "content", "additional_kwargs", "response_metadata", "type", "name", "id", "tool_calls",
    "invalid_tool_calls", "usage_metadata", "tool_call_id", "artifact", "status", "example",
    "role", "tool_call_chunks", "chunk_position",
})
"""Every field a LangChain message dump may have."""


def dumpd_kwargs(value: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The kwargs of a ``dumpd`` message (``{"lc": 1, "type": "constructor", ...}``), else None."""
    ident, kwargs = value.get("id"), value.get("kwargs")
    if (
        value.get("lc") == 1
        and value.get("type") == "constructor"
        and isinstance(ident, list)
        and ident
        and isinstance(ident[-1], str)
        and ident[-1].endswith(("Message", "MessageChunk"))
        and isinstance(kwargs, Mapping)
    ):
        return kwargs
    return None


def is_message_dump(value: Mapping[str, Any]) -> bool:
    """A LangChain message's ``model_dump()`` (its JSON form): a message ``type``, a
    ``content``, and no key a message does not have."""
    return (
        value.get("type") in MESSAGE_DUMP_TYPES
        and "content" in value
        and all(isinstance(k, str) and k in MESSAGE_DUMP_FIELDS for k in value)
    )
