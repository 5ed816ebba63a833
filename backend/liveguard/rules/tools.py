"""tool_no_progress: the same (tool, canonical args, result) repeated over recent tool turns.

A **turn** is the tool calls of one model message. The Monitor hands a parallel turn's
tool steps over together, in a canonical order, once the turn is complete (see
:class:`~liveguard.monitor.Monitor`); a tool step with no tool-call request before it is a
turn of its own. So a sequential agent has one tool step per turn, and for it every
threshold and window below reads exactly as "tool steps".
"""

from __future__ import annotations

from typing import Any, Final

from liveguard.model import Violation
from liveguard.policy import Policy
from liveguard.rules.base import (
    TOOL,
    Observation,
    Pack,
    RuleBase,
    Unpack,
    count_digest,
    digest_prefix,
    has_digest,
    unhex,
)

__all__ = ["ToolNoProgress"]

_MAX_ENTRIES: Final = 256
"""Hard bound on remembered (turn, signature) pairs, whatever a turn's width."""
_STRIDE: Final = 6
"""Fields per entry in the flat entry list: turn, signature, step index, counted, and the
count of new signatures before and after the entry's turn (its epochs)."""


def _drop_before(entries: list[Any], oldest: int) -> None:
    """Drop the entries of turns up to ``oldest`` (they lead the list, oldest first)."""
    while entries:
        turn: int = entries[0]
        if turn > oldest:
            return
        del entries[:_STRIDE]


def _chain(entries: list[Any], sig: bytes, oldest: int) -> list[int]:
    """Step indices of the counted appearances of ``sig`` after turn ``oldest``, back from the
    newest while nothing new came back between one appearance and the next (the older one's
    epoch after its turn equals the newer one's epoch before its own), oldest first."""
    steps: list[int] = []
    since = -1  # the newer appearance's epoch before its turn (-1: none yet)
    i = len(entries) - _STRIDE
    while i >= 0:
        turn: int = entries[i]
        if turn <= oldest:
            break
        if entries[i + 1] == sig:
            if since >= 0 and entries[i + 5] != since:
                break  # something new came back between this appearance and the next
            since = entries[i + 4]
            if entries[i + 3]:
                steps.append(entries[i + 2])
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
    * a repeat is judged with what came back between: two appearances of a signature
      are the same state only when no turn strictly between them brought a new signature
      (a result not among the previous ``window`` turns' signatures: a file written with
      new content, a counter read with a new value). ``run_tests`` failing the same way
      after each of three different edits is progress; failing again with no edit
      between is not; ``bump()`` answering "bumped" between new ``read_counter`` values
      is progress. Siblings in the same parallel turn are not between (they ran beside
      the call, not before it), so an identical failure beside a new search each turn
      still counts;
    * a signature fires when its counted appearances in the last ``window`` turns, with
      nothing new between one and the next, reach the threshold, at the index of its own
      step in the turn.

    The result depends only on the set of signatures per turn, never on the order in
    which parallel calls finished.

    The entries are one flat list (turn, signature, step index, counted, epoch before,
    epoch after, ...), where an epoch counts the new signatures so far; signatures are the
    observations' raw digests. A signature's counted appearances are gathered only
    when the signature occurs at least ``threshold`` times among the entries at all.
    """

    __slots__ = ("_defaults", "_entries", "_new", "_policy", "_tools", "_turn", "_turns", "_widest")

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
        # (turn, signature, step index, counted, before, after) flat: one entry per distinct
        # signature per turn
        self._entries: list[Any] = []
        self._turn: list[Observation] | None = None  # the open turn's steps so far
        self._turns = 0
        self._new = 0  # new signatures so far (the epoch)

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
        before = self._new
        if not has_digest(entries, sig, 1, _STRIDE):
            self._new = before + 1
        # one field at a time: no tuple built per step (the entries are the same flat list)
        entries.append(number)
        entries.append(sig)
        entries.append(obs.index)
        entries.append(True)
        entries.append(before)
        entries.append(self._new)
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
        fresh = sum(1 for sig in mine if sig not in known)
        progress = fresh > 0
        before = self._new
        after = self._new = before + fresh
        found: list[Violation] | None = None
        for sig, obs in mine.items():
            counted = sig not in known or not progress or obs.failed
            entries += (number, sig, obs.index, counted, before, after)
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
        entries = [[e[i], pack(e[i + 1].hex()), e[i + 2], int(e[i + 3]), e[i + 4], e[i + 5]]
                   for i in range(0, len(e), _STRIDE)]
        return [self._turns, entries, [obs.pack(pack) for obs in self._turn or ()], self._new]

    def restore(self, data: Any, unpack: Unpack) -> None:
        # a snapshot from before epochs has no epoch anywhere: its entries are one epoch (0)
        self._turns, saved, turn = data[:3]
        self._new = int(data[3]) if len(data) > 3 else 0
        entries = self._entries
        entries.clear()
        for entry in saved:
            t, sig, index, c = entry[:4]
            before, after = (int(entry[4]), int(entry[5])) if len(entry) > 5 else (0, 0)
            # turns compared as ints
            entries += (int(t), unhex(unpack(sig)), index, bool(c), before, after)
            if len(entries) > _STRIDE * _MAX_ENTRIES:
                del entries[:_STRIDE]
        pending = [Observation.unpack(obs, unpack) for obs in turn]
        for obs in pending:
            obs.last = False
        self._turn = pending or None
