"""A local stand-in for the LangSmith API: a real HTTP server on 127.0.0.1.

It serves the runs of ``golden_datasets/langsmith/*.json`` (one project per file, named
after the file: ``campaign``, ``coder_reviewer``, ``sql_agent``) and implements only the
endpoints that ``langsmith.Client`` 0.15 calls for

* ``list_runs(project_name=..., is_root=True)``: ``GET /sessions?name=...`` (the
  project by name, ``read_project``), then ``POST /runs/query`` (cursor paginated);
* ``read_run(run_id, load_child_runs=True)``: ``GET /info`` (the client reads the
  instance flags once), ``GET /runs/{id}``, then ``POST /runs/query`` with
  ``trace``/``session_id``/``is_root=false`` for the child runs;
* ``create_feedback(...)``: ``POST /feedback``; the parsed bodies are kept in
  :attr:`FakeLangSmith.feedback`.

Any other request gets a 404 and is recorded in :attr:`FakeLangSmith.unexpected`.
Clients made by :meth:`FakeLangSmith.client` point at this server only, with
``auto_batch_tracing=False`` (no background thread, feedback goes straight to
``POST /feedback``) and short timeouts; they are closed when the fixture ends.

Use it through the :func:`fake_langsmith` fixture (``tests/conftest.py`` imports it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from requests import PreparedRequest, Response
from requests.adapters import BaseAdapter

__all__ = ["EXPORTS", "FakeLangSmith", "OffHostRequestError", "fake_langsmith", "flatten", "load_exports"]

EXPORTS = Path(__file__).resolve().parent.parent / "golden_datasets" / "langsmith"
TENANT_ID = "00000000-0000-4000-8000-00000000000a"
SERVER_INFO = {
    "version": "0.10.0",
    "instance_flags": {"ch_query_enabled": True, "sdb_query_enabled": False},
}
SHUTDOWN_TIMEOUT_S = 5.0


def flatten(run: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A nested run tree as flat runs (what the API stores), ``child_runs`` removed."""
    yield {key: value for key, value in run.items() if key != "child_runs"}
    for child in run.get("child_runs") or []:
        yield from flatten(child)


@dataclass
class FakeLangSmith:
    """The server's state: projects, runs, and what clients sent."""

    projects: dict[str, str] = field(default_factory=dict)
    """Project name → session id."""
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Run id → flat run (no ``child_runs``)."""
    feedback: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    """(method, path) of every request, in arrival order."""
    unexpected: list[tuple[str, str]] = field(default_factory=list)
    page_size: int = 100
    """Runs per ``/runs/query`` page: a smaller value exercises the client's cursor loop."""
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    _clients: list[Any] = field(default_factory=list)

    def add_project(self, name: str, roots: list[Mapping[str, Any]]) -> None:
        """Serve ``roots`` (nested run trees) as project ``name``; their session ids must agree."""
        sessions = {str(root.get("session_id")) for root in roots}
        if len(sessions) != 1:
            raise ValueError(f"project {name}: runs name {len(sessions)} session ids")
        self.projects[name] = sessions.pop()
        for root in roots:
            for run in flatten(root):
                self.runs[str(run["id"])] = run

    def client(self) -> Any:
        """A ``langsmith.Client`` bound to this server only (closed by the fixture).

        Its session refuses every other host: the client's own adapter is mounted for this
        server's URL only, and a refusing adapter for every other ``http(s)://`` URL (a
        refused request is recorded in :attr:`unexpected`).
        """
        import langsmith

        client = langsmith.Client(api_url=self.url, api_key="test-key", auto_batch_tracing=False,
                                  timeout_ms=5_000)
        self._clients.append(client)
        session = client.session
        own = session.get_adapter(self.url)
        refusing = _RefusingAdapter(self)
        session.mount("http://", refusing)
        session.mount("https://", refusing)
        session.mount(f"{self.url}/", own)
        return client

    def close_clients(self) -> None:
        for client in self._clients:
            client.close(timeout=0)
        self._clients.clear()

    # -- endpoint logic (called from the handler threads, under the lock) ------------------------
    def session(self, name: str) -> list[dict[str, Any]]:
        if name not in self.projects:
            return []
        return [{
            "id": self.projects[name],
            "name": name,
            "tenant_id": TENANT_ID,
            "reference_dataset_id": None,
            "start_time": "2025-01-01T00:00:00+00:00",
        }]

    def query(self, body: Mapping[str, Any]) -> dict[str, Any]:
        sessions = body.get("session") or []
        if body.get("session_id"):
            sessions = [*sessions, body["session_id"]]
        wanted = {str(s) for s in sessions}
        matches = [
            run for run in self.runs.values()
            if (not wanted or str(run.get("session_id")) in wanted)
            and ("is_root" not in body or (run.get("parent_run_id") is None) == bool(body["is_root"]))
            and (body.get("trace") is None or str(run.get("trace_id")) == str(body["trace"]))
        ]
        matches.sort(key=lambda run: str(run.get("dotted_order") or ""))
        if isinstance(body.get("limit"), int):
            matches = matches[: body["limit"]]
        offset = int(body.get("cursor") or 0)
        page = matches[offset: offset + self.page_size]
        more = offset + self.page_size < len(matches)
        select = body.get("select")
        if isinstance(select, list):
            page = [{k: v for k, v in run.items() if k in select or k == "id"} for run in page]
        return {"runs": page, "cursors": {"next": str(offset + self.page_size) if more else None}}


class OffHostRequestError(AssertionError):
    """A client made by :meth:`FakeLangSmith.client` tried to reach another host."""


class _RefusingAdapter(BaseAdapter):
    def __init__(self, state: FakeLangSmith) -> None:
        super().__init__()
        self.state = state

    def send(self, request: PreparedRequest, *args: Any, **kwargs: Any) -> Response:
        with self.state.lock:
            self.state.unexpected.append((str(request.method), str(request.url)))
        raise OffHostRequestError(f"refused {request.method} {request.url}: not {self.state.url}")

    def close(self) -> None:
        """Nothing to release."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read :attr:`FakeLangSmith.requests` instead."""

    def _send(self, status: int, payload: Any) -> None:
        body = orjson.dumps(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return orjson.loads(raw) if raw else {}

    def _not_found(self, method: str, path: str) -> None:
        self.server.state.unexpected.append((method, path))
        self._send(HTTPStatus.NOT_FOUND, {"detail": f"{method} {path} is not served here"})

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        state = self.server.state
        with state.lock:
            state.requests.append(("GET", parts.path))
            if parts.path == "/info":
                self._send(HTTPStatus.OK, SERVER_INFO)
            elif parts.path == "/sessions":
                name = parse_qs(parts.query).get("name", [""])[0]
                self._send(HTTPStatus.OK, state.session(name))
            elif parts.path.startswith("/runs/") and parts.path.count("/") == 2:
                run = state.runs.get(parts.path.rsplit("/", 1)[1])
                if run is None:
                    self._send(HTTPStatus.NOT_FOUND, {"detail": "run not found"})
                else:
                    self._send(HTTPStatus.OK, run)
            else:
                self._not_found("GET", parts.path)

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        state = self.server.state
        with state.lock:
            state.requests.append(("POST", parts.path))
            if parts.path == "/runs/query":
                self._send(HTTPStatus.OK, state.query(self._body()))
            elif parts.path == "/feedback":
                body = self._body()
                state.feedback.append(body)
                self._send(HTTPStatus.OK, body)
            else:
                self._not_found("POST", parts.path)

    def do_PATCH(self) -> None:
        with self.server.state.lock:
            self._not_found("PATCH", urlsplit(self.path).path)

    def do_DELETE(self) -> None:
        with self.server.state.lock:
            self._not_found("DELETE", urlsplit(self.path).path)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: FakeLangSmith) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


def load_exports(state: FakeLangSmith, directory: Path = EXPORTS) -> None:
    for path in sorted(directory.glob("*.json")):
        state.add_project(path.stem, orjson.loads(path.read_bytes()))


@pytest.fixture
def fake_langsmith(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLangSmith]:
    """A running fake LangSmith serving the golden exports; shut down after the test."""
    for name in ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT", "LANGSMITH_RUNS_ENDPOINTS",
                 "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")
    state = FakeLangSmith()
    load_exports(state)
    server = _Server(state)
    host, port = server.server_address[:2]
    state.url = f"http://{host!s}:{port}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fake-langsmith", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.close_clients()
        server.shutdown()
        server.server_close()
        thread.join(timeout=SHUTDOWN_TIMEOUT_S)
        assert not thread.is_alive(), "fake LangSmith server did not stop"
