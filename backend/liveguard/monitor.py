"""The Monitor: one incremental rule set for offline scoring and live guarding.

``Monitor.observe(step)`` digests the step once, builds an
:class:`~liveguard.rules.base.Observation` and runs every rule on it; it returns
the violations this step raised. Each rule keeps a bounded window, so memory is
bounded by the policy whatever the run's length, and the cost per step is
amortised O(1). ``check_trajectory`` is observe-all plus ``finish``.

Parallel tool turns
    A model step whose output requests *n* > 1 tool calls opens a turn of *n* tool steps.
    The Monitor holds those tool steps until the turn is complete (or the next tool-call
    request, or ``finish``, closes it short; message and contentless steps in between,
    such as hook nodes, are observed as usual), then hands them to the rules sorted by
    (tool, digest), giving them the turn's step indices in that order. So the rules never
    see the order in which parallel calls happened to finish. A tool step with no request
    before it is a turn of one.

Thread state
    ``snapshot()`` returns the Monitor's bounded state as a small, versioned, JSON-able
    dict (strings interned once; every rule's windows as lists of ints);
    ``Monitor.restore(snapshot, policy, allow_set)`` rebuilds a Monitor that goes on
    exactly as the original would have. Its size is bounded by the policy's windows, not
    the run's length. ``new_run()`` resets the run-level counters (``run_steps``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from liveguard.errors import FingerprintError, SnapshotError
from liveguard.fingerprint import _DEFAULT as _DEFAULT_FINGERPRINTER
from liveguard.fingerprint import DEFAULT_IGNORE_KEYS, Fingerprinter, _maybe_json
from liveguard.messages import tool_call_name, tool_calls
from liveguard.model import Step, Violation
from liveguard.policy import Policy
from liveguard.rules.base import CONTENTLESS, KINDS, MESSAGE, REQUEST, TOOL, Observation
from liveguard.rules.build import build

if TYPE_CHECKING:
    from liveguard.allowset import AllowSet

__all__ = ["SNAPSHOT_VERSION", "Monitor", "check_trajectory", "tool_calls_of"]

SNAPSHOT_VERSION = 1
"""Format version of :meth:`Monitor.snapshot`; ``restore`` rejects any other."""

tool_calls_of = tool_calls
"""Kept for importers of ``liveguard.monitor.tool_calls_of``: :func:`liveguard.messages.tool_calls`."""


class Monitor:
    """Watches one run, step by step. Not thread-safe: use one Monitor per run."""

    def __init__(self, policy: Policy | None = None, allow_set: AllowSet | None = None) -> None:
        policy = Policy.from_env() if policy is None else policy
        # The allow-set's limits and tool overrides refine the policy for this graph.
        self.policy = allow_set.apply(policy) if allow_set is not None else policy
        self.allow_set = allow_set
        self._fp = (
            _DEFAULT_FINGERPRINTER
            if self.policy.ignore_keys == DEFAULT_IGNORE_KEYS
            else Fingerprinter(self.policy.ignore_keys)
        )
        self._rules = tuple(build(self.policy, allow_set))
        # Per kind, the rules that read it (rules declare ``kinds``; see rules.base.KINDS).
        self._by_kind = tuple(
            tuple(rule for rule in self._rules if kind in getattr(rule, "kinds", KINDS))
            for kind in range(len(KINDS))
        )
        # Rules that can prepare a whole recorded run at once (the semantic layer's batching).
        self._prefetch = tuple(rule.prefetch for rule in self._rules if hasattr(rule, "prefetch"))
        self._index = 0
        self._finished = False
        self._expect = 0  # tool steps the open parallel turn still waits for (0: none open)
        self._turn: list[Observation] = []

    @property
    def steps_seen(self) -> int:
        return self._index

    def observe(self, step: Step | Mapping[str, Any]) -> list[Violation]:
        """Feed one step; return the violations it raised (usually none)."""
        if not isinstance(step, Step):
            step = Step.model_validate(step)
        index = self._index
        try:
            obs = self._observation(step, index)
        except FingerprintError as exc:
            raise exc.at(f".steps[{index}]") from None
        self._index = index + 1
        return self._run(obs)

    def observe_all(self, steps: Iterable[Step | Mapping[str, Any]]) -> list[Violation]:
        """Feed a recorded run: every digest first, one batched prefetch, then the rules.

        The same rules and the same violations as ``observe`` step by step; only the
        semantic layer's embeddings are computed in batches instead of one at a time.
        """
        observations: list[Observation] = []
        for item in steps:
            step = item if isinstance(item, Step) else Step.model_validate(item)
            index = self._index
            try:
                observations.append(self._observation(step, index))
            except FingerprintError as exc:
                raise exc.at(f".steps[{index}]") from None
            self._index = index + 1
        for prefetch in self._prefetch:
            prefetch(observations)
        found: list[Violation] = []
        for obs in observations:
            found += self._run(obs)
        return found

    def _run(self, obs: Observation) -> list[Violation]:
        kind = obs.kind
        if kind == TOOL and self._expect > 1:
            turn = self._turn
            turn.append(obs)
            if len(turn) < self._expect:
                return []
            return self._release()
        found: list[Violation] = []
        if kind == REQUEST:  # a new model turn closes an open one short
            if self._turn:
                found = self._release()
            self._expect = obs.calls
        for rule in self._by_kind[kind]:
            hits = rule.observe(obs)
            if hits:
                found += hits
        return found

    def _release(self) -> list[Violation]:
        """Hand a parallel turn's tool steps to the rules, in canonical order."""
        turn, self._turn, self._expect = self._turn, [], 0
        indices = sorted(obs.index for obs in turn)
        turn.sort(key=_canonical)
        for index, obs in zip(indices, turn, strict=True):
            obs.index = index
            obs.last = False
        turn[-1].last = True
        found: list[Violation] = []
        rules = self._by_kind[TOOL]
        for obs in turn:
            for rule in rules:
                hits = rule.observe(obs)
                if hits:
                    found += hits
        return found

    def new_run(self) -> None:
        """A new invocation on the same thread: reset run-level counters only."""
        for rule in self._rules:
            reset = getattr(rule, "new_run", None)
            if reset is not None:
                reset()
        self._finished = False

    # -- thread state -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The Monitor's bounded state as plain JSON-able data (see the module docstring)."""
        ids: dict[str, int] = {}

        def pack(text: str) -> int:
            return ids.setdefault(text, len(ids))  # insertion order is the table's order

        # rules without snapshot/restore (the semantic layer's embeddings) start afresh
        rules = {type(rule).__name__: rule.snapshot(pack)
                 for rule in self._rules if hasattr(rule, "snapshot")}
        turn = [obs.pack(pack) for obs in self._turn]
        return {"v": SNAPSHOT_VERSION, "n": self._index, "e": self._expect, "t": turn,
                "r": rules, "s": list(ids)}

    @classmethod
    def restore(
        cls,
        snapshot: Mapping[str, Any],
        policy: Policy | None = None,
        allow_set: AllowSet | None = None,
    ) -> Monitor:
        """A Monitor that continues from ``snapshot`` (a rule the policy lacks starts empty).

        Raises :class:`~liveguard.errors.SnapshotError` for another version or a malformed
        value, naming what is wrong (never its content).
        """
        monitor = cls(policy, allow_set)
        monitor.load(snapshot)
        return monitor

    def load(self, snapshot: Mapping[str, Any]) -> None:
        """Replace this Monitor's state with ``snapshot``'s (see :meth:`restore`)."""
        if not isinstance(snapshot, Mapping):
            raise SnapshotError(f"snapshot must be a mapping, got {type(snapshot).__name__}")
        version = snapshot.get("v")
        if version != SNAPSHOT_VERSION:
            raise SnapshotError(f"snapshot version {version!r}; this liveguard reads {SNAPSHOT_VERSION}")
        try:
            strings: list[str] = [str(text) for text in snapshot["s"]]

            def unpack(i: int) -> str:
                return strings[i]

            saved = snapshot["r"]
            for rule in self._rules:
                data = saved.get(type(rule).__name__)
                restore = getattr(rule, "restore", None)
                if data is not None and restore is not None:
                    restore(data, unpack)
            self._index = int(snapshot["n"])
            self._expect = int(snapshot["e"])
            self._turn = [Observation.unpack(item, unpack) for item in snapshot["t"]]
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotError(f"malformed snapshot ({type(exc).__name__})") from None
        self._finished = False

    def finish(self) -> list[Violation]:
        """End of run: violations only the whole run can show (e.g. a dead end)."""
        if self._finished:
            return []
        self._finished = True
        found: list[Violation] = self._release() if self._turn else []
        for rule in self._rules:
            hits = rule.finish()
            if hits:
                found += hits
        return found

    def digest(self, step: Step) -> str:
        """The digest the rules compare for ``step`` (a violation's ``digest`` prefixes it)."""
        return self._observation(step, self._index).key

    def _observation(self, step: Step, index: int) -> Observation:
        fp = self._fp
        if step.tool is not None:
            args = step.args
            if isinstance(args, str):
                args = _maybe_json(args)
            key = fp((step.tool, args, step.result, step.error))
            nonretryable = _nonretryable(step.result) or _nonretryable(step.error)
            return Observation(index, step.node, TOOL, key, step.tool, nonretryable, None, step)
        output = step.output
        calls = tool_calls(output) if output is not None else None
        if calls:
            name = tool_call_name(calls[0])
            return Observation(index, step.node, REQUEST, fp(calls), name, False, None, step,
                               calls=len(calls))
        if step.summary is not None:
            content: Any = step.summary
        elif output is not None:
            content = output
        elif step.error is None:
            return Observation(index, step.node, CONTENTLESS, "", None, False, None, step)
        else:
            content = None
        if step.error is None:
            return Observation(index, step.node, MESSAGE, fp(content), None, False, content, step)
        return Observation(index, step.node, MESSAGE, fp((content, step.error)), None, False, None, step)


def _canonical(obs: Observation) -> tuple[str, str]:
    return (obs.tool or "", obs.key)


def _nonretryable(value: Any) -> bool:
    """True when a result or error says ``"retryable": false`` (dict, JSON text, or message)."""
    if value is None:
        return False
    if isinstance(value, Mapping):
        if "retryable" in value:
            return value["retryable"] is False
        content = value.get("content")  # an OpenAI-format tool message
        return content is not None and content is not value and _nonretryable(content)
    if isinstance(value, str):
        if "retryable" not in value:
            return False
        parsed = _maybe_json(value)
        return isinstance(parsed, Mapping) and parsed.get("retryable") is False
    content = getattr(value, "content", None)
    return content is not None and content is not value and _nonretryable(content)


def check_trajectory(
    steps: Iterable[Step | Mapping[str, Any]],
    policy: Policy | None = None,
    allow_set: AllowSet | None = None,
) -> list[Violation]:
    """Every violation of a whole run: observe each step, then finish."""
    monitor = Monitor(policy, allow_set)
    if monitor._prefetch:  # the semantic layer: embed the run's unsettled steps in batches
        return monitor.observe_all(steps) + monitor.finish()
    found: list[Violation] = []
    for step in steps:
        found += monitor.observe(step)
    found += monitor.finish()
    return found
