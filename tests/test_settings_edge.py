"""Settings at the edge (issue 20, item 1): only ``settings.py`` reads the environment, and the
sync and async twins of every public entry point agree under the same settings.

The twins run with the process environment saying one thing (``AGENT_EVAL_MAX_REVISITS=9``)
and the explicit settings another (``1``): a module below the edge that still read the
environment would see 9 and miss the a-b-a-b loop, so the twins could not both find it.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

import liveguard
from liveguard.core._monitor import Monitor, check_trajectory
from liveguard.core.model import Step, Trajectory, Verdict
from liveguard.core.policy import Policy
from liveguard.evaluate.eval_graph import aevaluate_trajectory, evaluate_trajectory
from liveguard.integrations.langsmith import (
    create_async_gate_evaluator,
    create_async_liveness_evaluator,
    create_async_verdict_evaluator,
    create_gate_evaluator,
    create_liveness_evaluator,
    create_verdict_evaluator,
)
from liveguard.live.checkpoints import DEFAULT_CHECKPOINT_URL, aopen_saver, checkpoint_url, open_saver
from liveguard.settings import Settings
from test_approval_hitl import _graph, cfg

ROOT = Path(liveguard.__file__).resolve().parent
_READERS = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def env_reads(source: str) -> list[str]:
    """``line: what`` for each place the source touches the process environment."""
    found: list[str] = []
    aliases: set[str] = set()  # local names bound to os.environ & co. by ``from os import ...``
    os_names = {"os"}
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname or a.name for a in node.names if a.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module in {"os", "posix", "nt"}:
            for alias in node.names:
                if alias.name in _READERS:
                    aliases.add(alias.asname or alias.name)
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in _READERS
                and isinstance(node.value, ast.Name) and node.value.id in os_names):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in aliases:
            found.append(f"{node.lineno}: {node.id}")
    return found


def test_the_scanner_sees_every_way_of_reading_the_environment() -> None:
    """The check below can fail: each form of reading the environment is found."""
    assert env_reads("import os\nx = os.environ.get('A')\n") == ["2: os.environ"]
    assert env_reads("import os as o\no.getenv('A')\n") == ["2: o.getenv"]
    assert env_reads("import os\nos.environb[b'A']\n") == ["2: os.environb"]
    assert env_reads("from os import environ as E\nE.get('A')\n") == [
        "1: from os import environ", "2: E"]
    assert env_reads("from os import getenv\n") == ["1: from os import getenv"]
    assert env_reads("import os\nos.path.join('a')\nenv = {}\nenv.get('A')\n") == []


def test_only_settings_reads_the_environment() -> None:
    offenders = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "settings.py":
            continue
        found = env_reads(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}
    assert env_reads((ROOT / "settings.py").read_text(encoding="utf-8"))  # the one reader


# -- the twins, under explicit settings the environment contradicts ------------------------------
LOOPING = Settings.from_env({"AGENT_EVAL_MAX_REVISITS": "1"})
ABAB = Trajectory(run_id="abab", graph="g",
                  steps=[Step(node=n, summary=f"{n} {i}") for i, n in enumerate("abab")])
TOOL_LOOP: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
for _i in range(3):  # the same search, the same empty answer: no progress
    TOOL_LOOP += [
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": f"c{_i}", "name": "search", "args": {"q": "x"}}]},
        {"role": "tool", "tool_call_id": f"c{_i}", "name": "search", "content": "no results"},
    ]


@pytest.fixture(autouse=True)
def _contrary_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AGENT_EVAL_API_KEY", "AGENT_EVAL_AUTOAPPROVE", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_EVAL_MAX_REVISITS", "9")
    monkeypatch.setenv("AGENT_EVAL_CHECKPOINT_URL", "postgresql://nowhere.invalid/x")


def _codes(verdict: Verdict) -> list[str]:
    return sorted({v.code for v in verdict.violations})


def test_the_core_never_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Monitor()`` is the defaults, whatever the environment says; settings are explicit."""
    monkeypatch.setenv("AGENT_EVAL_MAX_REVISITS", "1")
    assert Monitor().policy == Policy()
    assert check_trajectory(ABAB.steps) == []  # the defaults (3) see no loop in a-b-a-b
    assert "node_revisit_cycle" in {v.code for v in check_trajectory(ABAB.steps, LOOPING.policy(Policy()))}
    assert checkpoint_url(settings=Settings.from_env({})) == DEFAULT_CHECKPOINT_URL
    assert checkpoint_url() == "postgresql://nowhere.invalid/x"  # the edge: read, through Settings


def test_evaluate_trajectory_and_its_async_twin_agree() -> None:
    sync = evaluate_trajectory(ABAB, settings=LOOPING)
    asynchronous = asyncio.run(aevaluate_trajectory(ABAB, settings=LOOPING))
    assert "node_revisit_cycle" in _codes(sync)
    assert sync.model_dump(exclude={"evidence"}) == asynchronous.model_dump(exclude={"evidence"})


def test_the_approval_steps_sync_and_async_bodies_agree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'threads.sqlite'}"
    with open_saver(url) as saver:
        sync = _graph(saver, loop=True, settings=LOOPING).invoke({}, cfg("s"))["__interrupt__"][0].value

    async def held() -> Any:
        async with aopen_saver(url) as saver:
            graph = _graph(saver, loop=True, settings=LOOPING)
            return (await graph.ainvoke({}, cfg("a")))["__interrupt__"][0].value

    asynchronous = asyncio.run(held())

    def found(value: Any) -> tuple[list[str], list[str]]:
        request = value["action_requests"][0]
        return sorted({v["code"] for v in value["verdict"]["violations"]}), request["description"]

    assert "node_revisit_cycle" in found(sync)[0]
    assert found(asynchronous) == found(sync)


def test_the_langsmith_evaluator_twins_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The factories read Settings once, when built: each pair agrees under each environment."""
    factories = [(create_liveness_evaluator, create_async_liveness_evaluator),
                 (create_verdict_evaluator, create_async_verdict_evaluator)]
    for loop_guard, hard in (("1", ["content_cycle", "tool_no_progress"]), ("0", [])):
        monkeypatch.setenv("AGENT_EVAL_LOOP_GUARD", loop_guard)
        built = [(make_sync(), make_async()) for make_sync, make_async in factories]
        gates = create_gate_evaluator(min_runs=1), create_async_gate_evaluator(min_runs=1)
        monkeypatch.setenv("AGENT_EVAL_LOOP_GUARD", "1" if loop_guard == "0" else "0")  # too late
        for sync, asynchronous in built:
            result = sync(outputs=TOOL_LOOP)
            assert result == asyncio.run(asynchronous(outputs=TOOL_LOOP))
            assert result["metadata"]["hard_codes"] == hard, (sync.__name__, loop_guard)
        gate = gates[0](outputs=[TOOL_LOOP])
        assert gate == asyncio.run(gates[1](outputs=[TOOL_LOOP]))
        assert gate["value"] == ("ROLLBACK" if hard else "HOLD")
