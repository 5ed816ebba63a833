"""Waking a person when liveguard holds a thread.

A notifier is any callable ``notifier(payload, coords)``: ``payload`` is the hold's
interrupt value (a :class:`liveguard.hitl.HoldRequest`), ``coords`` the thread coordinates
(:class:`Coords`: thread id, checkpoint namespace, interrupt id). It returns a
:class:`NotifyOutcome` (or None). Call notifiers through :func:`notify_all`, which runs
each one and never raises: a notifier that fails is logged (its type, the thread, the
interrupt id and an error code) and the hold goes on unchanged. A failed notification
never releases or sends a draft.

:class:`WebhookNotifier` POSTs JSON to a URL::

    {"kind": "liveguard.approval", "text": "liveguard holds thread t-1 ...",
     "thread_id": "t-1", "checkpoint_ns": "approve_send:...", "interrupt_id": "3f2a...",
     "action": "send_draft", "allowed_decisions": ["approve", "edit", "reject"],
     "codes": ["content_cycle"], "reasons": ["autoapprove_off", "hard:content_cycle"]}

with ``X-Liveguard-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes>``
(:func:`sign`; receivers check it with :func:`verify`). ``text`` is a Slack-compatible
line (a Slack incoming webhook shows it as is). The draft is not in the body unless
``include_draft=True``. Each attempt is bounded by ``timeout`` (httpx's connect, write and
read timeouts); a connection error, a timeout, a 429 or a 5xx is retried up to
``retries`` times with exponential backoff (``backoff * 2**n`` seconds); any other answer
is final. Only ``https`` URLs are accepted, except for loopback hosts.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from liveguard.errors import NotifierError

__all__ = [
    "SIGNATURE_HEADER",
    "Coords",
    "NotifierError",
    "NotifyOutcome",
    "WebhookNotifier",
    "coords_of",
    "notify_all",
    "sign",
    "verify",
    "webhook_body",
]

log = logging.getLogger("liveguard.notify")

SIGNATURE_HEADER: Final = "X-Liveguard-Signature"
_MAX_RETRIES: Final = 10
_CONF: Final = "configurable"


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
    """Run every notifier in order; a failure is logged (codes only) and never raised."""
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


# -- the webhook -------------------------------------------------------------------------------
def sign(secret: bytes, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of the exact body bytes."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is :func:`sign` of ``body`` (constant-time comparison)."""
    return header is not None and hmac.compare_digest(sign(secret, body), header)


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


@dataclass(frozen=True)
class WebhookNotifier:
    """POST the hold (:func:`webhook_body`) to ``url``, signed with ``secret``; see the module.

    ``timeout`` bounds each attempt (seconds); ``retries`` is the number of extra attempts
    after the first (0 to 10); ``backoff`` the first delay between attempts (doubling).
    ``sleep`` waits between attempts (default :func:`time.sleep`). The repr shows the host
    only: a webhook URL's path often carries a token.
    """

    url: str
    secret: bytes = field(repr=False)
    timeout: float = 5.0
    retries: int = 2
    backoff: float = 0.5
    include_draft: bool = False
    header: str = SIGNATURE_HEADER
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise NotifierError("webhook url: expected an http(s) URL with a host")
        if parts.scheme == "http" and not _loopback(parts.hostname):
            raise NotifierError(f"webhook url: https required for non-loopback host {parts.hostname}")
        if isinstance(self.secret, str):
            object.__setattr__(self, "secret", self.secret.encode("utf-8"))
        if not isinstance(self.secret, bytes) or not self.secret:
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
                          default=str).encode("utf-8")

    def __call__(self, payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        import httpx

        body = self.body(payload, coords)
        headers = {"Content-Type": "application/json", self.header: sign(self.secret, body),
                   "User-Agent": "liveguard-notify"}
        status: int | None = None
        error: str | None = None
        attempts = 0
        with httpx.Client(timeout=httpx.Timeout(self.timeout), follow_redirects=False) as client:
            for attempt in range(self.retries + 1):
                if attempt:
                    self.sleep(self.backoff * 2 ** (attempt - 1))
                attempts += 1
                try:
                    response = client.post(self.url, content=body, headers=headers)
                except httpx.TimeoutException:
                    status, error = None, "timeout"
                    continue
                except httpx.HTTPError as exc:
                    status, error = None, f"transport:{type(exc).__name__}"
                    continue
                status = response.status_code
                if 200 <= status < 300:
                    return NotifyOutcome(ok=True, attempts=attempts, status=status)
                error = f"http_{status}"
                if status != 429 and status < 500:
                    break  # a permanent answer: retrying would not change it
        return NotifyOutcome(ok=False, attempts=attempts, status=status, error=error)
