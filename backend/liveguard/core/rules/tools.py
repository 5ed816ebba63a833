"""tool_no_progress: the same (tool, canonical args, result) repeated over recent tool turns.

A **turn** is the tool calls of one model message. The Monitor hands a parallel turn's
tool steps over together, in a canonical order, once the turn is complete (see
:class:`~liveguard.core._monitor.Monitor`); a tool step with no tool-call request before it is a
turn of its own. So a sequential agent has one tool step per turn, and for it every
threshold and window below reads exactly as "tool steps".
"""

from __future__ import annotations

from typing import Any, Final

from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import (
    TOOL,
    Observation,
    Pack,
    RuleBase,
    Unpack,
    count_digest,
    digest_prefix,
    unhex,
)

__all__ = ["ToolNoProgress"]

_MAX_ENTRIES: Final = 256
"""Hard bound on remembered (turn, signature) pairs, whatever a turn's width."""
_STRIDE: Final = 4
"""Fields per entry in the flat entry list: turn, signature, step index, counted."""


def _drop_before(entries: list[Any], oldest: int) -> None:
    """Drop the entries of turns up to ``oldest`` (they lead the list, oldest first)."""
    while entries:
        turn: int = entries[0]
        if turn > oldest:
            return
        del entries[:_STRIDE]


def _chain(entries: list[Any], sig: bytes, oldest: int) -> list[int]:
    """Step indices of the counted appearances of ``sig`` after turn ``oldest``, oldest first:
    back from the newest while no turn strictly between one appearance and the next holds
    a signature that occurs once among the entries (something new that never came back)."""
    once: dict[bytes, int] = {}
    for i in range(1, len(entries), _STRIDE):
        once[entries[i]] = once.get(entries[i], 0) + 1
    steps: list[int] = []
    later = -1  # the turn of the newer appearance (-1: none yet)
    news: list[int] = []  # turns since the newer appearance that brought something new
    i = len(entries) - _STRIDE
    while i >= 0:
        turn: int = entries[i]
        if turn <= oldest:
            break
        if entries[i + 1] == sig:
            if later >= 0 and any(turn < t < later for t in news):
                break  # something new came back between this appearance and the next
            if entries[i + 3]:
                steps.append(entries[i + 2])
            later, news = turn, []
        elif later >= 0 and once[entries[i + 1]] == 1:
            news.append(turn)
        i -= _STRIDE
    steps.reverse()
    return steps


class ToolNoProgress(RuleBase):
    """Fires when a tool signature reaches its repeat threshold within the window of turns.

    The signature includes the result (or error), so a poll that goes running,
    running, done never fires, and a retry whose error changes is progress.
    Non-retryable failures (``"retryable": false``) fire sooner. Per-tool
    overrides set other thresholds or windows, or exempt pollers.

    Parallel turns, precisely:

    * a signature counts at most once per turn (two identical calls in one message are
      one attempt);
    * a turn **makes progress** when at least one of its signatures is not among the
      signatures of the previous ``window`` turns (the widest tool window);
    * an appearance of a signature **counts** when the signature is new in that turn,
      or when the turn made no progress, or when the call **failed** (an error, or
      ``"retryable": false``). A constant side call (``whoami()``) issued beside
      calls that bring something new is therefore never counted after its first
      appearance; once every call of a turn repeats, all of them count again. An
      identical call with an identical failure counts whatever else its turn did: the
      same failure again is no progress of that call, and a progressing sibling does not
      make it one;
    * a repeat is judged with what came back between: two appearances of a signature are
      the same state only when no turn strictly between them brought something new, a
      signature that came back once and never again (a file written with new content, a
      counter read with a new value). ``run_tests`` failing the same way after each of
      three different edits is progress; failing again with no edit between, or after
      the same edit again, is not; ``bump()`` answering "bumped" between new
      ``read_counter`` values is progress, between the same value it is a loop. Siblings
      in the same parallel turn are not between (they ran beside the call, not before
      it). A call that **failed** is exempt: the same failure again is no progress of that
      call whatever came between (only a changed failure is);
    * a signature fires when its counted appearances in the last ``window`` turns, with
      nothing new between one and the next, reach the threshold, at the index of its own
      step in the turn.

    The result depends only on the set of signatures per turn, never on the order in
    which parallel calls finished.

    The entries are one flat list (turn, signature, step index, counted, ...); signatures
    are the observations' raw digests. A signature's counted appearances are gathered only
    when the signature occurs at least ``threshold`` times among the entries at all.
    """

    __slots__ = ("_defaults", "_entries", "_policy", "_tools", "_turn", "_turns", "_widest")

    code = "tool_no_progress"

    kinds = (TOOL,)

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._tools = policy.tools
        self._defaults = (policy.tool_repeats, policy.tool_window, policy.tool_repeats_nonretryable)
        tools = policy.tools
        self._widest = (
            max([policy.tool_window] + [t.window or 0 for t in tools.values()]) if tools
            else policy.tool_window
        )
        # (turn, signature, step index, counted) flat: one entry per distinct signature per turn
        self._entries: list[Any] = []
        self._turn: list[Observation] | None = None  # the open turn's steps so far
        self._turns = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != TOOL or obs.tool is None:
            return None
        if not obs.last or self._turn is not None:
            return self._parallel(obs)
        # A turn of one (every sequential step): ``_close([obs])`` inline. A lone signature
        # is either new (progress: counted) or a repeat (no progress: counted too).
        number = self._turns = self._turns + 1
        entries = self._entries
        _drop_before(entries, number - self._widest)
        sig = obs.digest
        # one field at a time: no tuple built per step (the entries are the same flat list)
        entries.append(number)
        entries.append(sig)
        entries.append(obs.index)
        entries.append(True)
        if len(entries) > _STRIDE * _MAX_ENTRIES:
            del entries[:_STRIDE]
        tool = obs.tool
        if tool not in self._tools:  # _check's test for the usual tool, inline
            limits = self._defaults
            if count_digest(entries, sig, 1, _STRIDE) < (limits[2] if obs.nonretryable else limits[0]):
                return None
        hit = self._check(number, sig, obs)
        return None if hit is None else [hit]

    def _parallel(self, obs: Observation) -> list[Violation] | None:
        """A step of a parallel turn: held until the turn's last step, then the whole turn."""
        turn = self._turn
        if turn is None:
            turn = self._turn = []
        turn.append(obs)
        if not obs.last:
            return None
        self._turn = None
        return self._close(turn)

    def _close(self, turn: list[Observation]) -> list[Violation] | None:
        number = self._turns = self._turns + 1
        entries = self._entries
        _drop_before(entries, number - self._widest)
        known = set(entries[1::_STRIDE])
        mine: dict[bytes, Observation] = {}
        for obs in turn:
            mine.setdefault(obs.digest, obs)
        progress = any(sig not in known for sig in mine)
        found: list[Violation] | None = None
        for sig, obs in mine.items():
            counted = sig not in known or not progress or obs.failed
            entries += (number, sig, obs.index, counted)
            if len(entries) > _STRIDE * _MAX_ENTRIES:
                del entries[:_STRIDE]
            if not counted:
                continue
            hit = self._check(number, sig, obs)
            if hit is not None:
                found = [*found, hit] if found else [hit]
        return found

    def _check(self, number: int, sig: bytes, obs: Observation) -> Violation | None:
        tool = obs.tool or ""
        limits = self._policy.tool_limits(tool) if tool in self._tools else self._defaults
        if limits is None:
            return None
        repeats, window, nonretryable = limits
        threshold = nonretryable if obs.nonretryable else repeats
        entries = self._entries
        if count_digest(entries, sig, 1, _STRIDE) < threshold:  # fewer entries, fewer counted ones
            return None
        if obs.failed:  # the same failure again: no progress of that call, whatever came between
            recent = [entries[i + 2] for i in range(0, len(entries), _STRIDE)
                      if entries[i + 3] and entries[i + 1] == sig and entries[i] > number - window]
        else:
            recent = _chain(entries, sig, number - window)
        if len(recent) != threshold:
            return None
        return Violation(
            code=self.code,
            severity="hard",
            step=obs.index,
            node=obs.node,
            count=len(recent),
            detail={
                "tool": obs.tool,
                "digest": digest_prefix(sig),
                "window": window,
                "threshold": threshold,
                "nonretryable": obs.nonretryable,
                "steps": recent,
            },
        )

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        e = self._entries
        entries = [[e[i], pack(e[i + 1].hex()), e[i + 2], int(e[i + 3])]
                   for i in range(0, len(e), _STRIDE)]
        return [self._turns, entries, [obs.pack(pack) for obs in self._turn or ()]]

    def restore(self, data: Any, unpack: Unpack) -> None:
        self._turns, saved, turn = data
        entries = self._entries
        entries.clear()
        for t, sig, index, c in saved:
            entries += (int(t), unhex(unpack(sig)), index, bool(c))  # turns compared as ints
            if len(entries) > _STRIDE * _MAX_ENTRIES:
                del entries[:_STRIDE]
        pending = [Observation.unpack(obs, unpack) for obs in turn]
        for obs in pending:
            obs.last = False
        self._turn = pending or None
