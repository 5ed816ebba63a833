"""Content rules: no_progress_stall, repeated_content and content_cycle.

Content is compared by digest: the step's summary if given, else its output.
Keys pair the node with the digest, so two nodes saying "OK" are not a repeat. The
digest of a reply is keyed on the request it answers (the user's last input), or on the
step's own input when it carries one (``args`` on a message step: a ``Send`` payload, a
task's arguments): see :class:`~liveguard.core._monitor.Monitor`. So the same reply to a
different request, or the same output of a different input, is progress; the same
request answered the same way is a repeat. The user's own inputs are requests: the
stall and repeat rules skip them (a user step breaks a stall run); cycles include them.

State is kept flat: each window is one list of (digest, node, index, ...) fields in
turn, never a tuple per step, and digests are the observations' raw 16-byte values.
"""

from __future__ import annotations

from typing import Any, Final

from liveguard.core.model import Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import (
    CONTENTLESS,
    MESSAGE,
    TOOL,
    Observation,
    Pack,
    RuleBase,
    Unpack,
    agent_of,
    count_digest,
    digest_prefix,
    has_digest,
    unhex,
)

__all__ = ["ContentCycle", "RepeatedContent", "Stall"]


class Stall(RuleBase):
    """no_progress_stall: N consecutive message steps with identical node + content
    (N: ``Policy.stall``, or the node's own ``NodePolicy(stall=N)``: a poller's ceiling).

    Any other step in between (a tool step, a tool-call request, another node)
    breaks the run, so a poll that repeats once is not a stall.
    """

    __slots__ = ("_digest", "_node", "_policy", "_run", "_start")

    code = "no_progress_stall"

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._node: str | None = None  # the previous message step's node and digest
        self._digest = b""
        self._run = 0
        self._start = 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind != MESSAGE or obs.user:
            self._node = None
            return None
        if obs.node == self._node and obs.digest == self._digest:
            self._run += 1
        else:
            self._node, self._digest, self._run, self._start = obs.node, obs.digest, 1, obs.index
            return None
        if self._run != self._policy.stall_limit(obs.node):
            return None
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=obs.node,
                count=self._run,
                detail={"digest": digest_prefix(obs.digest), "first_step": self._start},
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        if self._node is None:
            return None
        return [pack(self._node), pack(self._digest.hex()), self._run, self._start]

    def restore(self, data: Any, unpack: Unpack) -> None:
        if data is None:
            self._node, self._digest, self._run, self._start = None, b"", 0, 0
            return
        node, key, self._run, self._start = data
        self._node, self._digest = unpack(node), unhex(unpack(key))


class RepeatedContent(RuleBase):
    """repeated_content: the same node + content N times in the last M message steps, with
    nothing new coming back in between.

    The window is one flat list, ``[digest, node, index, epoch, ...]``. A node's **epoch**
    counts the new observations that came from elsewhere (a tool step, a user message or
    another node's message whose digest the rule had not seen among the last
    :data:`_SEEN` observations); the node's own messages never move it, nor do those of
    the node's other channels (:func:`~liveguard.core.rules.base.agent_of`: "Orchestrator
    (thought)" and "Orchestrator (-> WebSurfer)" are one agent). A step's repeats
    are the window entries with its digest, node *and* epoch: "Next speaker WebSurfer"
    three times with a new page from WebSurfer between each is three states, the same
    message with the same results between is a repeat. A step's count is counted only
    when its digest alone occurs ``repeat`` times in the window (one C-level
    ``list.count`` over the digests); node and epoch are then compared too.

    A poller given room (``NodePolicy(stall=N)`` with N above ``repeat``:
    :meth:`~liveguard.core.policy.Policy.repeat_ceilings`) fires at its N-th identical step
    within its last ``max(repeat_window, N)`` message steps; the window keeps that many
    steps, and every other node still counts over its last ``repeat_window``.
    """

    __slots__ = ("_by_node", "_cap", "_ceilings", "_counts", "_items", "_limit", "_new", "_seen",
                 "_size")

    code = "repeated_content"

    kinds = (MESSAGE, TOOL)

    def __init__(self, policy: Policy) -> None:
        self._limit = policy.repeat
        self._size = policy.repeat_window
        # pollers given room (NodePolicy(stall=N), N > repeat): N identical in max(window, N)
        self._ceilings = policy.repeat_ceilings()
        self._cap = max([self._size, *self._ceilings.values()])  # message steps kept
        self._items: list[Any] = []
        self._seen: list[bytes] = []  # the last _SEEN observation digests, oldest first
        self._counts: dict[bytes, int] = {}  # how many times each is in _seen (a look-up, not a scan)
        self._new = 0  # new observations so far
        self._by_node: dict[str, int] = {}  # ... of them, from each node

    def _arrived(self, digest: bytes, node: str) -> None:
        seen, counts = self._seen, self._counts
        had = counts.get(digest, 0)  # 0: not among the last _SEEN observations
        counts[digest] = had + 1
        seen.append(digest)
        if len(seen) > _SEEN:
            oldest = seen[0]
            del seen[0]
            left = counts[oldest] - 1
            if left:
                counts[oldest] = left
            else:
                del counts[oldest]
        if not had:
            self._new += 1
            by_node, agent = self._by_node, agent_of(node)
            by_node[agent] = by_node.get(agent, 0) + 1
            if len(by_node) > _MAX_NODES:  # unbounded node names: keep the table bounded
                by_node.clear()

    def observe(self, obs: Observation) -> list[Violation] | None:
        kind, digest, node = obs.kind, obs.digest, obs.node
        if kind != MESSAGE or obs.user:
            if kind == TOOL or obs.user:
                self._arrived(digest, node)
            return None
        self._arrived(digest, node)
        items = self._items
        epoch = self._new - self._by_node.get(agent_of(node), 0)
        if len(items) >= _ITEM * self._cap:
            del items[:_ITEM]
        # one field at a time: no tuple built per step (the window is the same flat list)
        items.append(digest)
        items.append(node)
        items.append(obs.index)
        items.append(epoch)
        limit, size = self._limit, self._size
        if self._ceilings and node in self._ceilings:
            limit = self._ceilings[node]
            size = max(size, limit)
        start = max(0, len(items) - _ITEM * size)  # the node's window: its last `size` steps
        if count_digest(items, digest, start, _ITEM) < limit:  # fewer of this digest, fewer of the rest
            return None
        steps = [items[i + 2] for i in range(start, len(items), _ITEM)
                 if items[i] == digest and items[i + 1] == node and items[i + 3] == epoch]
        if len(steps) != limit:
            return None
        return [
            Violation(
                code=self.code,
                severity="hard",
                step=obs.index,
                node=node,
                count=limit,
                detail={"digest": digest_prefix(digest), "window": size, "steps": steps},
            )
        ]

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        items = self._items
        window = [[pack(items[i + 1]), pack(items[i].hex()), items[i + 2]]
                  for i in range(0, len(items), _ITEM)]
        if not self._new:  # nothing has arrived: the format before epochs
            return window
        for entry, i in zip(window, range(0, len(items), _ITEM), strict=True):
            entry.append(items[i + 3])
        return {"w": window, "n": self._new, "b": {str(pack(k)): v for k, v in self._by_node.items()},
                "d": [pack(d.hex()) for d in self._seen]}

    def restore(self, data: Any, unpack: Unpack) -> None:
        items = self._items
        items.clear()
        if isinstance(data, dict):
            window = data["w"]
            self._new = int(data["n"])
            self._by_node = {unpack(int(k)): int(v) for k, v in data["b"].items()}
            self._seen = [unhex(unpack(d)) for d in data["d"]][-_SEEN:]
        else:  # a snapshot from before epochs: nothing new has arrived since its entries
            window = data
            self._new, self._by_node, self._seen = 0, {}, []
        counts: dict[bytes, int] = {}
        for digest in self._seen:
            counts[digest] = counts.get(digest, 0) + 1
        self._counts = counts
        for entry in window:
            node, key, index = entry[0], entry[1], entry[2]
            epoch = entry[3] if len(entry) > 3 else self._new - self._by_node.get(agent_of(unpack(node)), 0)
            if len(items) >= _ITEM * self._cap:  # a narrower window than the saved one
                del items[:_ITEM]
            items += (unhex(unpack(key)), unpack(node), index, epoch)


_ITEM: Final = 4
"""RepeatedContent's window fields per step: digest, node, index, epoch."""
_SEEN: Final = 64
"""Observation digests RepeatedContent remembers to tell a new one from one seen before."""
_MAX_NODES: Final = 4096


_SORTED: dict[tuple[int, ...], tuple[int, ...]] = {}
"""Policies' cycle periods, sorted (a Monitor is built per run: sort once)."""


def _sorted(periods: tuple[int, ...]) -> tuple[int, ...]:
    ordered = tuple(sorted(periods))
    if len(_SORTED) < 256:
        _SORTED[periods] = ordered
    return ordered


_STRIDE: Final = 5
"""ContentCycle's history fields per step: digest, node, kind, tool, index."""


class ContentCycle(RuleBase):
    """content_cycle: a block of 2–4 steps repeated back to back (A→B→A→B, A→B→C→A→B→C).

    Incremental: for each period p, ``match[p]`` counts how many consecutive
    positions equal the one p steps earlier. A block repeated r times shows as
    ``match[p] >= p * (r - 1)``. A message-only block needs ``cycle_repeats``; a
    block that holds tool steps or tool-call requests needs as many repetitions as
    the tool rule of its tools, and one that holds a poller given room
    (:meth:`~liveguard.core.policy.Policy.repeat_ceilings`) as many as its ceiling. Only the
    smallest active period fires, on the crossing.

    While every ``match[p]`` is 0, a step whose digest is not in the history matches
    nothing: it is appended without the per-period loop (the usual step).
    """

    __slots__ = ("_cap", "_ceilings", "_history", "_live", "_match", "_max", "_periods", "_policy")

    code = "content_cycle"

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._ceilings = policy.repeat_ceilings()
        periods = policy.cycle_periods
        self._periods = _SORTED.get(periods) or _sorted(periods)
        self._max = self._periods[-1]
        self._cap = _STRIDE * self._max  # the history's length when full
        # The last ``_max`` steps, flat: digest, node, kind, tool, index per step.
        self._history: list[Any] = []
        self._match = [0] * (self._max + 1)  # match[p] for p in 1.._max (match[0] unused)
        self._live = False  # some match[p] > 0

    def observe(self, obs: Observation) -> list[Violation] | None:
        if obs.kind == CONTENTLESS:  # nothing to compare
            return None
        history, digest = self._history, obs.digest
        if not self._live and not has_digest(history, digest, 0, _STRIDE):
            if len(history) >= self._cap:
                del history[:_STRIDE]
            # one field at a time: no tuple built per step (the history is the same flat list)
            history.append(digest)
            history.append(obs.node)
            history.append(obs.kind)
            history.append(obs.tool)
            history.append(obs.index)
            return None
        match, node = self._match, obs.node
        size = len(history) // _STRIDE
        for p in range(1, self._max + 1):
            if p <= size:
                at = (size - p) * _STRIDE
                match[p] = match[p] + 1 if history[at + 1] == node and history[at] == digest else 0
        if len(history) >= self._cap:
            del history[:_STRIDE]
        history += (digest, node, obs.kind, obs.tool, obs.index)
        self._live = any(match)
        fired: list[Violation] | None = None
        for p in self._periods:
            if match[p] < p:
                continue
            if any(match[q] >= q for q in range(1, p)):
                break  # a shorter period explains it (period 1 is a stall/repeat)
            repeats = self._repeats_needed(p)
            if repeats is not None and match[p] == p * (repeats - 1):
                block = history[-p * _STRIDE:]
                fired = [
                    Violation(
                        code=self.code,
                        severity="hard",
                        step=obs.index,
                        node=node,
                        count=repeats,
                        detail={
                            "period": p,
                            "repeats": repeats,
                            "first_step": obs.index - p * repeats + 1,
                            "nodes": block[1::_STRIDE],
                            "digests": [digest_prefix(d) for d in block[::_STRIDE]],
                        },
                    )
                ]
            break
        return fired

    def _repeats_needed(self, period: int) -> int | None:
        """Repetitions a block of this period must show; None when a tool in it is exempt."""
        needed = self._policy.cycle_repeats
        block = self._history[-period * _STRIDE:]
        ceilings = self._ceilings
        for node, kind, tool in zip(block[1::_STRIDE], block[2::_STRIDE], block[3::_STRIDE], strict=True):
            if kind == MESSAGE:
                if ceilings and node in ceilings:  # a poller given room: its own ceiling
                    needed = max(needed, ceilings[node])
                continue
            limits = self._policy.tool_limits(tool) if tool else None
            if tool and limits is None:
                return None
            repeats = limits[0] if limits else self._policy.tool_repeats
            needed = max(needed, repeats)
        return needed

    def finish(self) -> list[Violation] | None:
        return None

    def snapshot(self, pack: Pack) -> Any:
        h = self._history
        history = [
            [pack(h[i + 1]), pack(h[i].hex()), h[i + 2], -1 if h[i + 3] is None else pack(h[i + 3]),
             h[i + 4]]
            for i in range(0, len(h), _STRIDE)
        ]
        return [history, self._match[1:]]

    def restore(self, data: Any, unpack: Unpack) -> None:
        saved, match = data
        history = self._history
        history.clear()
        for node, key, kind, tool, index in saved:
            if len(history) >= self._cap:  # a narrower window than the saved one
                del history[:_STRIDE]
            history += (unhex(unpack(key)), unpack(node), kind, None if tool < 0 else unpack(tool), index)
        for p, value in zip(range(1, self._max + 1), match, strict=False):
            self._match[p] = value
        self._live = any(self._match)
