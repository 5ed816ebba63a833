"""What the parts of the approval step share: the interrupt kind, config keys, the claims won."""

from __future__ import annotations

import logging
from typing import Final

from liveguard import hitl

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
