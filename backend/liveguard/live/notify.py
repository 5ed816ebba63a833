"""Waking a person when liveguard holds a thread.

A notifier is any callable ``notifier(payload, coords)``: ``payload`` is the hold's
interrupt value (a :class:`liveguard.live.hitl.HoldRequest`), ``coords`` the thread coordinates
(:class:`Coords`: thread id, checkpoint namespace, interrupt id). It returns a
:class:`NotifyOutcome` (or None). :func:`notify_all` runs each one and never raises: a
notifier that fails is logged (its type, the thread, the interrupt id and an error code)
and the hold goes on unchanged. A failed notification never releases or sends a draft.

**Off the critical path.** :func:`notify_later` queues the notifiers on one background
worker (a daemon thread, a bounded queue of :data:`MAX_PENDING` holds) and returns at once:
a receiver that is down, slow or trickling never delays a hold. Every hold notifies this
way: the approval step, :func:`liveguard.live.hitl.ask` / ``aask`` (so the middleware's
``exit_behavior="interrupt"``) and ``guard(graph)``. The hold is stored first and the person
notified after: for an interrupt raised in a node, the worker waits (at most
:data:`STORE_WAIT` seconds) until it can be read back from the checkpointer; ``guard`` stores
its hold before it queues the notifiers. A person who answers at once finds the thread
waiting. A full queue drops the notification (logged, codes only), never the hold:
``liveguard approvals list`` still finds it. :func:`flush` waits for the queue to
empty; at interpreter exit it is waited for, bounded by :data:`EXIT_WAIT`.

:class:`WebhookNotifier` POSTs JSON to a URL::

    {"kind": "liveguard.approval", "text": "liveguard holds thread t-1 ...",
     "thread_id": "t-1", "checkpoint_ns": "approve_send:...", "interrupt_id": "3f2a...",
     "action": "send_draft", "allowed_decisions": ["approve", "edit", "reject"],
     "codes": ["content_cycle"], "reasons": ["autoapprove_off", "hard:content_cycle"]}

signed as the Standard Webhooks specification says (:func:`sign`)::

    webhook-id: msg_<32 hex digits>
    webhook-timestamp: <Unix seconds of this attempt>
    webhook-signature: v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">

The secret is ``whsec_<base64 key>`` (the specification's form: the key is the decoded
bytes) or the raw key as bytes or text (UTF-8). Receivers check a delivery with
:func:`verify`, which returns False (never raises) on a missing or malformed header, a wrong
signature, a secret of the wrong type, or a timestamp more than ``tolerance`` seconds (default
:data:`TOLERANCE`, 5 minutes) from their clock: a captured delivery cannot be replayed later.

**Deduplicate on ``webhook-id``.** The id names the hold (a digest of its kind, thread,
namespace and interrupt id): every attempt of a delivery carries the same id, with a fresh
timestamp and signature, and so does any other process that notifies the same hold. A
receiver that has handled an id already answers 2xx and does nothing more. A hold whose
interrupt id is unknown gets a random id, the same for its retries.

``text`` is a Slack-compatible line (a Slack incoming webhook shows it as is). The draft is
not in the body unless ``include_draft=True``. Each attempt has one deadline, ``timeout``
seconds for everything (connect, send, wait, read the answer): a receiver that trickles its
answer is cut off at the deadline. A connection error, a timeout, a 429 or a 5xx is retried
up to ``retries`` times with exponential backoff (``backoff * 2**n`` seconds); any other
answer is final. Only ``https`` URLs are accepted, except for loopback hosts.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import copy
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar
from urllib.parse import urlsplit

from liveguard.errors import NotifierError

__all__ = [
    "EXIT_WAIT",
    "ID_HEADER",
    "MAX_PENDING",
    "SIGNATURE_HEADER",
    "STORE_WAIT",
    "TIMESTAMP_HEADER",
    "TOLERANCE",
    "Coords",
    "NotifierError",
    "NotifyOutcome",
    "WebhookNotifier",
    "coords_of",
    "flush",
    "message_id",
    "notify_all",
    "notify_later",
    "sign",
    "verify",
    "webhook_body",
]

log = logging.getLogger("liveguard.notify")

ID_HEADER: Final = "webhook-id"
TIMESTAMP_HEADER: Final = "webhook-timestamp"
SIGNATURE_HEADER: Final = "webhook-signature"
TOLERANCE: Final = 300.0
"""Seconds a delivery's timestamp may be from the receiver's clock (the specification's 5 minutes)."""
MAX_PENDING: Final = 1000
"""Holds waiting to be notified at most; past it a notification is dropped (logged), never a hold."""
STORE_WAIT: Final = 10.0
"""Seconds the worker waits for a hold to be readable in the checkpointer before notifying anyway."""
EXIT_WAIT: Final = 30.0
"""Seconds the interpreter's exit waits for queued notifications."""
_MAX_RETRIES: Final = 10
_CONF: Final = "configurable"
_SECRET_PREFIX: Final = "whsec_"
_MAX_HEADER: Final = 4096  # longer signature/id headers are malformed, not parsed

_T = TypeVar("_T")


@dataclass(frozen=True)
class Coords:
    """Where a hold is: resume it with ``Command(resume=...)`` on this thread and interrupt."""

    thread_id: str | None
    checkpoint_ns: str
    interrupt_id: str | None


@dataclass(frozen=True)
class NotifyOutcome:
    """What one notifier did: ``ok``; ``attempts`` made; the last HTTP ``status``; ``error`` code."""

    ok: bool
    attempts: int
    status: int | None = None
    error: str | None = None


class Notifier(Protocol):
    """The notifier protocol: called once per hold, with the payload and the coordinates."""

    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome | None: ...


def coords_of(config: Mapping[str, Any] | None, held: Any = None) -> Coords:
    """The coordinates of a hold: from ``config`` (default: the running node's) and the raised
    ``GraphInterrupt`` (``held``), whose ``Interrupt`` carries the id LangGraph gave it."""
    if config is None:
        try:
            from langgraph.config import get_config

            config = get_config()
        except Exception:  # outside a runnable context: coordinates unknown, never an error
            config = {}
    conf = config.get(_CONF) or {}
    interrupt_id = None
    for item in (getattr(held, "args", None) or ((),))[0] or ():
        interrupt_id = getattr(item, "id", None)
        break
    thread = conf.get("thread_id")
    return Coords(thread_id=None if thread is None else str(thread),
                  checkpoint_ns=str(conf.get("checkpoint_ns") or ""),
                  interrupt_id=None if interrupt_id is None else str(interrupt_id))


def notify_all(
    notifiers: Sequence[Notifier], payload: Mapping[str, Any], coords: Coords
) -> list[NotifyOutcome]:
    """Run every notifier in order, now; a failure is logged (codes only) and never raised."""
    outcomes: list[NotifyOutcome] = []
    for notifier in notifiers:
        name = type(notifier).__name__
        try:
            outcome = notifier(payload, coords)
        except Exception as exc:
            outcome = NotifyOutcome(ok=False, attempts=1, error=f"raised:{type(exc).__name__}")
        if not isinstance(outcome, NotifyOutcome):
            outcome = NotifyOutcome(ok=True, attempts=1)
        if not outcome.ok:
            log.warning("notify notifier=%s thread=%s interrupt=%s kind=%s failed=%s attempts=%d",
                        name, coords.thread_id, coords.interrupt_id, payload.get("kind"),
                        outcome.error, outcome.attempts)
        outcomes.append(outcome)
    return outcomes


# -- off the critical path ---------------------------------------------------------------------
class _Worker:
    """One daemon thread running queued jobs in order; a bounded queue; restarted after a fork."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._cond = threading.Condition()
        self._jobs: deque[Callable[[], object]] = deque()
        self._pending = 0  # queued or running
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def submit(self, job: Callable[[], object]) -> bool:
        with self._cond:
            if self._pid != os.getpid():  # a forked child: the parent's thread is not here
                self._jobs.clear()
                self._pending, self._thread, self._pid = 0, None, os.getpid()
            if len(self._jobs) >= self._size:
                return False
            self._jobs.append(job)
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="liveguard-notify", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                job = self._jobs.popleft()
            try:
                job()
            except Exception as exc:  # a job never raises (notify_all); a bug here must not stop the worker
                log.warning("notify worker_error=%s", type(exc).__name__)
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()

    def flush(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending and self._pid == os.getpid():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True


_WORKER: Final = _Worker(MAX_PENDING)
atexit.register(lambda: _WORKER.flush(EXIT_WAIT))


def _wait_until(ready: Callable[[], bool], seconds: float) -> bool:
    """Poll ``ready`` (backing off to 0.5 s) until it says yes, raises, or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    delay = 0.02
    while True:
        try:
            if ready():
                return True
        except Exception as exc:  # cannot tell: notify now rather than never
            log.debug("notify ready_error=%s", type(exc).__name__)
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.5)


def notify_later(
    notifiers: Sequence[Notifier], payload: Mapping[str, Any], coords: Coords,
    *, ready: Callable[[], bool] | None = None, store_wait: float = STORE_WAIT,
) -> bool:
    """Queue :func:`notify_all` on the background worker and return at once.

    ``ready`` (optional) says whether the hold is stored; the worker polls it for at most
    ``store_wait`` seconds before notifying (and notifies anyway after that, or when it
    raises). ``payload`` is copied now. Never raises. Returns False when the queue is full or
    no worker can be started (the notification is dropped and logged; the hold is not touched).
    """
    if not notifiers:
        return True
    try:
        shown: Mapping[str, Any] = copy.deepcopy(dict(payload))
    except Exception:  # an uncopyable draft: the top level is enough for the body
        shown = dict(payload)
    listed = tuple(notifiers)

    def job() -> None:
        if ready is not None and not _wait_until(ready, store_wait):
            log.info("notify thread=%s interrupt=%s stored=unconfirmed",
                     coords.thread_id, coords.interrupt_id)
        notify_all(listed, shown, coords)

    try:
        if _WORKER.submit(job):
            return True
    except Exception as exc:  # no thread to be had (interpreter exit): the hold stands all the same
        log.warning("notify thread=%s interrupt=%s kind=%s failed=worker:%s", coords.thread_id,
                    coords.interrupt_id, payload.get("kind"), type(exc).__name__)
        return False
    log.warning("notify thread=%s interrupt=%s kind=%s failed=queue_full pending=%d", coords.thread_id,
                coords.interrupt_id, payload.get("kind"), MAX_PENDING)
    return False


def flush(timeout: float = EXIT_WAIT) -> bool:
    """Wait until every queued notification has run (at most ``timeout`` seconds); True if so."""
    return _WORKER.flush(timeout)


# -- signing (Standard Webhooks) ---------------------------------------------------------------
def _key(secret: bytes | str) -> bytes:
    """The HMAC key: ``whsec_<base64>`` decoded; other text as UTF-8; bytes as they are."""
    if isinstance(secret, str):
        if secret.startswith(_SECRET_PREFIX):
            try:
                return base64.b64decode(secret[len(_SECRET_PREFIX):], validate=True)
            except (binascii.Error, ValueError):
                raise NotifierError("webhook secret: whsec_ must be followed by base64") from None
        return secret.encode("utf-8")
    if isinstance(secret, bytes | bytearray):
        return bytes(secret)
    raise NotifierError(f"webhook secret: expected bytes or str, got {type(secret).__name__}")


def message_id(payload: Mapping[str, Any], coords: Coords) -> str:
    """``msg_`` and 32 hex digits naming the hold: the same for every attempt and every process."""
    if coords.interrupt_id is None:
        return "msg_" + uuid.uuid4().hex
    named = "\x1f".join((str(payload.get("kind") or ""), coords.thread_id or "", coords.checkpoint_ns,
                         coords.interrupt_id))
    return "msg_" + hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _signature(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def sign(secret: bytes | str, body: bytes, *, msg_id: str, timestamp: int | None = None) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body`` (``timestamp``: Unix seconds, default now)."""
    if not msg_id.isascii() or not msg_id or "." in msg_id:
        raise NotifierError("webhook id: non-empty ASCII without '.'")
    stamp = int(time.time()) if timestamp is None else int(timestamp)
    return {ID_HEADER: msg_id, TIMESTAMP_HEADER: str(stamp),
            SIGNATURE_HEADER: _signature(_key(secret), msg_id, stamp, body)}


def _header(headers: Mapping[Any, Any], name: str) -> str | None:
    """One header's value (any case of its name), as ASCII text; None if absent or not ASCII."""
    value = headers.get(name)
    if value is None:
        for key, item in headers.items():
            if isinstance(key, str | bytes) and (key.decode("latin-1") if isinstance(key, bytes)
                                                 else key).lower() == name:
                value = item
                break
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(value, str) or not value.isascii() or len(value) > _MAX_HEADER:
        return None
    return value


def verify(
    secret: bytes | str, body: bytes | str, headers: Mapping[Any, Any] | None,
    *, tolerance: float = TOLERANCE, now: float | None = None,
) -> bool:
    """Whether ``headers`` (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``; any
    case) sign ``body`` with ``secret`` within ``tolerance`` seconds of ``now`` (default: the
    clock). False, never an exception, for anything malformed: a missing or non-ASCII header, a
    secret or body of the wrong type, a bad ``whsec_`` secret, a stale or future timestamp.
    One matching ``v1,`` entry among several (space-separated) is enough."""
    if not isinstance(headers, Mapping):
        return False
    try:
        key = _key(secret)
    except NotifierError:
        return False
    if isinstance(body, str):
        try:
            raw = body.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: no receiver got such bytes
            return False
    elif isinstance(body, bytes | bytearray | memoryview):
        raw = bytes(body)
    else:
        return False
    msg_id, stamp, given = (_header(headers, n) for n in (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER))
    if not msg_id or stamp is None or given is None:
        return False
    if not (stamp.isdigit() and len(stamp) <= 12):
        return False
    if not isinstance(tolerance, int | float) or isinstance(tolerance, bool):
        return False
    clock = time.time() if now is None else now
    if not isinstance(clock, int | float) or not abs(clock - int(stamp)) <= tolerance:  # NaN: False
        return False
    expected = base64.b64decode(_signature(key, msg_id, int(stamp), raw)[3:])
    for entry in given.split(" "):
        version, _, encoded = entry.partition(",")
        if version != "v1":
            continue
        try:
            got = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(expected, got):
            return True
    return False


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def webhook_body(
    payload: Mapping[str, Any], coords: Coords, *, include_draft: bool = False
) -> dict[str, Any]:
    """The JSON the webhook sends: codes, reasons, coordinates, a Slack ``text`` line.

    The draft (``action_requests[0].args.draft``) is included only with ``include_draft``;
    nothing else of the request's text (the description, the args) is sent.
    """
    requests = payload.get("action_requests") or [{}]
    configs = payload.get("review_configs") or [{}]
    action = requests[0] if isinstance(requests[0], Mapping) else {}
    config = configs[0] if isinstance(configs[0], Mapping) else {}
    codes = [str(c) for c in payload.get("codes") or []]
    reasons = [str(r) for r in payload.get("reasons") or []]
    kind = str(payload.get("kind") or "liveguard")
    what = "a draft for approval" if kind.endswith("approval") else "a stopped run"
    where = f" at step {payload['step']}" if isinstance(payload.get("step"), int) else ""
    text = (f"liveguard holds {what} on thread {coords.thread_id or '?'}{where}: "
            f"{', '.join(reasons or codes) or 'no reason given'} (interrupt {coords.interrupt_id or '?'})")
    body: dict[str, Any] = {
        "kind": kind,
        "text": _slack_escape(text),
        "thread_id": coords.thread_id,
        "checkpoint_ns": coords.checkpoint_ns,
        "interrupt_id": coords.interrupt_id,
        "action": action.get("name"),
        "allowed_decisions": list(config.get("allowed_decisions") or []),
        "codes": codes,
        "reasons": reasons,
    }
    for key in ("step", "node", "count", "error"):
        if key in payload:
            body[key] = payload[key]
    if include_draft:
        args = action.get("args")
        if isinstance(args, Mapping) and "draft" in args:
            body["draft"] = args["draft"]
    return body


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _run_async(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine to its end from sync code, also from a thread whose event loop is running."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    box: list[_T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            box.append(asyncio.run(make()))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name="liveguard-notify-call", daemon=True)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return box[0]


@dataclass(frozen=True)
class WebhookNotifier:
    """POST the hold (:func:`webhook_body`) to ``url``, signed with ``secret``; see the module.

    ``secret``: ``whsec_<base64>``, or the raw key as bytes or text. ``timeout`` is each
    attempt's whole deadline (seconds: connect, send, read); ``retries`` is the number of extra
    attempts after the first (0 to 10); ``backoff`` the first delay between attempts
    (doubling). ``sleep`` waits between attempts (default :func:`time.sleep`). The repr shows
    the host only: a webhook URL's path often carries a token.
    """

    url: str
    secret: bytes = field(repr=False)
    timeout: float = 5.0
    retries: int = 2
    backoff: float = 0.5
    include_draft: bool = False
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise NotifierError("webhook url: expected an http(s) URL with a host")
        if parts.scheme == "http" and not _loopback(parts.hostname):
            raise NotifierError(f"webhook url: https required for non-loopback host {parts.hostname}")
        object.__setattr__(self, "secret", _key(self.secret))
        if not self.secret:
            raise NotifierError("webhook secret: required, non-empty bytes or str")
        if not _number(self.timeout) or not self.timeout > 0:
            raise NotifierError(f"webhook timeout: expected seconds > 0, got {self.timeout!r}")
        if not _number(self.retries) or not isinstance(self.retries, int) \
                or not 0 <= self.retries <= _MAX_RETRIES:
            raise NotifierError(f"webhook retries: expected an int in 0..{_MAX_RETRIES}, "
                                f"got {self.retries!r}")
        if not _number(self.backoff) or self.backoff < 0:
            raise NotifierError(f"webhook backoff: expected seconds >= 0, got {self.backoff!r}")

    def __repr__(self) -> str:
        host = urlsplit(self.url).hostname
        return (f"WebhookNotifier(host={host!r}, timeout={self.timeout}, retries={self.retries}, "
                f"backoff={self.backoff}, include_draft={self.include_draft})")

    def body(self, payload: Mapping[str, Any], coords: Coords) -> bytes:
        """The exact bytes sent (and signed)."""
        data = webhook_body(payload, coords, include_draft=self.include_draft)
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=str).encode("utf-8", "surrogatepass")

    async def _attempt(self, body: bytes, headers: Mapping[str, str]) -> int:
        """One POST; its status. Everything (connect, send, read) within ``timeout``."""
        import asyncio

        import httpx

        async def post() -> int:
            limits = httpx.Timeout(self.timeout)
            async with httpx.AsyncClient(timeout=limits, follow_redirects=False) as client:
                response = await client.post(self.url, content=body, headers=dict(headers))
                return response.status_code

        return await asyncio.wait_for(post(), self.timeout)

    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        import httpx

        body = self.body(payload, coords)
        msg_id = message_id(payload, coords)  # one id for every attempt: receivers deduplicate on it
        status: int | None = None
        error: str | None = None
        attempts = 0
        for attempt in range(self.retries + 1):
            if attempt:
                self.sleep(self.backoff * 2 ** (attempt - 1))
            attempts += 1
            headers = {"Content-Type": "application/json", "User-Agent": "liveguard-notify",
                       **sign(self.secret, body, msg_id=msg_id)}  # a fresh timestamp per attempt
            try:
                status = _run_async(functools.partial(self._attempt, body, headers))
            except (TimeoutError, httpx.TimeoutException):
                status, error = None, "timeout"
                continue
            except httpx.HTTPError as exc:
                status, error = None, f"transport:{type(exc).__name__}"
                continue
            if 200 <= status < 300:
                return NotifyOutcome(ok=True, attempts=attempts, status=status)
            error = f"http_{status}"
            if status != 429 and status < 500:
                break  # a permanent answer: retrying would not change it
        return NotifyOutcome(ok=False, attempts=attempts, status=status, error=error)
