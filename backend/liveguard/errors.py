"""One rooted hierarchy for every error liveguard raises, and the one list of them.

::

    LiveguardError
    ├── FingerprintError (also ValueError)        a payload cannot be put in canonical form
    ├── PolicyError (also ValueError)              a policy value or environment override is invalid
    ├── TrajectoryReadError (also ValueError)      a recorded run cannot be read; names file:line
    ├── SnapshotError (also ValueError)            a saved Monitor state cannot be restored
    ├── AllowSetError (also ValueError)            an allow-set file is invalid; names file:line and key
    ├── ResultError (also ValueError)              an evaluator result that cannot be typed
    ├── NotifierError (also ValueError)            a notifier that cannot be built
    ├── TargetError (also ValueError)              a ``MODULE:ATTR`` target cannot be loaded
    ├── UnknownThreadError (also LookupError)      a thread the checkpointer has nothing for
    ├── ClusterUnreachableError (also ConnectionError)  a Ray address that cannot be reached
    ├── CheckpointURLError (also ValueError)       a checkpoint URL naming no saver
    ├── CheckpointOpenError                        the checkpoint database cannot be opened
    ├── ApprovalError (also ValueError)            a resume answer that is no decision
    │   ├── ApprovalClaimError                     the decision could not be recorded
    │   └── SendRefused                            no live decision for this draft: nothing sent
    ├── ApprovalConflict                           another worker decided first
    ├── JudgeSkipped                               the judges are off
    ├── EvaluatorArgumentError (also TypeError, ValueError)
    │                                              a bad ``create_*_evaluator`` argument
    ├── SemanticUnavailable                        the semantic extra or model is missing
    ├── EmbeddingError                             an embedding request failed
    └── LivenessError                              a run stopped making progress
        └── NoProgressError (also RuntimeError)    carries the Violation that fired

Live guards raise ``NoProgressError``; catching ``LivenessError`` catches every
liveness stop, present and future. Every class of the tree is defined here, and only here
(a test checks it); the modules that raise one import it from here and re-export it where
it was defined before (``liveguard.live.approval.ApprovalError``, ``liveguard.evaluate.judges.JudgeSkipped``,
...). This module imports nothing of liveguard at run time: every layer may import it.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from liveguard.core.model import Violation

__all__ = [
    "AllowSetError",
    "ApprovalClaimError",
    "ApprovalConflict",
    "ApprovalError",
    "CheckpointOpenError",
    "CheckpointURLError",
    "ClusterUnreachableError",
    "EmbeddingError",
    "EvaluatorArgumentError",
    "FingerprintError",
    "JudgeSkipped",
    "LiveguardError",
    "LivenessError",
    "NoProgressError",
    "NotifierError",
    "PolicyError",
    "ResultError",
    "SemanticUnavailable",
    "SendRefused",
    "SnapshotError",
    "TargetError",
    "TrajectoryReadError",
    "UnknownThreadError",
    "redact_location",
    "safe_key",
]


SCHEMA_KEYS = frozenset({
    "run_id", "graph", "steps", "status", "outcome", "metadata", "expected", "node", "summary",
    "output", "tool", "args", "result", "error", "role", "content", "tool_calls", "name",
    "arguments", "function", "id", "type", "tool_call_id", "passed", "hard_codes", "policy",
    "start_time", "messages", "inputs", "outputs",
})
"""Keys of liveguard's own formats and of message shapes: shown as is in error locations."""


def safe_key(key: object) -> str:
    """A location segment for a dict key that never carries the key's text.

    Schema keys (:data:`SCHEMA_KEYS`) and integers are shown as is; any other key is shown
    as ``#`` plus an 8-hex digest prefix (a card number or an e-mail in a key stays private).
    """
    text = str(key)
    if text in SCHEMA_KEYS or (text.isdigit() and len(text) <= 6):  # list indices
        return text
    return "#" + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


_DOTTED_LOC = re.compile(r"^(?P<loc>[^:\s][^:]*?): (?P<msg>.*)$", re.DOTALL)


_READER_REASONS = frozenset({"invalid JSON", "cannot open", "cannot read", "reading stopped"})
"""Reasons the readers write before a colon: words of ours, not a location in the run."""


def redact_location(reason: str) -> str:
    """``steps.0.<key>: message`` (a pydantic location) with private keys digested."""
    match = _DOTTED_LOC.match(reason)
    if match is None or match["loc"] in _READER_REASONS:
        return reason
    loc = ".".join(safe_key(part) for part in match["loc"].split("."))
    return f"{loc}: {match['msg']}"


class LiveguardError(Exception):
    """Root of every error raised by liveguard."""


class FingerprintError(LiveguardError, ValueError):
    """A payload cannot be fingerprinted: unsupported type, cycle or excessive nesting.

    ``path`` is a JSONPath-like location inside the payload (``$.args.#1f0c2a9e[3]``;
    a user dict key appears only as a digest prefix, see :func:`safe_key`).
    """

    def __init__(self, reason: str, path: str = "$") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}")

    def __reduce__(self) -> tuple[type[FingerprintError], tuple[str, str]]:
        return type(self), (self.reason, self.path)

    def at(self, segment: str) -> FingerprintError:
        """Return the same error located one level further out (``segment`` + path)."""
        inner = self.path[1:] if self.path.startswith("$") else self.path
        return FingerprintError(self.reason, f"${segment}{inner}")


class PolicyError(LiveguardError, ValueError):
    """A policy value or an environment override is invalid."""


class TrajectoryReadError(LiveguardError, ValueError):
    """A recorded run cannot be read. ``source`` is ``file:line`` (or ``<memory>``)."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")

    def __reduce__(self) -> tuple[type[TrajectoryReadError], tuple[str, str]]:
        return type(self), (self.source, self.reason)  # picklable: records cross processes


class SnapshotError(LiveguardError, ValueError):
    """A Monitor snapshot cannot be restored: another version, or malformed."""


class LivenessError(LiveguardError):
    """Base class for a run that stopped making progress."""


class NoProgressError(LivenessError, RuntimeError):
    """Raised by the live guards; ``violation`` says which rule fired, where, and how often.

    The message (:func:`liveguard.core.stop_text.stop_text`) starts ``<code> at step <n> (node
    '<node>', count <k>)``, then says the rule in words, the two steps that repeat (indices
    and a digest prefix, never their text) and how to clear the thread.

    Also a ``RuntimeError``: LangGraph's default ``RetryPolicy`` never retries it, and the
    LangGraph server passes its message (code and step) through to the client."""

    def __init__(self, violation: Violation) -> None:
        from liveguard.core.stop_text import stop_text  # the rule in words, what repeats, how to clear

        self.violation = violation
        super().__init__(stop_text(violation))


class AllowSetError(LiveguardError, ValueError):
    """An allow-set file is invalid. ``source`` is ``file:line``; ``key`` the dotted key."""

    def __init__(self, source: str, key: str, reason: str) -> None:
        self.source = source
        self.key = key
        self.reason = reason
        super().__init__(f"{source}: {key}: {reason}" if key else f"{source}: {reason}")


class UnknownThreadError(LiveguardError, LookupError):
    """``thread_status`` of a thread the checkpointer has nothing for."""


class ResultError(LiveguardError, ValueError):
    """An evaluator result that cannot be typed; the message starts with the key at fault."""


class NotifierError(LiveguardError, ValueError):
    """A notifier that cannot be built: a bad URL, secret, timeout or retry setting."""


class TargetError(LiveguardError, ValueError):
    """A ``MODULE:ATTR`` target cannot be loaded: malformed, missing, or its code raised."""


class ClusterUnreachableError(LiveguardError, ConnectionError):
    """The Ray cluster named by an address cannot be reached (the message names the address)."""


class CheckpointURLError(LiveguardError, ValueError):
    """A checkpoint URL that names no supported saver."""


class CheckpointOpenError(LiveguardError):
    """The checkpoint database named by a valid URL cannot be opened or read (the environment's fault)."""


class ApprovalError(LiveguardError, ValueError):
    """A resume answer that is not a valid decision, or an approval step that cannot run."""


class ApprovalClaimError(ApprovalError):
    """The decision could not be recorded (a database error): nothing was decided, the draft still waits."""


class SendRefused(ApprovalError):
    """The send node was reached without a live decision for exactly this draft: nothing was sent.

    ``reason`` is a code: ``no_decision`` (no approve or edit is recorded, e.g. the draft still
    waits or was rejected), ``not_granted`` (the recorded decision is not one this process holds:
    another interrupt's, already sent, or written into the state by a client), ``draft_changed``
    (the draft or recipient is not the one decided on), ``pushed`` (the node was started by
    ``Send(node, input)``, a client's ``goto`` with input).
    """

    def __init__(self, thread_id: str, reason: str, detail: str) -> None:
        self.thread_id = thread_id
        self.reason = reason
        super().__init__(f"thread {thread_id}: send refused ({reason}): {detail}; nothing was sent")


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


class JudgeSkipped(LiveguardError):
    """The judges are off (``reason``: ``kill_switch`` or ``no_api_key``); no request was made."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"LLM judges skipped: {reason}")


class EvaluatorArgumentError(LiveguardError, TypeError, ValueError):
    """A ``create_*_evaluator`` argument of the wrong type or out of range.

    Raised when the evaluator is built; the message starts with the factory and the
    argument (``create_gate_evaluator(window=...): ...``). It is a ``TypeError`` and a
    ``ValueError`` as well, so callers catching either keep working.
    """


class SemanticUnavailable(LiveguardError):
    """The semantic layer cannot run: the extra or the model package is missing, or invalid."""


class EmbeddingError(LiveguardError):
    """An embedding request failed; ``code`` is a short error code (never text from the step)."""

    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(f"embedding failed: {code}")
