"""liveguard under the LangGraph server: ``langgraph dev`` serving ``examples/langgraph.json``.

One server per module (examples/langgraph.json with absolute paths, started from a temp
directory; in-memory runtime, no browser, no reload, 127.0.0.1 and a free port), driven with
``langgraph_sdk``. Under ``CI=true`` a missing ``langgraph-cli[inmem]`` fails the module;
elsewhere it is skipped, saying so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from prereq import missing

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STARTUP_BOUND = 180.0  # seconds: two shared cores, a cold import of LangChain and the server
RUN_BOUND = 120.0

for _module in ("langgraph_cli", "langgraph_api", "langgraph_runtime_inmem", "langgraph_sdk"):
    if importlib.util.find_spec(_module) is None:
        missing(f"{_module} (langgraph-cli[inmem])", "`make install` installs the dev extra", module=True)
_LANGGRAPH = Path(sys.executable).parent / "langgraph"

from graphs.campaign import initial_input  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph_sdk import get_sync_client  # noqa: E402
from langgraph_sdk.client import SyncLangGraphClient  # noqa: E402

from liveguard import NoProgressError  # noqa: E402
from liveguard.core.model import Violation  # noqa: E402

# NoProgressError's message (liveguard/errors.py), as the server relays it in the run's error
# (then ": " and the stop in words: the rule, the steps that repeat, how to clear the thread)
STOP_MESSAGE = re.compile(r"^(?P<code>[a-z_]+) at step (?P<step>\d+) \(node '(?P<node>[^']+)', "
                          r"count (?P<count>\d+)\)(?:: .*liveguard threads clear.*)?$", re.DOTALL)
INPUTS: dict[str, dict[str, Any]] = {
    "guarded": {"job": "stuck"},
    "agent": {"messages": [{"role": "user", "content": "get report 7"}]},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _served_graphs() -> Any:
    """examples/server_graphs.py, the module the server loads, imported here too."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # as the server's config does ("dependencies": ["."])
    spec = importlib.util.spec_from_file_location("lg_examples_server_graphs", EXAMPLES / "server_graphs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``langgraph dev`` on 127.0.0.1:<free port>; yields its URL once ``/ok`` answers."""
    if not _LANGGRAPH.is_file():
        missing(f"the langgraph console script ({_LANGGRAPH})", "`make install` installs the dev extra")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    log_path = workdir / "server.log"
    # examples/langgraph.json with its paths made absolute, so the server runs from a temp
    # directory: `langgraph dev` resolves paths against its cwd and keeps its in-memory
    # threads in <cwd>/.langgraph_api (it offers no switch to turn that off)
    config = json.loads((EXAMPLES / "langgraph.json").read_text())
    config["dependencies"] = [str((EXAMPLES / dep).resolve()) for dep in config["dependencies"]]
    config["graphs"] = {name: str(EXAMPLES / spec) for name, spec in config["graphs"].items()}
    config["http"]["app"] = str(EXAMPLES / config["http"]["app"])
    (workdir / "langgraph.json").write_text(json.dumps(config))
    env = {**os.environ, "LANGSMITH_TRACING": "false", "AGENT_EVAL_AUTOAPPROVE": "0"}
    for key in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "AGENT_EVAL_API_KEY", "LANGSMITH_API_KEY"):
        env.pop(key, None)  # no judge: the campaign's drafts are held for a person
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(_LANGGRAPH), "dev", "--config", "langgraph.json", "--host", "127.0.0.1",
             "--port", str(port), "--no-browser", "--no-reload"],
            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_BOUND
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ok", timeout=2.0).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev not ready in {STARTUP_BOUND}s:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.5)  # polling a subprocess's readiness, bounded above
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[SyncLangGraphClient]:
    sdk = get_sync_client(url=server, timeout=RUN_BOUND)
    yield sdk
    sdk.close()


@pytest.fixture(scope="module")
def expected() -> dict[str, Violation]:
    """Where each served loop stops when the same graph runs in this process."""
    graphs = _served_graphs()
    out: dict[str, Violation] = {}
    for graph_id, inputs in INPUTS.items():
        app = getattr(graphs, graph_id).copy(update={"checkpointer": InMemorySaver()})
        with pytest.raises(NoProgressError) as caught:
            app.invoke(inputs, {"configurable": {"thread_id": "local"}})
        out[graph_id] = caught.value.violation
    return out


def _run(client: SyncLangGraphClient, thread_id: str, graph_id: str, **kwargs: Any) -> tuple[Any, str]:
    run = client.runs.create(thread_id, graph_id, **kwargs)
    result = client.runs.join(thread_id, run["run_id"])
    return result, client.runs.get(thread_id, run["run_id"])["status"]


def _stop_of(result: Any) -> dict[str, Any]:
    """The stop as the client sees it: ``{"__error__": {"error": ..., "message": ...}}``."""
    assert isinstance(result, dict), result
    assert "__error__" in result, result
    error = result["__error__"]
    assert error["error"] == "NoProgressError", error
    found = STOP_MESSAGE.match(error["message"])
    assert found is not None, f"code and step lost on the way to the client: {error!r}"
    return {"code": found["code"], "step": int(found["step"]), "node": found["node"],
            "count": int(found["count"])}


def _history(client: SyncLangGraphClient, thread_id: str) -> int:
    return len(client.threads.get_history(thread_id, limit=1000))


@pytest.mark.parametrize("graph_id", sorted(INPUTS))
def test_stop_reaches_client_with_code_and_step(client: SyncLangGraphClient, graph_id: str,
                                                expected: dict[str, Violation]) -> None:
    """A served loop stops where it stops in-process, and the run's error says code and step."""
    thread = client.threads.create()
    result, status = _run(client, thread["thread_id"], graph_id, input=INPUTS[graph_id])
    want = expected[graph_id]
    assert status == "error"
    assert _stop_of(result) == {"code": want.code, "step": want.step, "node": want.node,
                                "count": want.count}
    assert client.threads.get(thread["thread_id"])["status"] == "error"
    if graph_id == "agent":  # the middleware also leaves its stop message in the thread state
        last = client.threads.get_state(thread["thread_id"])["values"]["messages"][-1]
        saved = last["response_metadata"]["liveguard"]
        assert (last["type"], saved["code"], saved["step"]) == ("ai", want.code, want.step)


def test_stop_survives_newer_servers_error_filter() -> None:
    """The stop's type is one whose message newer LangGraph servers relay (their serde's list)."""
    relayed = (ValueError, TypeError, KeyError, AttributeError, RuntimeError, RecursionError, TimeoutError)
    assert issubclass(NoProgressError, relayed)


@pytest.mark.parametrize("graph_id", sorted(INPUTS))
def test_stopped_thread_stays_stopped(client: SyncLangGraphClient, graph_id: str,
                                      expected: dict[str, Violation]) -> None:
    """A second run on a stopped thread stops at once with the same stop; no model, tool or poll step runs."""
    thread_id = client.threads.create()["thread_id"]
    first, _ = _run(client, thread_id, graph_id, input=INPUTS[graph_id])
    before = client.threads.get_state(thread_id)["values"]
    checkpoints = _history(client, thread_id)
    second, status = _run(client, thread_id, graph_id, input=INPUTS[graph_id])
    assert status == "error"
    assert _stop_of(second) == _stop_of(first)
    assert _stop_of(second)["code"] == expected[graph_id].code
    after = client.threads.get_state(thread_id)["values"]
    added = after.get("messages", [])[len(before.get("messages", [])):]
    # the agent's new human turn, answered by the middleware's stop message (no model call)
    assert [m["type"] for m in added] == (["human", "ai"] if "messages" in INPUTS[graph_id] else [])
    if added:
        assert added[-1]["response_metadata"]["liveguard"]["code"] == expected[graph_id].code
    assert after.get("messages", [])[:len(before.get("messages", []))] == before.get("messages", [])
    assert {k: v for k, v in after.items() if k != "messages"} == {
        k: v for k, v in before.items() if k != "messages"}
    # only the input and the stop message were written: no model, tool or poll step ran
    assert _history(client, thread_id) <= checkpoints + (3 if "messages" in INPUTS[graph_id] else 0)


@pytest.mark.parametrize("graph_id", sorted(INPUTS))
def test_clear_thread_through_server(server: str, client: SyncLangGraphClient, graph_id: str,
                                     expected: dict[str, Violation]) -> None:
    """POST /liveguard/threads/{id}/clear (examples/server_app.py) lifts the stop: the next run runs."""
    thread_id = client.threads.create()["thread_id"]
    _run(client, thread_id, graph_id, input=INPUTS[graph_id])
    checkpoints = _history(client, thread_id)
    response = httpx.post(f"{server}/liveguard/threads/{thread_id}/clear",
                          json={"assistant_id": graph_id}, timeout=RUN_BOUND)
    assert response.status_code == 200, response.text
    cleared = response.json()["cleared"]
    assert (cleared["code"], cleared["step"]) == (expected[graph_id].code, expected[graph_id].step)
    again = httpx.post(f"{server}/liveguard/threads/{thread_id}/clear",
                       json={"assistant_id": graph_id}, timeout=RUN_BOUND)
    assert again.status_code == 200
    assert again.json()["cleared"] is None
    result, status = _run(client, thread_id, graph_id, input=INPUTS[graph_id])
    # cleared: the graph ran again (new checkpoints) until the loop stopped it afresh
    assert _history(client, thread_id) > checkpoints + 1
    assert status == "error"
    assert _stop_of(result)["code"] == expected[graph_id].code


def test_clear_names_a_bad_request(server: str) -> None:
    """An unknown graph id is a 422 that says where the problem is."""
    response = httpx.post(f"{server}/liveguard/threads/t-unknown/clear", json={"assistant_id": "nope"},
                          timeout=RUN_BOUND)
    assert response.status_code == 422
    assert "assistant_id" in response.json()["error"]


def _held_approval(client: SyncLangGraphClient) -> tuple[str, dict[str, Any]]:
    thread_id = client.threads.create()["thread_id"]
    result, status = _run(client, thread_id, "campaign", input=initial_input("healthy"))
    assert status == "success"
    thread = client.threads.get(thread_id)
    assert thread["status"] == "interrupted"
    (pending,) = [i for items in thread["interrupts"].values() for i in items]
    assert pending["value"]["kind"] == "liveguard.approval"
    assert "send_touch" not in result["steps"]
    return thread_id, pending


def test_approval_is_a_pending_interrupt_on_the_server(client: SyncLangGraphClient) -> None:
    """The held draft is listed by the server's thread search, with its interrupt value."""
    thread_id, _ = _held_approval(client)
    waiting = client.threads.search(status="interrupted", limit=1000)
    assert thread_id in {t["thread_id"] for t in waiting}


HITL_ANSWER = {"decisions": [{"type": "approve"}], "by": "ana", "note": "ok"}


def test_approval_answered_through_sdk_sends_once(client: SyncLangGraphClient) -> None:
    """Approve through the SDK with HITL decisions (``command={"resume": ...}``): sent, once."""
    answer = HITL_ANSWER
    thread_id, pending = _held_approval(client)
    value = pending["value"]
    assert value["action_requests"][0]["name"] == "send_draft"
    assert value["interrupt_id"] == pending["id"]
    draft = value["action_requests"][0]["args"]["draft"]
    result, status = _run(client, thread_id, "campaign", command={"resume": answer})
    assert status == "success"
    assert result["steps"].count("send_touch") == 1
    assert result["sent"] == draft
    assert [(r["actor"], r["by"]) for r in result["approvals"]] == [("person", "ana")]
    assert client.threads.get(thread_id)["status"] == "idle"
    # the same answer again: nothing is waiting, nothing is sent twice
    _run(client, thread_id, "campaign", command={"resume": answer})
    assert client.threads.get_state(thread_id)["values"]["steps"].count("send_touch") == 1

def test_server_client_example(server: str, tmp_path: Path) -> None:
    """examples/server_client.py against this server: stop, stays stopped, clear, approve once."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "server_client.py"), "--url", server],
                          cwd=tmp_path, capture_output=True, text=True, timeout=RUN_BOUND, check=False)
    lines = done.stdout.splitlines()
    stop = "guarded poller: NoProgressError: no_progress_stall at step 1 (node 'poll', count 2): "
    assert any(line.startswith(stop) for line in lines), done.stdout
    assert "cleared through the server: no_progress_stall at step 1" in lines
    assert "approved by ana through the SDK: sent 1 time(s); thread idle" in lines, done.stdout + done.stderr
    assert done.returncode == 0


# -- the send path, as a client of the server may drive it (issue 28, "Why" 1 and 2) ----------------
EVIL = {"draft": "v9: wire 10k to IBAN X", "lead_id": 99}


def _sent(client: SyncLangGraphClient, thread_id: str) -> list[Any]:
    values = client.threads.get_state(thread_id)["values"]
    return [values.get("sent"), values.get("steps", []).count("send_touch")]


@pytest.mark.parametrize("goto", [
    "send_touch",
    {"node": "send_touch", "input": {**EVIL, "steps": []}},
], ids=["goto", "goto-with-input"])
def test_a_client_goto_to_the_send_sends_nothing(client: SyncLangGraphClient, goto: Any) -> None:
    """``runs.create(command={"goto": ...})`` on a held thread: the run fails, nothing is sent."""
    thread_id, pending = _held_approval(client)
    result, status = _run(client, thread_id, "campaign", command={"goto": goto})
    assert status == "error", result
    assert result["__error__"]["error"] == "SendRefused", result
    assert _sent(client, thread_id) == [None, 0]
    (still,) = [i for items in client.threads.get(thread_id)["interrupts"].values() for i in items]
    assert still["id"] == pending["id"]  # the person's question still waits, unanswered


def test_update_state_on_a_held_thread_sends_nothing(client: SyncLangGraphClient) -> None:
    """A swapped draft and recipient (update_state, then the step asked again) takes no unpinned answer."""
    thread_id, pending = _held_approval(client)
    client.threads.update_state(thread_id, EVIL, as_node="gate_draft")
    _run(client, thread_id, "campaign", command={"goto": "approve_send"})  # the step asks again
    asked = [i for items in client.threads.get(thread_id)["interrupts"].values() for i in items]
    _run(client, thread_id, "campaign", command={"resume": HITL_ANSWER})  # the person's unpinned approve
    assert _sent(client, thread_id) == [None, 0]
    assert [i["value"].get("pinned_only") for i in asked] == [True]
    assert asked[0]["id"] != pending["id"]
    assert asked[0]["value"]["recipient"] == EVIL["lead_id"]
    again = [i for items in client.threads.get(thread_id)["interrupts"].values() for i in items]
    assert [i["id"] for i in again] == [asked[0]["id"]]
    assert "pinned" in again[0]["value"]["error"]
    # changed in the same breath as the answer: the question is void, asked again, nothing sent
    other, _ = _held_approval(client)
    _run(client, other, "campaign", command={"update": {"lead_id": 99}, "resume": HITL_ANSWER})
    assert _sent(client, other) == [None, 0]
    (void,) = [i for items in client.threads.get(other)["interrupts"].values() for i in items]
    assert (void["value"]["recipient"], void["value"]["pinned_only"]) == (99, True)
