"""A person's decision: parsing a resume answer, finding the pending approval, resuming pinned to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from liveguard.core._twin import Body, Op, arun, run
from liveguard.errors import ApprovalError
from liveguard.live import hitl
from liveguard.live.approval._common import CONF, KIND


def parse_decision(
    answer: Any, request: Mapping[str, Any], *, require_by: bool = False
) -> hitl.ReviewDecision:
    """The typed decision in a resume answer to the approval ``request``; raise :class:`ApprovalError`.

    ``answer`` is LangChain's ``{"decisions": [...]}`` (see :func:`liveguard.live.hitl.parse_resume`
    for every shape accepted); ``require_by``: the answer must name who decided (the approvals
    CLI always does). The error says where the answer is wrong, never its text.
    """
    parsed = hitl.parse_resume(answer, request, require_by=require_by)
    if isinstance(parsed, hitl.InvalidDecision):
        raise ApprovalError(str(parsed))
    return parsed


STRICT_RESUME_KEY: Final = "__pregel_strict_resume"
"""LangGraph's strict resume switch: a resume naming an interrupt that is not pending is refused."""


def pending_approval(snapshot: Any) -> tuple[str, dict[str, Any]] | None:
    """``(interrupt id, request)`` of the approval interrupt a thread's state snapshot waits on."""
    for item in getattr(snapshot, "interrupts", ()) or ():
        value = getattr(item, "value", None)
        if isinstance(value, Mapping) and value.get("kind") == KIND:
            interrupt_id = str(getattr(item, "id", "") or "")
            if interrupt_id:
                return interrupt_id, dict(value)
    return None


def pending_interrupt_id(snapshot: Any) -> str | None:
    """The id of the approval interrupt a thread's state snapshot waits on, else None."""
    found = pending_approval(snapshot)
    return found[0] if found is not None else None


def pinned(config: Any, interrupt_id: str, answer: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``Command(resume={interrupt_id: answer})`` and a strict-resume config for it.

    LangGraph refuses the resume (``UnknownInterruptError``, before anything is written) when
    that interrupt is no longer pending, so a decision never lands on another interrupt.
    """
    from langgraph.types import Command

    conf = dict((config or {}).get(CONF) or {})
    conf[STRICT_RESUME_KEY] = True
    return Command(resume={interrupt_id: dict(answer)}), {**(config or {}), CONF: conf}


def _not_waiting(config: Any) -> ApprovalError:
    thread = ((config or {}).get(CONF) or {}).get("thread_id")
    return ApprovalError(f"thread {thread}: not waiting for approval")


def _checked(snapshot: Any, config: Any, answer: Any) -> tuple[str, dict[str, Any]]:
    found = pending_approval(snapshot)
    if found is None:
        raise _not_waiting(config)
    interrupt_id, request = found
    decision = parse_decision(answer, request)
    return interrupt_id, hitl.to_hitl_response(decision)


def _resume(graph: Any, config: Any, answer: Any) -> Body[Any]:
    """Check ``answer`` against the pending request, then resume pinned to its interrupt."""
    from langgraph.errors import UnknownInterruptError

    snapshot = yield Op(graph.get_state, graph.aget_state, (config,))
    interrupt_id, response = _checked(snapshot, config, answer)
    command, strict = pinned(config, interrupt_id, response)
    try:
        return (yield Op(graph.invoke, graph.ainvoke, (command, strict)))
    except UnknownInterruptError:
        raise _not_waiting(config) from None


def resume_approval(graph: Any, config: Any, answer: Any) -> Any:
    """Resume a thread held by the approval step with a checked decision, pinned to its interrupt.

    ``answer`` is ``{"decisions": [{"type": "approve" | "edit" | "reject", ...}], "by": ...,
    "note": ...}``. Raises :class:`ApprovalError` (nothing resumed, nothing sent) when the
    thread is not waiting for an approval (also when another worker decided it between the
    check and the resume) or ``answer`` is not a valid decision for the pending request;
    returns what ``graph.invoke`` returns.
    """
    return run(_resume(graph, config, answer))


async def aresume_approval(graph: Any, config: Any, answer: Any) -> Any:
    """Async :func:`resume_approval`."""
    return await arun(_resume(graph, config, answer))
