"""What the parts of the approval step share: the interrupt kind, config keys, the claims won, the errors."""

from __future__ import annotations

import logging
from typing import Final

from liveguard import hitl
from liveguard.errors import LiveguardError

log = logging.getLogger("liveguard.approval")

KIND: Final = hitl.APPROVAL_KIND
UNATTRIBUTED: Final = "(unattributed)"
"""Who decided, in the claims table, when the answer named nobody (a review UI sends no ``by``)."""
CONF: Final = "configurable"
CHECKPOINTER_KEY: Final = "__pregel_checkpointer"
TASK_ID_KEY: Final = "__pregel_task_id"
SENDS: Final = ("approve", "edit")
"""The decision types that send (and that :func:`approval_send` sends on)."""
WON: set[tuple[str, str]] = set()
"""Claims this process won and has not sent on yet: ``(thread, claim key)``. Only the
process that won a decision's claim may send on it (:func:`approval_send`)."""


class ApprovalError(LiveguardError, ValueError):
    """A resume answer that is not a valid decision, or an approval step that cannot run."""


class ApprovalClaimError(ApprovalError):
    """The decision could not be recorded (a database error): nothing was decided, the draft still waits."""


class ApprovalConflict(LiveguardError):
    """Another worker already decided this interrupt; this one sends nothing."""

    def __init__(self, thread_id: str, decided_by: str, action: str, decided_at: str) -> None:
        self.thread_id = thread_id
        self.decided_by = decided_by
        self.action = action
        self.decided_at = decided_at
        super().__init__(
            f"thread {thread_id}: this approval was already decided "
            f"({action} by {decided_by} at {decided_at})"
        )
