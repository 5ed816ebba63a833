"""One run of the approval node: where it runs (thread, task, namespace, checkpoint), what it read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from liveguard.errors import ApprovalError
from liveguard.live.approval._common import CHECKPOINTER_KEY, CONF, KIND, TASK_ID_KEY

_INTERRUPT: Final = "__interrupt__"


def ancestors(config: Mapping[str, Any], ns: str) -> list[tuple[str, str]]:
    """``(namespace, checkpoint id)`` of every graph above the one the node runs in, root first."""
    conf = config.get(CONF) or {}
    cmap = conf.get("checkpoint_map") or {}
    if not ns:
        return []
    parts = ns.split("|")
    out = []
    for depth in range(len(parts)):
        above = "|".join(parts[:depth])
        if above in cmap:
            out.append((above, str(cmap[above])))
    return out


def where(config: Mapping[str, Any]) -> tuple[str, str, str, str]:
    conf = config.get(CONF) or {}
    thread = conf.get("thread_id")
    task_id = conf.get(TASK_ID_KEY)
    ns = str(conf.get("checkpoint_ns") or "")
    parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
    checkpoint_id = (conf.get("checkpoint_map") or {}).get(parent_ns)
    if thread is None or task_id is None or checkpoint_id is None or conf.get(CHECKPOINTER_KEY) is None:
        raise ApprovalError(
            "approval step: the graph needs a checkpointer and a thread_id "
            "(compile(checkpointer=...), config={'configurable': {'thread_id': ...}})"
        )
    return str(thread), str(task_id), parent_ns, str(checkpoint_id)


def node_of(config: Mapping[str, Any]) -> str | None:
    node = (config.get("metadata") or {}).get("langgraph_node")
    return node if isinstance(node, str) and node else None


def stored_request(target: Any, task_id: str) -> tuple[dict[str, Any], str | None] | None:
    """The request this task interrupted with before (a resume re-runs the node), and its id."""
    for write_task, channel, value in target.pending_writes or ():
        if write_task != task_id or channel != _INTERRUPT:
            continue
        for item in value if isinstance(value, list | tuple) else [value]:
            request = getattr(item, "value", None)
            if isinstance(request, Mapping) and request.get("kind") == KIND:
                held = getattr(item, "id", None)
                return ({k: v for k, v in request.items() if k != "error"},
                        None if held is None else str(held))
    return None


@dataclass(eq=False)
class Visit:
    """One run of the approval node: where it is, what it read, what it will show."""

    thread: str
    task_id: str
    ns: str
    checkpoint_id: str
    saver: Any
    node: str | None
    chunks: list[dict[str, Any]] | None = None
    payload: dict[str, Any] | None = None
    error: str | None = field(init=False)
    ancestors: list[tuple[str, str]] = field(default_factory=list)
    root_checkpoint: str | None = None
    node_ns: str = ""
    stored_id: str | None = None
    """The id of the interrupt this task raised before (read back from the checkpoint)."""
    digest: str = ""
    """The digest of the draft and recipient the state holds (``_common.bound_digest``)."""
    recipient: Any = None

    def __post_init__(self) -> None:
        self.error = None if self.saver is not None and self.checkpoint_id else "no_history"

    @property
    def readable(self) -> bool:
        return self.error is None

    @property
    def claim_key(self) -> str:
        """The interrupted task's id: the same for every resumer of this interrupt."""
        return f"task:{self.task_id}"
