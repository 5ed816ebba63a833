"""liveguard.live.notify: waking a person with a signed webhook (issue 19, item 3).

Every test talks to a real HTTP server on 127.0.0.1 (http.server in a thread).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import astuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from liveguard.live.hitl import approval_request, ask, liveness_request
from liveguard.live.notify import (
    ID_HEADER,
    MAX_PENDING,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    TOLERANCE,
    Coords,
    NotifierError,
    NotifyOutcome,
    WebhookNotifier,
    coords_of,
    flush,
    message_id,
    notify_all,
    notify_later,
    sign,
    verify,
)

SECRET = b"s3cret-key"
DRAFT = "Dear Ms. Rivera, your ACME-SECRET-7f3a order ships Monday."
COORDS = Coords(thread_id="t-1", checkpoint_ns="approve_send:1b2c", interrupt_id="3f2a9c")


def payload() -> dict[str, Any]:
    return dict(approval_request(DRAFT, reasons=["autoapprove_off", "hard:content_cycle"],
                                 codes=["content_cycle"]))


class Hook:
    """A local webhook receiver: answers with scripted statuses, or never (``hang``), or trickles
    its answer (``trickle``: the status line and headers, then one body byte every 0.1 s until
    ``release`` is set); ``finished`` is set when it is done with a request. ``on_request`` is
    called with each request's headers as it arrives."""

    def __init__(self, statuses: list[int], *, hang: bool = False, trickle: bool = False,
                 on_request: Callable[[dict[str, str]], None] | None = None) -> None:
        self.statuses = statuses
        self.hang = hang
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.release = threading.Event()
        self.finished = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                try:
                    self._answer()
                finally:
                    hook.finished.set()

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k.lower(): v for k, v in self.headers.items()}
                hook.requests.append((headers, body))
                if on_request is not None:
                    on_request(headers)
                if hook.hang:
                    hook.release.wait(30)  # never answers while the client waits
                    return
                status = hook.statuses[min(len(hook.requests), len(hook.statuses)) - 1]
                self.send_response(status)
                if trickle:
                    self.send_header("Content-Length", str(TRICKLE_CAP))
                    self.end_headers()
                    for _ in range(TRICKLE_CAP):  # each byte well within any read timeout
                        if hook.release.wait(0.1):
                            return
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    return
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/B000/XXXX"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


TRICKLE_CAP = 300
"""Body bytes a trickling receiver sends at most (0.1 s apart: 30 s), unless released sooner."""


@pytest.fixture
def hook_factory() -> Iterator[Any]:
    made: list[Hook] = []

    def make(statuses: list[int], **options: Any) -> Hook:
        made.append(Hook(statuses, **options))
        return made[-1]

    yield make
    for hook in made:
        hook.close()


class Sleeps:
    """Records the backoff the notifier asks for (no real waiting in unit tests)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def notifier(url: str, sleeps: Sleeps | None = None, **options: Any) -> WebhookNotifier:
    return WebhookNotifier(url=url, secret=SECRET, sleep=sleeps or Sleeps(), **options)


# ------------------------------------------------------------------------------ the request
def spec_signature(key: bytes, headers: Mapping[str, str], body: bytes) -> str:
    """The Standard Webhooks signature, computed here from the specification's words."""
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def test_the_delivery_is_signed_as_standard_webhooks_say(hook_factory: Any) -> None:
    hook = hook_factory([200])
    outcome = notifier(hook.url)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=True, attempts=1, status=200)
    ((headers, body),) = hook.requests
    assert re.fullmatch(r"msg_[0-9a-f]{32}", headers[ID_HEADER])
    assert abs(int(headers[TIMESTAMP_HEADER]) - time.time()) < TOLERANCE
    assert headers[SIGNATURE_HEADER] == spec_signature(SECRET, headers, body)
    assert headers["content-type"] == "application/json"
    assert "x-liveguard-signature" not in headers
    assert verify(SECRET, body, headers)
    assert verify(SECRET.decode(), body.decode(), {k.upper(): v for k, v in headers.items()})
    assert not verify(SECRET, body + b" ", headers)
    assert not verify(b"other", body, headers)
    assert not verify(SECRET, body, None)
    assert not verify(SECRET, body, {**headers, ID_HEADER: "msg_other"})  # the id is signed
    stamp = str(int(headers[TIMESTAMP_HEADER]) + 1)
    assert not verify(SECRET, body, {**headers, TIMESTAMP_HEADER: stamp})  # and the timestamp


def test_a_whsec_secret_is_the_base64_key_and_a_text_secret_its_utf8() -> None:
    key = bytes(range(32))
    whsec = "whsec_" + base64.b64encode(key).decode()
    hook = WebhookNotifier(url="https://example.invalid/x", secret=whsec)
    assert hook.secret == key
    body = hook.body(payload(), COORDS)
    headers = sign(whsec, body, msg_id="msg_1")
    assert headers[SIGNATURE_HEADER] == spec_signature(key, headers, body)
    assert verify(whsec, body, headers)
    assert verify(key, body, headers)
    assert not verify(whsec[:-2] + "!!", body, headers)  # a broken whsec_ secret: False, not raised
    with pytest.raises(NotifierError, match="whsec_ must be followed by base64"):
        WebhookNotifier(url="https://example.invalid/x", secret="whsec_not base64!")
    assert verify("pässword", body, sign("pässword", body, msg_id="msg_2"))


def test_a_captured_delivery_stops_verifying_outside_the_tolerance() -> None:
    body = b'{"kind":"liveguard.approval"}'
    headers = sign(SECRET, body, msg_id="msg_old", timestamp=1_700_000_000)
    assert verify(SECRET, body, headers, now=1_700_000_000 + 299)
    assert verify(SECRET, body, headers, now=1_700_000_000 - 299)  # a clock a little behind
    assert not verify(SECRET, body, headers, now=1_700_000_000 + 301)
    assert not verify(SECRET, body, headers, now=1_700_000_000 - 301)
    assert not verify(SECRET, body, headers)  # today
    assert verify(SECRET, body, headers, now=1_700_000_000 + 3600, tolerance=7200)
    assert not verify(SECRET, body, headers, now=float("nan"))
    assert not verify(SECRET, body, headers, now=1_700_000_000, tolerance=float("nan"))


def test_one_valid_signature_among_several_is_enough() -> None:
    body = b"{}"
    headers = sign(SECRET, body, msg_id="msg_k")
    other = sign(b"rotated-out", body, msg_id="msg_k", timestamp=int(headers[TIMESTAMP_HEADER]))
    both = f"{other[SIGNATURE_HEADER]} v1a,c29tZQ== v2,xyz {headers[SIGNATURE_HEADER]}"
    assert verify(SECRET, body, {**headers, SIGNATURE_HEADER: both})
    assert not verify(SECRET, body, {**headers, SIGNATURE_HEADER: other[SIGNATURE_HEADER]})


@pytest.mark.parametrize(
    "change",
    [
        {SIGNATURE_HEADER: "v1,é"},  # non-ASCII (raised TypeError in compare_digest)
        {SIGNATURE_HEADER: "sha256=00"},
        {SIGNATURE_HEADER: "v1,not base64!"},
        {SIGNATURE_HEADER: ""},
        {SIGNATURE_HEADER: None},
        {SIGNATURE_HEADER: 7},
        {SIGNATURE_HEADER: b"v1,\xff"},
        {ID_HEADER: ""},
        {ID_HEADER: "msg_é"},
        {TIMESTAMP_HEADER: "soon"},
        {TIMESTAMP_HEADER: "-1"},
        {TIMESTAMP_HEADER: "１７"},  # fullwidth digits: isdigit(), not ASCII
        {TIMESTAMP_HEADER: "9" * 40},
    ],
)
def test_verify_says_false_to_a_malformed_header(change: dict[str, Any]) -> None:
    body = b"{}"
    headers: dict[str, Any] = {**sign(SECRET, body, msg_id="msg_x"), **change}
    assert verify(SECRET, body, headers) is False


@pytest.mark.parametrize("secret", [None, 7, ["k"], "whsec_@@@"])
def test_verify_says_false_to_a_secret_it_cannot_use(secret: Any) -> None:
    body = b"{}"
    assert verify(secret, body, sign(SECRET, body, msg_id="msg_x")) is False


_SIGNATURES = r"v1,[A-Za-z0-9+/=]{0,50}( v1,[A-Za-z0-9+/=]{0,50})*"
_header_values = st.one_of(st.none(), st.text(max_size=60), st.binary(max_size=60), st.integers(),
                           st.from_regex(_SIGNATURES, fullmatch=True))


@settings(max_examples=300, deadline=None)
@given(
    secret=st.one_of(st.binary(max_size=40), st.text(max_size=40), st.none(), st.integers()),
    body=st.one_of(st.binary(max_size=80), st.text(max_size=80), st.none()),
    headers=st.one_of(
        st.none(), st.text(max_size=10),
        st.dictionaries(st.sampled_from([ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER, "Webhook-Id", "x"]),
                        _header_values, max_size=5),
    ),
    now=st.one_of(st.none(), st.floats(allow_nan=True), st.integers(-(10**15), 10**15)),
)
def test_verify_never_raises(secret: Any, body: Any, headers: Any, now: Any) -> None:
    """Whatever reaches a receiver: False or True, never an exception."""
    assert verify(secret, body, headers, now=now) in (True, False)


def test_the_body_carries_codes_reasons_and_coordinates_and_no_draft(hook_factory: Any) -> None:
    hook = hook_factory([200])
    notifier(hook.url)(payload(), COORDS)
    ((_, raw),) = hook.requests
    assert b"ACME" not in raw
    assert b"Rivera" not in raw
    body = json.loads(raw)
    assert body["codes"] == ["content_cycle"]
    assert body["reasons"] == ["autoapprove_off", "hard:content_cycle"]
    assert (body["thread_id"], body["checkpoint_ns"], body["interrupt_id"]) == \
        ("t-1", "approve_send:1b2c", "3f2a9c")
    assert body["kind"] == "liveguard.approval"
    assert body["action"] == "send_draft"
    assert body["allowed_decisions"] == ["approve", "edit", "reject"]
    assert body["text"] == ("liveguard holds a draft for approval on thread t-1: autoapprove_off, "
                            "hard:content_cycle (interrupt 3f2a9c)")
    assert "draft" not in body


def test_the_draft_is_sent_only_when_the_user_opts_in(hook_factory: Any) -> None:
    hook = hook_factory([200])
    notifier(hook.url, include_draft=True)(payload(), COORDS)
    ((_, raw),) = hook.requests
    assert json.loads(raw)["draft"] == DRAFT


def test_a_liveness_hold_says_where_the_run_stopped(hook_factory: Any) -> None:
    hook = hook_factory([200])
    stop = liveness_request(code="tool_no_progress", step=3, node="model", count=3)
    notifier(hook.url, include_draft=True)(dict(stop), COORDS)
    body = json.loads(hook.requests[0][1])
    assert body["kind"] == "liveguard.liveness"
    assert (body["step"], body["node"], body["count"]) == (3, "model", 3)
    assert body["codes"] == ["tool_no_progress"]
    assert "at step 3" in body["text"]
    assert "draft" not in body


def test_the_slack_text_line_is_escaped() -> None:
    coords = Coords(thread_id="<@here> & co", checkpoint_ns="", interrupt_id=None)
    body = json.loads(WebhookNotifier(url="https://example.invalid/x", secret=SECRET).body(payload(), coords))
    assert "&lt;@here&gt; &amp; co" in body["text"]
    assert "\n" not in body["text"]


# ------------------------------------------------------------------------------ retries
def test_retries_on_5xx_with_backoff_then_succeeds(hook_factory: Any) -> None:
    hook = hook_factory([500, 503, 200])
    sleeps = Sleeps()
    outcome = notifier(hook.url, sleeps, retries=3, backoff=0.25)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=True, attempts=3, status=200)
    assert len(hook.requests) == 3
    assert len({body for _, body in hook.requests}) == 1  # the same body each time
    assert len({headers[ID_HEADER] for headers, _ in hook.requests}) == 1  # one id: receivers deduplicate
    for headers, body in hook.requests:  # each attempt signed on its own (a fresh timestamp)
        assert verify(SECRET, body, headers)
    assert sleeps.delays == [0.25, 0.5]


def test_the_webhook_id_names_the_hold() -> None:
    """Two processes notifying the same hold send the same id; another hold, another id."""
    same = message_id(payload(), COORDS)
    assert message_id(payload(), Coords(*astuple(COORDS))) == same
    assert message_id(payload(), Coords("t-1", "approve_send:1b2c", "other")) != same
    unknown = Coords("t-1", "", None)
    assert message_id(payload(), unknown) != message_id(payload(), unknown)  # random when unnamed


def test_429_is_retried_and_the_retries_are_bounded(hook_factory: Any) -> None:
    hook = hook_factory([429])
    sleeps = Sleeps()
    outcome = notifier(hook.url, sleeps, retries=2, backoff=1.0)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=False, attempts=3, status=429, error="http_429")
    assert len(hook.requests) == 3
    assert sleeps.delays == [1.0, 2.0]


def test_a_4xx_answer_is_final(hook_factory: Any) -> None:
    hook = hook_factory([403, 200])
    sleeps = Sleeps()
    outcome = notifier(hook.url, sleeps, retries=3)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=False, attempts=1, status=403, error="http_403")
    assert len(hook.requests) == 1
    assert sleeps.delays == []


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_closed_port_gives_up_after_the_bounded_attempts() -> None:
    sleeps = Sleeps()
    outcome = notifier(f"http://127.0.0.1:{closed_port()}/x", sleeps, retries=2)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=False, attempts=3, error="transport:ConnectError")
    assert len(sleeps.delays) == 2


def test_a_server_that_never_answers_times_out_each_attempt(hook_factory: Any) -> None:
    hook = hook_factory([200], hang=True)
    outcome = notifier(hook.url, timeout=0.2, retries=1)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=False, attempts=2, error="timeout")
    assert len(hook.requests) == 2


def test_a_trickling_receiver_is_cut_off_at_the_attempt_deadline(hook_factory: Any) -> None:
    """Issue 28, case 5: every byte comes well within a read timeout, so only a deadline for the
    whole attempt stops it; ``timeout=1`` used to wait for the receiver to finish (past 8 s)."""
    hook = hook_factory([200], trickle=True)
    outcome = notifier(hook.url, timeout=1, retries=0)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=False, attempts=1, error="timeout")
    assert not hook.finished.is_set(), "the notifier waited for the trickling receiver"


def test_the_webhook_can_be_called_from_a_thread_running_an_event_loop(hook_factory: Any) -> None:
    """A synchronous call inside ``async def`` (a user's own node) still delivers, off that loop."""
    import asyncio

    hook = hook_factory([200])

    async def inside() -> NotifyOutcome:
        return notifier(hook.url)(payload(), COORDS)

    assert asyncio.run(inside()) == NotifyOutcome(ok=True, attempts=1, status=200)
    ((headers, body),) = hook.requests
    assert verify(SECRET, body, headers)


# ------------------------------------------------------------------------------ off the critical path
def test_notify_later_returns_at_once_and_flush_waits_for_the_worker() -> None:
    """The caller never waits for a notifier; the payload is copied when queued."""
    release = threading.Event()
    seen: list[tuple[Mapping[str, Any], Coords]] = []

    def slow(shown: Mapping[str, Any], coords: Coords, /) -> None:
        release.wait(30)
        seen.append((shown, coords))

    shown = payload()
    assert notify_later([slow], shown, COORDS)
    shown["codes"].append("changed after")
    assert seen == []  # slow() is still waiting: notify_later did not
    release.set()
    assert flush(30)
    assert seen == [(payload(), COORDS)]


def test_the_worker_notifies_once_the_hold_is_stored_and_never_loses_it() -> None:
    stored = threading.Event()
    woken: list[bool] = []

    def record(shown: Mapping[str, Any], coords: Coords, /) -> None:
        woken.append(stored.is_set())

    assert notify_later([record], payload(), COORDS, ready=stored.is_set)
    stored.set()
    assert flush(30)
    assert woken == [True]
    # never confirmed (a saver that cannot say): notified all the same, after the bounded wait
    assert notify_later([record], payload(), COORDS, ready=lambda: False, store_wait=0.05)

    def broken() -> bool:
        raise RuntimeError("saver closed")

    assert notify_later([record], payload(), COORDS, ready=broken)
    assert flush(30)
    assert len(woken) == 3


def test_a_full_queue_drops_the_notification_not_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    calls: list[Coords] = []

    def blocked(shown: Mapping[str, Any], coords: Coords, /) -> None:
        release.wait(30)
        calls.append(coords)

    try:
        with caplog.at_level(logging.WARNING, logger="liveguard.notify"):
            queued = [notify_later([blocked], payload(), COORDS) for _ in range(MAX_PENDING + 2)]
    finally:
        release.set()
    assert flush(30)
    assert queued.count(False) >= 1
    assert len(calls) == queued.count(True)
    assert "failed=queue_full" in caplog.text
    assert "ACME" not in caplog.text


# ------------------------------------------------------------------------------ building one
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"url": "http://hooks.example.com/x"}, "https required for non-loopback host hooks.example.com"),
        ({"url": "ftp://127.0.0.1/x"}, "expected an http(s) URL"),
        ({"url": "https:///x"}, "expected an http(s) URL"),
        ({"secret": b""}, "webhook secret"),
        ({"timeout": 0}, "webhook timeout"),
        ({"timeout": True}, "webhook timeout"),
        ({"retries": 11}, "webhook retries"),
        ({"retries": 1.5}, "webhook retries"),
        ({"backoff": -1}, "webhook backoff"),
    ],
)
def test_a_bad_setting_is_refused_when_built(options: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"url": "https://hooks.example.com/x", "secret": SECRET, **options}
    with pytest.raises(NotifierError, match=message.replace("(", r"\(").replace(")", r"\)")):
        WebhookNotifier(**settings)


def test_https_and_loopback_http_are_accepted_and_the_repr_hides_the_token() -> None:
    hook = WebhookNotifier(url="https://hooks.slack.com/services/T0/B0/tok3n", secret="k")
    assert hook.secret == b"k"
    assert "tok3n" not in repr(hook)
    assert "hooks.slack.com" in repr(hook)
    assert "k'" not in repr(hook)
    WebhookNotifier(url="http://localhost:9/x", secret="k")
    WebhookNotifier(url="http://[::1]:9/x", secret="k")


# ------------------------------------------------------------------------------ notify_all
def test_notify_all_runs_every_notifier_and_never_raises(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Coords] = []

    def broken(payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        raise RuntimeError(DRAFT)

    def quiet(payload: Mapping[str, Any], coords: Coords, /) -> None:
        seen.append(coords)

    dead = notifier(f"http://127.0.0.1:{closed_port()}/hooks/tok3n", retries=0)
    with caplog.at_level(logging.WARNING, logger="liveguard.notify"):
        outcomes = notify_all([broken, dead, quiet], payload(), COORDS)
    assert outcomes == [
        NotifyOutcome(ok=False, attempts=1, error="raised:RuntimeError"),
        NotifyOutcome(ok=False, attempts=1, error="transport:ConnectError"),
        NotifyOutcome(ok=True, attempts=1),
    ]
    assert seen == [COORDS]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert len(caplog.records) == 2
    assert "raised:RuntimeError" in logged
    assert "thread=t-1 interrupt=3f2a9c" in logged
    assert "ACME" not in logged
    assert "tok3n" not in logged


class State(TypedDict, total=False):
    draft: str
    sent: bool


def test_a_dead_webhook_never_releases_the_hold(hook_factory: Any) -> None:
    """The approval interrupt stays pending and nothing is sent when the webhook never answers."""
    hook = hook_factory([200], hang=True)
    outcomes: list[NotifyOutcome] = []
    webhook = notifier(hook.url, timeout=0.2, retries=0)

    def recording(payload: Mapping[str, Any], coords: Coords, /) -> NotifyOutcome:
        outcomes.append(webhook(payload, coords))
        return outcomes[-1]

    def review(state: State) -> dict[str, Any]:
        ask(approval_request(state["draft"], reasons=["autoapprove_off"]), notifiers=[recording])
        return {"sent": True}

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "dead-hook"}}
    graph.invoke({"draft": DRAFT}, config)
    state = graph.get_state(config)
    assert len(state.interrupts) == 1  # held before the webhook gave up
    assert flush(30)
    assert outcomes == [NotifyOutcome(ok=False, attempts=1, error="timeout")]
    assert len(state.interrupts) == 1
    assert not state.values.get("sent")
    body = json.loads(hook.requests[0][1])
    assert body["interrupt_id"] == state.interrupts[0].id
    assert body["thread_id"] == "dead-hook"


def test_coords_outside_a_graph_are_unknown_not_an_error() -> None:
    assert coords_of(None) == Coords(thread_id=None, checkpoint_ns="", interrupt_id=None)
    assert coords_of({"configurable": {"thread_id": 7, "checkpoint_ns": "a:1"}}) == \
        Coords(thread_id="7", checkpoint_ns="a:1", interrupt_id=None)
