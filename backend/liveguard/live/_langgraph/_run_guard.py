"""``RunGuard``: the name the langgraph integration gave its run's guard, now the one live core,
:class:`liveguard.live.thread_guard.ThreadSession` (kept for imports of this name)."""

from __future__ import annotations

from liveguard.live.thread_guard import ThreadSession

__all__ = ["RunGuard"]

RunGuard = ThreadSession
