"""The thread guard: one framework-free, sans-IO core for both live guards.

``guard(graph)`` (:mod:`liveguard.integrations.langgraph`), ``LivenessMiddleware``
(:mod:`liveguard.integrations.langchain`) and ``liveguard threads``
(:mod:`liveguard.live.threads`) are drivers of this module: they read and write bytes
(checkpoints, agent state), this module decides. It does no I/O and imports no
framework. What it owns:

The record (one schema)
    A thread's liveness is two values:

    * the **stop** (:func:`read_stop` / :func:`stop_value`): ``{"stop": <violation as a
      dict> | None, "held": bool}``. It is thread-wide and written only when the guard
      stops (or a person clears it), never with "not stopped" by a running call, so an
      overlapping call cannot erase a stop.
    * the **windows** (:func:`read_windows` / :func:`windows_value`): ``{"m": <Monitor
      snapshot>, "v": RECORD_VERSION}``, saved with the checkpoints the graph writes
      (``guard()``) or in the agent state (the middleware), so they follow the checkpoint
      lineage: a call continues from the windows saved with the checkpoint it resumes
      from, and a replay or a fork sees its own history only.
    * a **step's own contribution** (:func:`delta_value`): ``{"v": RECORD_VERSION, "p":
      <where the record before it is>, "d": <deltas since the last windows value>, "o":
      [<packed observations>]}``, what ``guard()`` saves with most checkpoints instead of
      the whole windows (:data:`KEYFRAME_EVERY`): :func:`read_chain` rebuilds the windows
      from the nearest full value and the contributions after it, replayed in order
      (:meth:`~liveguard.core._monitor.Monitor.replay`).

A damaged record
    A stop that does not validate, a record that is a list or ``None``: the guard never
    forgets a stop because its record is damaged, and never raises pydantic's error at
    the agent. :func:`read_stop` logs ``code=guard_error`` and keeps the thread stopped
    with :data:`DAMAGED` (code ``guard_error``, ``detail={"reason": "damaged_record"}``)
    until a person clears it. Damaged windows are logged and start afresh (the stop is
    what must survive; a window only delays detection).

The user's turn
    :func:`input_step` turns a call's new input into ``Step(node=INPUT_NODE, ...)`` so the
    rules see a new request between two replies: the same reply to a different request
    is progress, the same request answered the same way is a repeat.

A person's decision (``exit_behavior="interrupt"``)
    :func:`hold_request` builds the hold's interrupt value (a LangChain ``HITLRequest``,
    :func:`liveguard.live.hitl.liveness_request`) from the stop; :func:`decide_hold` reads
    the answer (:func:`liveguard.live.hitl.parse_resume`: a malformed one is a
    :class:`~liveguard.live.hitl.InvalidDecision`, re-asked, never a reason to stand down);
    :func:`audit_entry` is what the thread record keeps of it: the decision type, the
    stop's code and step, who (``by``), when, and digests of any note or message, never
    their text. :func:`audit_value` bounds the list (:data:`AUDIT_SIZE`).

The session (the one live core)
    :class:`ThreadSession` is one thread's liveness for one call, for both drivers: it is
    built from the record saved for the checkpoint the call resumes from
    (:meth:`ThreadSession.load`), observes steps and decides (:meth:`~ThreadSession.check`,
    :meth:`~ThreadSession.finish`), answers a call on a stopped thread
    (:meth:`~ThreadSession.on_saved_stop`), takes a person's decision on a hold
    (:meth:`~ThreadSession.answer`), clears (:meth:`~ThreadSession.clear`) and gives back
    what to save (:meth:`~ThreadSession.windows_value`, :meth:`~ThreadSession.stop_value`).
    Its one stand-down path (:meth:`~ThreadSession.stand_down`): the guard's own failure
    is logged by code and location, and the session observes nothing more for that call.
    :class:`LiveSettings` holds the settings both drivers take (policy, allow-set, exit
    behaviour, severity, ceiling), validated once by :func:`live_settings`.

The decision
    :class:`Decider` applies the exit behaviour to what the Monitor found: which
    violation stops the run (``"warn"`` never; ``"continue"`` at its ``ceiling``-th
    violation; the others at the first), and logs each one by code, step, node, count and
    digest prefix, never text.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from liveguard.core._monitor import NEW_RUN, Monitor, pack_event
from liveguard.core.model import Step, Violation
from liveguard.errors import LivenessError
from liveguard.live.hitl import (
    HoldRequest,
    InvalidDecision,
    ReviewDecision,
    liveness_request,
    parse_resume,
)

if TYPE_CHECKING:
    from liveguard.core.allowset import AllowSet
    from liveguard.core.policy import Policy

__all__ = [
    "AUDIT_SIZE",
    "DAMAGED",
    "EXIT_BEHAVIORS",
    "GUARD_ERROR",
    "INPUT_NODE",
    "KEYFRAME_EVERY",
    "RECORD_VERSION",
    "Decider",
    "ExitBehavior",
    "LiveSettings",
    "SavedStopAction",
    "SeverityFloor",
    "ThreadSession",
    "audit_entry",
    "audit_value",
    "chain_steps",
    "decide_hold",
    "delta_value",
    "hold_request",
    "input_step",
    "is_delta",
    "live_settings",
    "log_guard_failure",
    "log_violation",
    "read_audit",
    "read_chain",
    "read_hold",
    "read_stop",
    "read_windows",
    "stop_value",
    "windows_value",
]

ExitBehavior = Literal["error", "end", "continue", "interrupt", "warn"]
EXIT_BEHAVIORS: Final = ("error", "end", "continue", "interrupt", "warn")
SeverityFloor = Literal["hard", "soft"]

GUARD_ERROR: Final = "guard_error"
"""Log code of a guard's own failure (the guard stands down; the agent runs on)."""

INPUT_NODE: Final = "__input__"
"""The node name of the user's input step (a message step: the new request's text)."""

RECORD_VERSION: Final = 3
"""Version of the windows value (``v``); versions 1 and 2 (full windows only) still read."""

KEYFRAME_EVERY: Final = 16
"""A step's own contributions between two full windows values along a lineage (the most a
load replays; the whole windows cost about 1.5-3 KB, a contribution about 100 B)."""

DAMAGED: Final = Violation(code=GUARD_ERROR, severity="hard", step=0, node="__liveguard__",
                           count=0, detail={"reason": "damaged_record"})
"""The stop a damaged stop record reads as: the thread stays stopped until it is cleared."""

log = logging.getLogger("liveguard.guard")


# -- logging (codes, counts, digests, step indices; never step text) ------------------------------
def log_guard_failure(exc: BaseException, steps_seen: int = 0) -> None:
    """One WARNING line for a guard's own failure: exception type and code location only.

    Never the exception's message: it may quote the payload (a fingerprint path, a value).
    """
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
    log.warning(
        "liveguard: code=%s type=%s at=%s after %d steps; guard disabled for the rest "
        "of this run, the agent continues",
        GUARD_ERROR, type(exc).__name__, where, steps_seen,
    )


def log_violation(violation: Violation, outcome: str) -> None:
    """One WARNING line: code, step, node, count and digest prefix; never step text."""
    detail = violation.detail
    digest = detail.get("digest")
    if digest is None and isinstance(detail.get("digests"), list):
        digest = ",".join(str(d) for d in detail["digests"])
    log.warning(
        "liveguard: %s at step %d (node=%s, count=%d, digest=%s); %s",
        violation.code, violation.step, violation.node, violation.count, digest or "-", outcome,
    )


def _damaged(what: str) -> None:
    log.warning("liveguard: code=%s reason=damaged_record part=%s; the thread stays stopped "
                "until it is cleared (liveguard.clear / liveguard threads clear)", GUARD_ERROR, what)


# -- the record ------------------------------------------------------------------------------------
def read_stop(raw: Any, *, present: bool = True) -> tuple[Violation | None, bool]:
    """(the thread's stop, held) from a saved stop value.

    ``present=False``: nothing was saved (a thread never stopped). A saved value that is
    not a mapping, or whose ``stop`` does not validate, reads as :data:`DAMAGED` (logged):
    a damaged record never unblocks a thread.
    """
    if not present:
        return None, False
    if not isinstance(raw, Mapping):
        _damaged(type(raw).__name__)
        return DAMAGED, False
    stop = raw.get("stop")
    held = raw.get("held")
    if stop is None:
        return None, False
    if isinstance(stop, Violation):
        return stop, held is True
    try:
        return Violation.model_validate(stop), held is True
    except Exception:  # pydantic's ValidationError, a TypeError on a weird payload
        _damaged("stop")
        return DAMAGED, False


def stop_value(stop: Violation | None, *, held: bool = False, hold: Mapping[str, Any] | None = None,
               audit: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The saved form of a stop (``None``: cleared).

    ``hold`` (only while ``held``): where the pending interrupt is (its id, and the
    checkpoint and task it is written on) and the last answer's error; ``audit``: the
    decisions taken on this thread (:func:`audit_entry`), kept across stops and clears.
    """
    value: dict[str, Any] = {"stop": None if stop is None else stop.model_dump(mode="json"),
                             "held": bool(held and stop is not None)}
    if value["held"] and hold is not None:
        value["hold"] = dict(hold)
    if audit:
        value["audit"] = audit_value(audit)
    return value


def read_hold(raw: Any) -> dict[str, Any]:
    """The ``hold`` part of a saved stop value (empty when there is none)."""
    hold = raw.get("hold") if isinstance(raw, Mapping) else None
    return dict(hold) if isinstance(hold, Mapping) else {}


def read_audit(raw: Any) -> list[dict[str, Any]]:
    """The audit list of a saved value (a damaged one reads as empty)."""
    audit = raw.get("audit") if isinstance(raw, Mapping) else None
    return [dict(e) for e in audit if isinstance(e, Mapping)] if isinstance(audit, list) else []


def read_windows(raw: Any, policy: Policy, allow_set: AllowSet | None) -> Monitor | None:
    """The Monitor saved in a windows value, or ``None`` (nothing saved, or damaged: logged)."""
    if raw is None:
        return None
    snapshot = raw.get("m") if isinstance(raw, Mapping) else None
    if not snapshot:
        if not isinstance(raw, Mapping):
            _damaged("windows")
        return None
    try:
        return Monitor.restore(snapshot, policy, allow_set)
    except Exception as exc:  # a guard failure never kills the graph: start afresh
        log_guard_failure(exc)
        return None


def windows_value(monitor: Monitor | None) -> dict[str, Any]:
    """The saved form of a Monitor's windows."""
    return {"v": RECORD_VERSION, "m": None if monitor is None else monitor.snapshot()}


def delta_value(parent: Sequence[str], events: Sequence[Any], depth: int) -> dict[str, Any]:
    """The saved form of a step's own contribution: the journaled ``events`` (packed) after the
    record at ``parent`` (``[where, id]``), ``depth`` contributions after a full windows value."""
    return {"v": RECORD_VERSION, "p": list(parent), "d": depth, "o": [pack_event(e) for e in events]}


def is_delta(raw: Any) -> bool:
    """Whether a saved record is a step's own contribution (else: whole windows)."""
    return isinstance(raw, Mapping) and "p" in raw and "m" not in raw


def read_chain(records: Sequence[Any], policy: Policy, allow_set: AllowSet | None) -> Monitor | None:
    """The Monitor a chain of records gives: whole windows first, then contributions, oldest first.

    ``None`` when nothing was saved; a damaged chain is logged and starts afresh.
    """
    if not records:
        return None
    base, deltas = records[0], records[1:]
    monitor = read_windows(base, policy, allow_set)
    if not deltas:
        return monitor
    try:
        if monitor is None:
            monitor = Monitor(policy, allow_set)
        for delta in deltas:
            monitor.replay(delta["o"])
    except Exception as exc:  # a guard failure never kills the graph: start afresh
        log_guard_failure(exc)
        return None
    return monitor


def chain_steps(records: Sequence[Any]) -> int:
    """Steps a chain of records has seen (codes and counts only; nothing is restored)."""
    if not records:
        return 0
    base = records[0]
    snapshot = base.get("m") if isinstance(base, Mapping) else None
    steps = snapshot.get("n", 0) if isinstance(snapshot, Mapping) else 0
    steps = steps if isinstance(steps, int) else 0
    for delta in records[1:]:
        events = delta.get("o") if isinstance(delta, Mapping) else None
        steps += sum(1 for e in events if e != NEW_RUN) if isinstance(events, list) else 0
    return steps


# -- a person's decision ---------------------------------------------------------------------------
AUDIT_SIZE: Final = 32
"""Audit entries a thread record keeps (the most recent)."""


def hold_request(stop: Violation, *, edit: Literal["message", "update"], interrupt_id: str | None = None,
                 error: str | None = None) -> HoldRequest:
    """The interrupt value of a hold on ``stop`` (``error``: the last answer's, on a re-ask)."""
    request = liveness_request(code=stop.code, step=stop.step, node=stop.node, count=stop.count,
                               edit=edit, detail=stop.model_dump(mode="json")["detail"],
                               interrupt_id=interrupt_id)
    if error:
        request["error"] = error
    return request


def decide_hold(answer: Any, request: Mapping[str, Any]) -> ReviewDecision | InvalidDecision:
    """The person's decision in ``answer`` (never raises; a bad answer is a logged error value)."""
    decision = parse_resume(answer, request)
    if isinstance(decision, InvalidDecision):
        log.warning("liveguard: code=bad_resume location=%s kind=%s; the thread stays held and "
                    "the person is asked again", decision.location, request.get("kind"))
    return decision


def _digest(text: str | None) -> str | None:
    if not text:
        return None
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def audit_entry(decision: ReviewDecision | InvalidDecision, stop: Violation, *, at: str) -> dict[str, Any]:
    """What the thread record keeps of one answer: codes, who, when; never text.

    ``{"at": <ISO time>, "decision": "approve" | "edit" | "reject" | "respond" | "error",
    "code": <the stop's code>, "step": <its step>, "by": <who> | None, "note": <digest> |
    None, "message": <digest> | None}``; an ``"error"`` entry (a malformed answer) carries
    ``"location"`` instead of who.
    """
    entry: dict[str, Any] = {"at": at, "code": stop.code, "step": stop.step}
    if isinstance(decision, InvalidDecision):
        entry.update(decision="error", location=decision.location)
        return entry
    message = getattr(decision, "message", None)
    entry.update(decision=decision.type, by=decision.by, note=_digest(decision.note),
                 message=_digest(message if isinstance(message, str) else None))
    return entry


def audit_value(audit: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The audit list as saved: the last :data:`AUDIT_SIZE` entries."""
    return [dict(e) for e in audit][-AUDIT_SIZE:]


# -- the user's turn -------------------------------------------------------------------------------
_HUMAN = frozenset({"human", "user"})


def input_step(value: Any) -> Step | None:
    """The step a call's new input gives, or ``None`` (a resume, no input, nothing human).

    ``{"messages": [..., <human message>]}``: the last human message's text. Any other
    mapping: the input itself (a custom chat graph's ``{"question": ...}``). ``None``, a
    ``Command`` or a non-mapping: no step.
    """
    if value is None or not isinstance(value, Mapping):
        return None
    messages = value.get("messages")
    if messages is not None:
        items = messages if isinstance(messages, list | tuple) else [messages]
        for message in reversed(items):
            text = _human_text(message)
            if text is not None:
                return Step(node=INPUT_NODE, output=text)
        return None
    rest = {k: v for k, v in value.items() if isinstance(k, str) and not k.startswith("__")}
    return Step(node=INPUT_NODE, output=rest) if rest else None


def _human_text(message: Any) -> Any:
    if isinstance(message, str):
        return message
    if isinstance(message, tuple) and len(message) == 2 and message[0] in _HUMAN:
        return message[1]
    if isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        return message.get("content") if role in _HUMAN else None
    if getattr(message, "type", None) == "human":
        return getattr(message, "content", None)
    return None


# -- the decision ----------------------------------------------------------------------------------
class Decider:
    """Which violation stops the run, for one exit behaviour.

    ``severity="hard"`` acts on hard violations only. ``"warn"`` logs and never stops;
    ``"continue"`` logs and stops at the ``ceiling``-th violation of the run (or, for a
    driver that can debounce, see :meth:`decide`); every other behaviour stops at the
    first. A violation at the user's own input step (:data:`INPUT_NODE`) is never acted
    on: the agent did not repeat itself.
    """

    __slots__ = ("behavior", "ceiling", "seen", "severity")

    def __init__(self, behavior: ExitBehavior, severity: SeverityFloor = "hard",
                 ceiling: int = 3) -> None:
        if behavior not in EXIT_BEHAVIORS:
            raise ValueError(f"exit_behavior must be one of {EXIT_BEHAVIORS}, got {behavior!r}")
        if ceiling < 1:
            raise ValueError("ceiling must be at least 1")
        self.behavior: ExitBehavior = behavior
        self.severity: SeverityFloor = severity
        self.ceiling = ceiling
        self.seen = 0

    def decide(self, found: list[Violation], *,
               debounce: Callable[[Violation], bool] | None = None) -> Violation | None:
        """The violation to stop on among ``found`` (each acted-on one is logged).

        ``debounce`` (``"continue"`` only): a driver that can answer the repeated call
        instead of running it (the middleware) says so for each violation; a debounced
        violation lets the run go on, any other stops it at once. Without it, ``"continue"``
        counts violations up to the ``ceiling``.
        """
        for violation in found:
            if self.severity == "hard" and not violation.hard:
                continue
            if violation.node == INPUT_NODE:  # the user repeated a request: not the agent's loop
                continue
            if self.behavior == "warn":
                log_violation(violation, "run continues (exit_behavior=warn)")
                continue
            if self.behavior == "continue":
                if debounce is not None:
                    if debounce(violation):
                        log_violation(violation, "call blocked, run continues (exit_behavior=continue)")
                        continue
                else:
                    self.seen += 1
                    if self.seen < self.ceiling:
                        log_violation(violation, f"run continues ({self.seen}/{self.ceiling}, "
                                                 "exit_behavior=continue)")
                        continue
            if self.behavior == "interrupt":
                log_violation(violation, "holding the thread for a person (exit_behavior=interrupt)")
            else:
                log_violation(violation, "stopping the run")
            return violation
        return None

    def debounce_ceiling(self, debounced: int, step: int, node: str) -> Violation | None:
        """``"continue"`` with debouncing: the stop once ``debounced`` calls reach the ceiling."""
        if self.behavior != "continue" or debounced < self.ceiling:
            return None
        return Violation(code="debounce_ceiling", severity="hard", step=step, node=node,
                         count=debounced, detail={"ceiling": self.ceiling})


# -- the settings both drivers take --------------------------------------------------------------
_ALIASES: Final = {"raise": "error", "end": "end", "warn": "warn"}


class LiveSettings:
    """What a live guard acts with: the policy, the allow-set, the exit behaviour, the severity
    floor and the ``"continue"`` ceiling (the same for ``guard()`` and the middleware)."""

    __slots__ = ("allow_set", "ceiling", "exit_behavior", "policy", "severity")

    def __init__(self, policy: Policy, allow_set: AllowSet | None, exit_behavior: ExitBehavior,
                 severity: SeverityFloor, ceiling: int) -> None:
        self.policy = policy
        self.allow_set = allow_set
        self.exit_behavior: ExitBehavior = exit_behavior
        self.severity: SeverityFloor = severity
        self.ceiling = ceiling

    def __repr__(self) -> str:
        return (f"LiveSettings(exit_behavior={self.exit_behavior!r}, severity={self.severity!r}, "
                f"ceiling={self.ceiling})")


def live_settings(policy: Policy, allow_set: AllowSet | None, *, exit_behavior: str | None,
                  on_violation: str | None, severity: str, ceiling: int, who: str) -> LiveSettings:
    """Validate a driver's arguments (``who`` names it in messages); fails now, not mid-run.

    ``on_violation`` is the deprecated name of ``exit_behavior`` (``"raise"`` = ``"error"``).
    """
    if on_violation is not None:
        warnings.warn(f"{who}(on_violation=...) is deprecated; use exit_behavior=",
                      DeprecationWarning, stacklevel=3)
        if exit_behavior is not None:
            raise ValueError("pass exit_behavior or on_violation, not both")
        if on_violation not in _ALIASES:
            raise ValueError(f"on_violation must be one of {sorted(_ALIASES)}, got {on_violation!r}")
        exit_behavior = _ALIASES[on_violation]
    behavior = "error" if exit_behavior is None else exit_behavior
    if behavior not in EXIT_BEHAVIORS:
        raise ValueError(f"exit_behavior must be one of {EXIT_BEHAVIORS}, got {behavior!r}")
    if severity not in ("hard", "soft"):
        raise ValueError(f"severity must be 'hard' or 'soft', got {severity!r}")
    if ceiling < 1:
        raise ValueError("ceiling must be at least 1")
    Monitor(policy, allow_set)  # fail fast on a policy the allow-set cannot refine
    return LiveSettings(policy, allow_set, behavior, severity, ceiling)  # type: ignore[arg-type]


# -- the session -------------------------------------------------------------------------------------
SavedStopAction = Literal["run", "ask", "raise", "end"]
"""What a call on a stopped thread does: run on (``warn``), ask the person again (a hold),
raise the stop (``error``), or end at once with the stop (``end``, ``continue``)."""


class ThreadSession:
    """One thread's liveness for one call: the one live core of both drivers.

    * ``check(produce)`` observes the steps ``produce()`` returns and gives back the
      violation to stop on (``None`` while the run may go on; ``warn`` logs instead).
    * Any exception from ``produce`` or the Monitor, other than a
      :class:`~liveguard.errors.LivenessError`, is the guard's own failure:
      :meth:`stand_down` logs it (code and location, never its message) and the session
      observes nothing more; the agent runs on.
    * ``stop`` / ``held`` / ``hold`` / ``audit``: the thread's saved stop (see
      :func:`stop_value`); :meth:`on_saved_stop`, :meth:`answer` and :meth:`clear` act on it.

    Thread-safe (tool calls of one turn, or a subgraph's nodes, may report from other threads).
    """

    __slots__ = ("_lock", "_monitor", "audit", "decider", "disabled", "held", "hold", "settings",
                 "stop")

    def __init__(self, settings: LiveSettings, *, monitor: Monitor | None = None,
                 stop: Violation | None = None, held: bool = False,
                 hold: Mapping[str, Any] | None = None, audit: Sequence[Mapping[str, Any]] = ()) -> None:
        self.settings = settings
        self.decider = Decider(settings.exit_behavior, settings.severity, settings.ceiling)
        self._monitor = monitor
        self._lock = threading.Lock()
        self.disabled = False
        self.stop = stop
        self.held = held and stop is not None
        self.hold: dict[str, Any] = dict(hold or {})
        self.audit: list[dict[str, Any]] = [dict(e) for e in audit]

    @classmethod
    def load(cls, settings: LiveSettings, windows: Any, stop: tuple[Violation | None, bool] = (None, False),
             *, hold: Mapping[str, Any] | None = None, audit: Sequence[Mapping[str, Any]] = (),
             new_run: bool = True) -> ThreadSession:
        """The session of a call that continues from a saved ``windows`` value (or from a
        Monitor already restored from one); ``new_run``: a new invocation (run counters reset)."""
        monitor = windows if isinstance(windows, Monitor) else read_windows(
            windows, settings.policy, settings.allow_set)
        if monitor is not None and new_run:
            monitor.new_run()
        return cls(settings, monitor=monitor, stop=stop[0], held=stop[1], hold=hold, audit=audit)

    # -- the windows ---------------------------------------------------------------------------
    @property
    def monitor(self) -> Monitor | None:
        """The Monitor (``None`` before the first step)."""
        return self._monitor

    @property
    def live_monitor(self) -> Monitor:
        """The Monitor, made on first use."""
        monitor = self._monitor
        if monitor is None:
            monitor = self._monitor = Monitor(self.settings.policy, self.settings.allow_set)
        return monitor

    @property
    def steps_seen(self) -> int:
        return 0 if self._monitor is None else self._monitor.steps_seen

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    def windows_value(self) -> dict[str, Any]:
        """The saved form of the windows (:func:`windows_value`)."""
        return windows_value(self._monitor)

    def stop_value(self) -> dict[str, Any]:
        """The saved form of the stop, the hold and the audit (:func:`stop_value`)."""
        return stop_value(self.stop, held=self.held, hold=self.hold if self.held else None,
                          audit=self.audit)

    def reset_windows(self, *, keep_count: bool = False) -> None:
        """Fresh windows (a person approved, a thread cleared; ``keep_count``: step indices go on)."""
        fresh = Monitor(self.settings.policy, self.settings.allow_set)
        old = self._monitor
        if keep_count and old is not None:
            snapshot = fresh.snapshot()
            snapshot["n"] = old.steps_seen
            fresh.load(snapshot)
        self._monitor = fresh

    # -- observing -------------------------------------------------------------------------------
    def check(self, produce: Callable[[], Sequence[Step] | Any],
              debounce: Callable[[Violation], bool] | None = None) -> Violation | None:
        """Observe the steps ``produce()`` builds; the first violation to act on, if any."""
        with self._lock:
            if self.disabled or self.stop is not None:  # stood down, or stopped by another call
                return None
            try:
                monitor = self.live_monitor
                found: list[Violation] = []
                for step in produce():
                    found += monitor.observe(step)
            except LivenessError:
                raise
            except Exception as exc:
                self.stand_down(exc)
                return None
            return self.act(found, debounce)

    def finish(self) -> Violation | None:
        """End of run: findings only a whole run shows (e.g. ``dead_end``)."""
        with self._lock:
            if self.disabled or self._monitor is None:
                return None
            try:
                found = self._monitor.finish()
            except Exception as exc:
                self.stand_down(exc)
                return None
            return self.act(found)

    def act(self, found: list[Violation],
            debounce: Callable[[Violation], bool] | None = None) -> Violation | None:
        """The violation among ``found`` to stop on (the :class:`Decider`); ``"continue"``
        without a debounce re-arms the windows after each violation it lets pass."""
        if not found:
            return None
        before = self.decider.seen
        stop = self.decider.decide(found, debounce=debounce)
        if stop is None and self.decider.seen > before:
            # Each rule fires once on its crossing: fresh windows, so a loop that goes on fires again.
            self.reset_windows(keep_count=True)
        return stop

    def stand_down(self, exc: BaseException) -> None:
        """The guard's own failure: logged (code, type, location), and nothing more is observed."""
        self.disabled = True
        log_guard_failure(exc, self.steps_seen)

    # -- a stopped or held thread ----------------------------------------------------------------
    def on_saved_stop(self) -> SavedStopAction:
        """What a call on this stopped thread does (logged), without running anything."""
        stop = self.stop
        assert stop is not None
        behavior = self.settings.exit_behavior
        if behavior == "warn":
            log_violation(stop, "run continues (exit_behavior=warn)")
            return "run"
        if behavior == "interrupt":
            log_violation(stop, "thread stopped: asking the person again")
            return "ask"
        log_violation(stop, "thread already stopped (clear it with liveguard.clear)")
        return "raise" if behavior == "error" else "end"

    def answer(self, decision: ReviewDecision | InvalidDecision, *, at: str,
               errors: Sequence[InvalidDecision] = ()) -> ReviewDecision | InvalidDecision:
        """A person's answer on the held stop: audited (codes, who, when; never text).

        ``reject``: the thread stays stopped, no longer held. ``approve`` / ``edit``: the stop
        is cleared and the windows start afresh. A malformed answer (``InvalidDecision``) changes
        nothing but the audit: the person is asked again. ``errors``: malformed answers that
        came before this one.
        """
        stop = self.stop
        assert stop is not None
        for error in errors:
            self.audit.append(audit_entry(error, stop, at=at))
        self.audit.append(audit_entry(decision, stop, at=at))
        if isinstance(decision, InvalidDecision):
            return decision
        if decision.type == "reject":
            log_violation(stop, "rejected by a person: the thread stays stopped")
            self.held = False
            return decision
        self.clear()
        return decision

    def clear(self) -> Violation | None:
        """Lift the stop and start the windows afresh; the violation that had stopped it."""
        cleared, self.stop, self.held = self.stop, None, False
        self.hold = {}
        self.reset_windows()
        return cleared
