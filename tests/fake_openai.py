"""A real, local, scripted OpenAI-compatible HTTP server for tests.

Not a mock of the client: the ``openai`` SDK talks HTTP to it, so retries, timeouts and
status handling are the SDK's own. ``POST /v1/chat/completions`` and ``POST
/chat/completions`` answer from a queue of :class:`Reply` items, then from a default.
Every request is recorded (path, parsed JSON body, headers). It speaks HTTP/1.0 (one
request per connection) unless ``keep_alive=True``: then HTTP/1.1, and clients keep
connections open as they would with a real API. Every wait is bounded:
delayed replies wake early at shutdown, handler sockets time out, and ``close()`` joins
its threads with a deadline.

Use the ``fake_openai`` fixture (pytest loads it through ``tests/conftest.py``)::

    def test_x(fake_openai: FakeOpenAI) -> None:
        fake_openai.enqueue(Reply.error(429), Reply.answer({"score": 1, ...}))
        ... JudgeConfig(base_url=fake_openai.base_url, api_key="k", ...) ...
        assert len(fake_openai.requests) == 2
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import pytest

__all__ = ["DEFAULT_ANSWER", "FakeOpenAI", "RecordedRequest", "Reply", "fake_openai", "free_port"]

PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
DEFAULT_ANSWER: Mapping[str, Any] = {"score": 0.5, "confidence": 0.5, "reason": "default fake answer"}
# openai honours retry-after-ms first; "retry-after: 0" alone is NOT a zero wait for it (it
# needs a positive value, else it falls back to 0.5 s exponential backoff).
FAST_RETRY: Mapping[str, str] = {"retry-after-ms": "1", "retry-after": "0"}
_CLOSE_DEADLINE = 3.0  # seconds close() waits for the serving and handler threads
_SOCKET_TIMEOUT = 5.0  # a handler never blocks longer than this on a silent client


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods.

    ``answer`` becomes the assistant message content, JSON-encoded; ``content`` is sent
    verbatim as the content (malformed JSON); ``status`` != 200 sends ``body`` as an
    error; ``raw`` replaces the whole HTTP body; ``delay`` is waited before answering.
    """

    answer: Mapping[str, Any] | None = None
    content: str | None = None
    status: int = 200
    body: Any = None
    raw: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def json(cls, answer: Mapping[str, Any], *, delay: float = 0.0) -> Reply:
        return cls(answer=answer, delay=delay)

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0) -> Reply:
        return cls(content=content, delay=delay)

    @classmethod
    def completion(cls, body: Mapping[str, Any]) -> Reply:
        """A 200 whose JSON body is ``body`` as given: another server's answer shape."""
        return cls(body=body)

    @classmethod
    def error(
        cls, status: int, body: Any = None, *, headers: Mapping[str, str] | None = None, delay: float = 0.0
    ) -> Reply:
        """An HTTP error. 429 and 5xx carry ``FAST_RETRY`` headers unless ``headers`` is given."""
        if headers is None:
            headers = FAST_RETRY if status == 429 or status >= 500 else {}
        if body is None:
            body = {"error": {"message": f"fake error {status}", "type": "fake_error", "code": status}}
        return cls(status=status, body=body, headers=headers, delay=delay)

    @classmethod
    def slow(cls, delay: float, answer: Mapping[str, Any] | None = None) -> Reply:
        """Wait ``delay`` seconds (woken early at shutdown), then answer."""
        return cls(answer=answer, delay=delay)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: Any  # the parsed JSON body, or None if it was not JSON
    headers: Mapping[str, str]  # lower-cased names

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    def content(self, role: str) -> str:
        """The content of the first message with this role ("" if none)."""
        return next((str(m.get("content")) for m in self.messages if m.get("role") == role), "")


Responder = Callable[[RecordedRequest], Reply]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # close() joins the handler threads itself, with a deadline

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.handler_threads: list[threading.Thread] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        with self.fake._lock:
            self.handler_threads = [t for t in self.handler_threads if t.is_alive()]
            self.handler_threads.append(thread)
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Count handler bugs (close() reports them); a client hanging up is not one."""
        if not isinstance(sys.exc_info()[1], OSError):
            self.fake._note_error()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = _SOCKET_TIMEOUT

    def setup(self) -> None:
        super().setup()
        # HTTP/1.0: one request per connection. HTTP/1.1: the client may keep it open
        # (like a real API), and close() then shuts it to wake this thread.
        self.protocol_version = "HTTP/1.1" if self.server.fake.keep_alive else "HTTP/1.0"
        self.server.fake._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._closed(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the stdlib's per-request stderr lines."""

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        recorded = RecordedRequest(self.path, body, {k.lower(): v for k, v in self.headers.items()})
        fake._record(recorded)
        if self.path not in PATHS:
            self._send(404, {"error": {"message": "not found", "type": "fake_error"}}, {})
            return
        reply = fake._next_reply(recorded)
        fake._enter()
        try:
            if reply.delay > 0:
                fake._stopping.wait(reply.delay)
        finally:
            fake._leave()  # before writing: the client cannot send its next request earlier
        model = body.get("model", "fake") if isinstance(body, dict) else "fake"
        if reply.raw is not None:
            self._send_bytes(reply.status, reply.raw.encode(), "text/plain", reply.headers)
        elif reply.status != 200 or reply.body is not None:  # an error, or a whole body as given
            self._send(reply.status, reply.body, reply.headers)
        else:
            content = reply.content
            if content is None:
                content = json.dumps(reply.answer if reply.answer is not None else fake.default_answer)
            self._send(200, _completion(fake._next_id(), model, content), reply.headers)

    def _send(self, status: int, payload: Any, headers: Mapping[str, str]) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: Mapping[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            pass  # the client gave up (timeout) and closed the connection: expected


def _completion(n: int, model: str, content: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


class FakeOpenAI:
    """The server. ``start()``/``close()`` or use it as a context manager."""

    def __init__(
        self,
        default_answer: Mapping[str, Any] | None = None,
        responder: Responder | None = None,
        *,
        keep_alive: bool = False,
    ) -> None:
        self.default_answer: Mapping[str, Any] = dict(default_answer or DEFAULT_ANSWER)
        self.responder = responder  # called when the queue is empty; overrides default_answer
        self.keep_alive = keep_alive  # speak HTTP/1.1 and let clients reuse connections
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._ids = 0
        self._errors = 0
        self._connections = 0
        self._open: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        if self._server is not None:
            raise RuntimeError("already started")
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Wake delayed replies, stop serving, join every thread within a deadline."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        deadline = time.monotonic() + _CLOSE_DEADLINE
        server.shutdown()  # returns once serve_forever has seen the flag (<= poll_interval)
        server.server_close()
        with self._lock:
            still_open = list(self._open)
        for conn in still_open:  # idle keep-alive connections: wake their handler threads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            handlers = list(server.handler_threads)
        for handler in handlers:
            handler.join(max(0.0, deadline - time.monotonic()))
        self._server = self._thread = None
        stuck = [t for t in (thread, *handlers) if t.is_alive()]
        if stuck:
            raise RuntimeError(f"fake_openai: {len(stuck)} thread(s) still running after close()")
        if self._errors:
            raise RuntimeError(f"fake_openai: {self._errors} request handler(s) raised")

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- scripting and inspection -----------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``; the server also answers without ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def max_in_flight(self) -> int:
        """The most requests that were being answered at the same time."""
        with self._lock:
            return self._max_in_flight

    @property
    def connections(self) -> int:
        """TCP connections accepted so far (with ``keep_alive``, fewer than requests)."""
        with self._lock:
            return self._connections

    @property
    def open_connections(self) -> int:
        """Connections the server still has open (a closed client leaves none)."""
        with self._lock:
            return len(self._open)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._queue)

    # -- used by the handler threads --------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.responder(request) if self.responder is not None else Reply()

    def _opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections += 1
            self._open.add(conn)

    def _closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.discard(conn)

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _note_error(self) -> None:
        with self._lock:
            self._errors += 1


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`, closed (threads joined) at teardown."""
    with FakeOpenAI() as server:
        yield server


def free_port() -> int:
    """A port nothing listens on (for connection-refused tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
