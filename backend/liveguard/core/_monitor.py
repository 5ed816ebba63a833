"""The Monitor: one incremental rule set for offline scoring and live guarding.

``Monitor.observe(step)`` digests the step once, builds an
:class:`~liveguard.core.rules.base.Observation` and runs every rule on it; it returns
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

Replies and requests
    A reply is judged together with what it answers. A user's input (a message step of
    node ``"user"``, or whose output is a ``HumanMessage`` / ``{"role": "user"}`` dict:
    :func:`liveguard.core.messages.is_user_input`) is the **request**; the digest of every
    later step of the agent (messages, tool-call requests, tool steps) is keyed on the
    request's digest: ``xxh3(request digest + own digest)``. So "Done." to three
    different requests is three different states, while the same request answered the
    same way is the same state again. A failed tool call (an error, or ``"retryable":
    false``) is not keyed: the same call failing the same way is the same state whatever
    was asked. A step that **carries its own input**, a message
    step with ``args`` and no ``tool`` (a ``Send`` payload, a Functional API task's
    arguments), is keyed on its input instead: two parallel ``Send``s whose different
    inputs give the same output are different states. A run with neither keeps its
    digests exactly as before. The user's own steps are requests, not replies: the
    stall and repeat rules skip them (a user who says "yes" to three questions does not
    loop); the cycle rule and the revisit rule see them.

Volatile text
    Digests mask ``Policy.volatile`` (times, elapsed durations, ids inside text; see
    :data:`liveguard.core.fingerprint.VOLATILE_PATTERNS`) in the canonical bytes, so "visited
    9 seconds ago" and "visited 14 seconds ago" are one state; text without such a
    fragment digests exactly as before.

Thread state
    ``snapshot()`` returns the Monitor's bounded state as a small, versioned, JSON-able
    dict (strings interned once; every rule's windows as lists of ints);
    ``Monitor.restore(snapshot, policy, allow_set)`` rebuilds a Monitor that goes on
    exactly as the original would have. Its size is bounded by the policy's windows, not
    the run's length. ``new_run()`` resets the run-level counters (``run_steps``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final

from xxhash import xxh3_128_digest

from liveguard.core.fingerprint import _DEFAULT as _DEFAULT_FINGERPRINTER
from liveguard.core.fingerprint import DEFAULT_IGNORE_KEYS, DEFAULT_VOLATILE, Fingerprinter, _maybe_json
from liveguard.core.messages import content, is_error_text, is_user_turn, tool_call_name, tool_calls
from liveguard.core.model import Step, Violation
from liveguard.core.policy import Policy
from liveguard.core.rules.base import (
    CONTENTLESS,
    MESSAGE,
    OBSERVATION_KINDS,
    REQUEST,
    TOOL,
    Observation,
    Rule,
    unhex,
)
from liveguard.core.rules.build import build
from liveguard.errors import FingerprintError, SnapshotError

if TYPE_CHECKING:
    from liveguard.core.allowset import AllowSet

__all__ = ["NEW_RUN", "SNAPSHOT_VERSION", "Monitor", "check_trajectory", "pack_event", "unpack_event"]

SNAPSHOT_VERSION = 1
"""Format version of :meth:`Monitor.snapshot`; ``restore`` rejects any other."""

_xxh3_raw: Final[Callable[[bytes], bytes]] = xxh3_128_digest
"""xxh3-128, raw."""



class Monitor:
    """Watches one run, step by step. Not thread-safe: use one Monitor per run."""

    __slots__ = ("_by_kind", "_digest", "_expect", "_finished", "_index", "_prefetch",
                 "_request", "_rules", "_turn", "allow_set", "journal", "policy")

    def __init__(self, policy: Policy | None = None, allow_set: AllowSet | None = None) -> None:
        policy = Policy() if policy is None else policy  # the defaults; never the environment
        # The allow-set's limits and tool overrides refine the policy for this graph.
        self.policy = allow_set.apply(policy) if allow_set is not None else policy
        self.allow_set = allow_set
        # the raw digest of a payload (Fingerprinter.raw_digest, volatile text masked)
        self._digest = _fingerprinter(self.policy.ignore_keys, self.policy.volatile).raw_digest
        self._request = b""  # the digest of the user's last input (b"": none yet)
        self._rules = rules = tuple(build(self.policy, allow_set))
        # Per kind, the rules that read it (rules declare ``kinds``; see rules.base.OBSERVATION_KINDS), and
        # the rules that can prepare a whole recorded run at once (the semantic layer's batching).
        self._by_kind, self._prefetch = _dispatch(rules)
        self._index = 0
        self._finished = False
        self._expect = 0  # tool steps the open parallel turn still waits for (0: none open)
        self._turn: list[Observation] = _NO_TURN  # the open turn's held tool steps
        self.journal: list[Any] | None = None
        """When a list: each observation (and each :meth:`new_run`, as ``"r"``) is appended, in
        order, for a thread record that keeps each step's own contribution (:meth:`replay`)."""

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
        if self.journal is not None:
            self.journal.append(obs)
        return self._run([obs])

    def observe_all(self, steps: Iterable[Step | Mapping[str, Any]]) -> list[Violation]:
        """Feed a recorded run: every digest first, one batched prefetch, then the rules.

        The same rules and the same violations as ``observe`` step by step; only the
        semantic layer's embeddings are computed in batches instead of one at a time.
        """
        observations: list[Observation] = []
        observation = self._observation
        index = self._index
        for item in steps:
            step = item if isinstance(item, Step) else Step.model_validate(item)
            try:
                observations.append(observation(step, index))
            except FingerprintError as exc:
                raise exc.at(f".steps[{index}]") from None
            index = self._index = index + 1
        for prefetch in self._prefetch:
            prefetch(observations)
        return self._run(observations)

    def _run(self, observations: list[Observation]) -> list[Violation]:
        """Hand observations to the rules of their kind, in order (holding parallel turns)."""
        found: list[Violation] = []
        by_kind = self._by_kind
        for obs in observations:
            kind = obs.kind
            if kind == TOOL and self._expect > 1:
                turn = self._turn
                if turn is _NO_TURN:
                    turn = self._turn = [obs]
                else:
                    turn.append(obs)
                if len(turn) >= self._expect:
                    found += self._release()
                continue
            if kind == REQUEST:  # a new model turn closes an open one short
                if self._turn:
                    found += self._release()
                self._expect = obs.calls
            for rule in by_kind[kind]:
                hits = rule.observe(obs)
                if hits:
                    found += hits
        return found

    def _release(self) -> list[Violation]:
        """Hand a parallel turn's tool steps to the rules, in canonical order."""
        turn, self._turn, self._expect = self._turn, _NO_TURN, 0
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
        if self.journal is not None:
            self.journal.append(NEW_RUN)

    # -- a step's own contribution -------------------------------------------------------------
    @property
    def replayable(self) -> bool:
        """Whether :meth:`replay` of packed observations rebuilds this Monitor exactly: every
        rule reads only what :func:`pack_event` keeps (not the step text the step-text rule
        scans, nor the content the semantic layer embeds)."""
        return not (self.policy.scan_text or self.policy.semantic)

    def replay(self, events: Iterable[Any]) -> None:
        """Go on from here with journaled events (:func:`pack_event`), as :meth:`observe` and
        :meth:`new_run` did (their violations were acted on when they happened)."""
        journal, self.journal = self.journal, None
        try:
            for event in events:
                if event == NEW_RUN:
                    self.new_run()
                    continue
                obs = unpack_event(event, self._index)
                self._index += 1
                if obs.user:
                    self._request = obs.digest
                self._run([obs])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotError(f"malformed event ({type(exc).__name__})") from None
        finally:
            self.journal = journal

    # -- thread state -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The Monitor's bounded state as plain JSON-able data (see the module docstring)."""
        ids: dict[str, int] = {}

        def pack(text: str) -> int:
            return ids.setdefault(text, len(ids))  # insertion order is the table's order

        # every rule with snapshot/restore (the semantic layer's too) is saved; others start afresh
        rules = {type(rule).__name__: rule.snapshot(pack)
                 for rule in self._rules if hasattr(rule, "snapshot")}
        turn = [obs.pack(pack) for obs in self._turn]
        state = {"v": SNAPSHOT_VERSION, "n": self._index, "e": self._expect, "t": turn,
                 "r": rules, "s": list(ids)}
        if self._request:
            state["q"] = self._request.hex()
        return state

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
            self._turn = [Observation.unpack(item, unpack) for item in snapshot["t"]] or _NO_TURN
            self._request = unhex(str(snapshot.get("q", "")))  # absent before request keying
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
        return self._observation(step, self._index, advance=False).key

    def _observation(self, step: Step, index: int, advance: bool = True) -> Observation:
        """The step's observation: its kind and its own digest, keyed on what it answers
        (module docstring). Each of the step's fields is read once."""
        # A Step keeps its fields in its ``__dict__`` (pydantic); read there, each costs a dict
        # look-up instead of an attribute look-up through the model's ``__getattr__`` hook.
        fields: dict[str, Any] = step.__dict__
        node: str = fields["node"]
        tool: str | None = fields.get("tool")
        if tool is not None:
            args = fields.get("args")
            if isinstance(args, str):
                args = _maybe_json(args)
            result, error = fields.get("result"), fields.get("error")
            nonretryable = _nonretryable(result) or _nonretryable(error)
            obs = Observation(index, node, TOOL, self._digest((tool, args, result, error)), tool=tool,
                              nonretryable=nonretryable, step=step,
                              failed=error is not None or is_error_text(result))
            if obs.failed:
                # An identical call with an identical failure is the same state whatever was asked:
                # it counts across requests (a successful call is keyed on the request it serves).
                return obs
            context = self._request  # a tool step never carries its input: it is keyed on the request
        else:
            output = fields.get("output")
            calls = None if output is None else tool_calls(output)
            if calls:
                obs = Observation(index, node, REQUEST, self._digest(calls), tool=tool_call_name(calls[0]),
                                  step=step, calls=len(calls))
            else:
                summary, error = fields.get("summary"), fields.get("error")
                payload: Any = None
                if summary is not None:
                    payload = summary
                elif output is not None:
                    payload = output
                elif error is None:
                    return Observation(index, node, CONTENTLESS, b"", step=step)
                if error is None:
                    obs = Observation(index, node, MESSAGE, self._digest(payload), content=payload, step=step)
                else:
                    obs = Observation(index, node, MESSAGE, self._digest((payload, error)), step=step)
                if is_user_turn(node, output):
                    obs.user = True
                    if advance:
                        self._request = obs.digest
                    return obs
            carried = fields.get("args")  # a step that carries its input is keyed on it
            context = self._request if carried is None else self._digest(carried)
        if context:
            obs.digest = _xxh3_raw(context + obs.digest)
        return obs

_FINGERPRINTERS: dict[tuple[frozenset[str], tuple[str, ...]], Fingerprinter] = {}


def _fingerprinter(ignore: frozenset[str], volatile: tuple[str, ...]) -> Fingerprinter:
    """The (cached) Fingerprinter of a policy's ignore keys and volatile patterns."""
    if not volatile and (ignore is DEFAULT_IGNORE_KEYS or ignore == DEFAULT_IGNORE_KEYS):
        return _DEFAULT_FINGERPRINTER
    key = (ignore, volatile)
    found = _FINGERPRINTERS.get(key)
    if found is None:
        found = Fingerprinter(ignore, volatile=volatile)
        if len(_FINGERPRINTERS) < 64:
            _FINGERPRINTERS[key] = found
    return found


_FINGERPRINTERS[(DEFAULT_IGNORE_KEYS, DEFAULT_VOLATILE)] = Fingerprinter(volatile=DEFAULT_VOLATILE)

_Pick = Callable[[tuple[Rule, ...]], tuple[Rule, ...]]
_Layout = tuple[tuple[_Pick, ...], tuple[int, int, int, int], tuple[int, ...]]
_LAYOUTS: dict[tuple[type, ...], _Layout] = {}
"""Per sequence of rule classes: how to pick the rules of each kind, and those with ``prefetch``."""


def _dispatch(rules: tuple[Rule, ...]) -> tuple[tuple[tuple[Rule, ...], ...], tuple[Any, ...]]:
    """``(rules per kind, prefetch methods)`` for a Monitor's rules, in the rules' order.

    The layout depends only on the rules' classes (``kinds`` is declared per class, and
    ``prefetch`` is a method), so it is computed once per sequence of classes, read from the
    first Monitor's rules. Kinds read by the same rules share one tuple (less memory per Monitor).
    """
    classes = tuple(map(type, rules))
    layout = _LAYOUTS.get(classes)
    if layout is None:
        layout = _layout(rules)
        if len(_LAYOUTS) < 256:  # a handful in practice (one per policy/allow-set shape)
            _LAYOUTS[classes] = layout
    picks, (message, tool, request, contentless), prefetch = layout
    chosen = [pick(rules) for pick in picks]
    by_kind = (chosen[message], chosen[tool], chosen[request], chosen[contentless])
    found = [rules[i].prefetch for i in prefetch]  # type: ignore[attr-defined]
    return by_kind, tuple(found)


def _layout(rules: tuple[Rule, ...]) -> _Layout:
    distinct: list[list[int]] = []
    order: list[int] = []
    for kind in OBSERVATION_KINDS:  # OBSERVATION_KINDS is (0, 1, 2, 3): a kind is its own position
        indices = [i for i, rule in enumerate(rules) if kind in getattr(rule, "kinds", OBSERVATION_KINDS)]
        if indices not in distinct:
            distinct.append(indices)
        order.append(distinct.index(indices))
    message, tool, request, contentless = order
    prefetch = tuple(i for i, rule in enumerate(rules) if hasattr(rule, "prefetch"))
    return tuple(map(_picker, distinct)), (message, tool, request, contentless), prefetch


def _picker(indices: list[int]) -> _Pick:
    """A function that picks ``indices`` out of a tuple, as a tuple."""
    if len(indices) > 1:
        return itemgetter(*indices)
    if indices:
        i = indices[0]
        return lambda rules: (rules[i],)
    return lambda rules: ()


_NO_TURN: Final[list[Any]] = []
"""The Monitor's ``_turn`` while no parallel turn is open (shared and never appended to:
a Monitor allocates its own list only when a turn opens)."""


def _canonical(obs: Observation) -> tuple[str, bytes]:
    # The raw digest sorts as its fixed-width, lower-case hex text does.
    return (obs.tool or "", obs.digest)


def _nonretryable(value: Any) -> bool:
    """True when a result or error says ``"retryable": false``: a dict, JSON text, or a
    tool message (dict or object) whose content says so."""
    if value is None:
        return False
    if isinstance(value, str):
        # Only JSON object text can say so (``_maybe_json`` parses text whose first character
        # past leading white space is "{" or "["): other text is not searched at all.
        head = value[:1]
        if head != "{" and (not head.isspace() or value.lstrip()[:1] != "{"):
            return False
        if "retryable" not in value:
            return False
        parsed = _maybe_json(value)
        return isinstance(parsed, Mapping) and parsed.get("retryable") is False
    if (type(value) is dict or isinstance(value, Mapping)) and "retryable" in value:
        return value["retryable"] is False
    inner = content(value)  # an OpenAI-format or LangChain tool message
    return inner is not None and inner is not value and _nonretryable(inner)


def check_trajectory(
    steps: Iterable[Step | Mapping[str, Any]],
    policy: Policy | None = None,
    allow_set: AllowSet | None = None,
) -> list[Violation]:
    """Every violation of a whole run: observe each step, then finish."""
    monitor = Monitor(policy, allow_set)
    found = monitor.observe_all(steps)  # the same violations as observe() step by step
    found += monitor.finish()
    return found


NEW_RUN: Final = "r"
"""A journal's mark of :meth:`Monitor.new_run`."""


def pack_event(event: Observation | str) -> Any:
    """A journaled observation as plain JSON data: ``[node, kind, digest hex, tool, flags, calls]``
    (flags: 1 non-retryable, 2 failed, 4 a user's input); :data:`NEW_RUN` as itself."""
    if isinstance(event, str):
        return event
    flags = (1 if event.nonretryable else 0) | (2 if event.failed else 0) | (4 if event.user else 0)
    return [event.node, event.kind, event.digest.hex(), event.tool, flags, event.calls]


def unpack_event(data: Any, index: int) -> Observation:
    """The observation :func:`pack_event` packed, at step ``index``."""
    node, kind, key, tool, flags, calls = data
    flags = int(flags)
    obs = Observation(index, str(node), int(kind), unhex(str(key)), tool=None if tool is None else str(tool),
                      nonretryable=bool(flags & 1), failed=bool(flags & 2), calls=int(calls))
    obs.user = bool(flags & 4)
    return obs
