"""The remote embedder: the real ``openai`` client against a local ``/v1/embeddings`` server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from liveguard import Policy, Step, check_trajectory
from liveguard.core.semantic import EmbeddingError, register_embedder
from liveguard.core.semantic.remote import OpenAIEmbedder
from liveguard.evaluate.judges import JudgeConfig
from liveguard.settings import Settings


class _Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                auth = self.headers["Authorization"]
                outer.requests.append({"path": self.path, "body": body, "auth": auth})
                if outer.status != 200:
                    payload = json.dumps({"error": {"message": "boom"}}).encode()
                else:
                    # Each text becomes a vector from its length and first letter (not normalised),
                    # returned in reverse order to check that the embedder sorts by index.
                    data = [{"object": "embedding", "index": i,
                             "embedding": [float(len(t)), float(ord(t[0]) % 7), 3.0]}
                            for i, t in enumerate(body["input"])][::-1]
                    payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                                          "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=3)


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def config(server: _Server, **extra: Any) -> JudgeConfig:
    return JudgeConfig(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=5, **extra)


def test_vectors_come_back_normalised_in_input_order(server: _Server) -> None:
    embedder = OpenAIEmbedder(config(server), model="emb-small")
    vectors = embedder.embed(["abc", "hello world"])
    assert server.requests[0]["path"] == "/v1/embeddings"
    assert server.requests[0]["body"]["model"] == "emb-small"
    assert server.requests[0]["body"]["input"] == ["abc", "hello world"]
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    expected = np.array([3.0, ord("a") % 7, 3.0]) / np.linalg.norm([3.0, ord("a") % 7, 3.0])
    assert np.allclose(vectors[0], expected, atol=1e-6)


def test_the_model_name_and_keys_follow_the_judges_rules(server: _Server) -> None:
    env = {"AGENT_EVAL_BASE_URL": server.base_url, "AGENT_EVAL_API_KEY": "sk-env",
           "AGENT_EVAL_EMBEDDING_MODEL": "my-embedder", "AGENT_EVAL_MAX_RETRIES": "0"}
    embedder = OpenAIEmbedder.from_settings(Settings.from_env(env))
    assert embedder.name == "openai:my-embedder"
    embedder.embed(["x"])
    assert server.requests[-1]["auth"] == "Bearer sk-env"
    # A provider key goes only to its own host (the judges' key/host rule): not to this server,
    # which is on loopback and so is asked without a key (the client's placeholder).
    foreign = {"AGENT_EVAL_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-openai"}
    OpenAIEmbedder.from_settings(Settings.from_env(foreign)).embed(["x"])
    assert server.requests[-1]["auth"] == "Bearer no-key"
    remote = {"AGENT_EVAL_BASE_URL": "https://embed.example.com/v1", "OPENAI_API_KEY": "sk-openai"}
    with pytest.raises(EmbeddingError, match="no_api_key"):
        OpenAIEmbedder.from_settings(Settings.from_env(remote)).embed(["x"])
    assert len(server.requests) == 2


def test_kill_switch_and_missing_key_make_no_request(server: _Server) -> None:
    with pytest.raises(EmbeddingError, match="kill_switch"):
        OpenAIEmbedder(config(server, kill_switch=True)).embed(["x"])
    with pytest.raises(EmbeddingError, match="no_api_key"):
        OpenAIEmbedder(JudgeConfig(base_url="https://embed.example.com/v1")).embed(["x"])
    assert server.requests == []


def test_a_server_error_is_an_error_code_and_the_run_records_missing_evidence(server: _Server) -> None:
    server.status = 500
    with pytest.raises(EmbeddingError, match="http_5xx"):
        OpenAIEmbedder(config(server)).embed(["x"])
    register_embedder("remote-test", lambda: OpenAIEmbedder(config(server)))
    run = [Step(node="a", summary="first message"), Step(node="a", summary="second message")]
    found = check_trajectory(run, Policy(semantic=True, semantic_embedder="remote-test"))
    assert [(v.code, v.detail["reason"]) for v in found] == [("semantic_unavailable", "http_5xx")]
