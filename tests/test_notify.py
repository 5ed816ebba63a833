"""liveguard.notify: waking a person with a signed webhook (issue 19, item 3).

Every test talks to a real HTTP server on 127.0.0.1 (http.server in a thread).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import socket
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from liveguard.hitl import approval_request, ask, liveness_request
from liveguard.notify import (
    SIGNATURE_HEADER,
    Coords,
    NotifierError,
    NotifyOutcome,
    WebhookNotifier,
    coords_of,
    notify_all,
    verify,
)

SECRET = b"s3cret-key"
DRAFT = "Dear Ms. Rivera, your ACME-SECRET-7f3a order ships Monday."
COORDS = Coords(thread_id="t-1", checkpoint_ns="approve_send:1b2c", interrupt_id="3f2a9c")


def payload() -> dict[str, Any]:
    return dict(approval_request(DRAFT, reasons=["autoapprove_off", "hard:content_cycle"],
                                 codes=["content_cycle"]))


class Hook:
    """A local webhook receiver: answers with scripted statuses, or never (``hang``)."""

    def __init__(self, statuses: list[int], *, hang: bool = False) -> None:
        self.statuses = statuses
        self.hang = hang
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.release = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if hook.hang:
                    hook.release.wait(30)  # never answers while the client waits
                    return
                status = hook.statuses[min(len(hook.requests), len(hook.statuses)) - 1]
                self.send_response(status)
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


@pytest.fixture
def hook_factory() -> Iterator[Any]:
    made: list[Hook] = []

    def make(statuses: list[int], *, hang: bool = False) -> Hook:
        made.append(Hook(statuses, hang=hang))
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
def test_the_signature_verifies_over_the_exact_body(hook_factory: Any) -> None:
    hook = hook_factory([200])
    outcome = notifier(hook.url)(payload(), COORDS)
    assert outcome == NotifyOutcome(ok=True, attempts=1, status=200)
    ((headers, body),) = hook.requests
    expected = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER.lower()] == expected
    assert headers["content-type"] == "application/json"
    assert verify(SECRET, body, headers[SIGNATURE_HEADER.lower()])
    assert not verify(SECRET, body + b" ", headers[SIGNATURE_HEADER.lower()])
    assert not verify(b"other", body, headers[SIGNATURE_HEADER.lower()])
    assert not verify(SECRET, body, None)


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
    assert len({body for _, body in hook.requests}) == 1  # the same signed bytes each time
    assert sleeps.delays == [0.25, 0.5]


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
