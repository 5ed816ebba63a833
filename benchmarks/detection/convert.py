"""Convert public recorded agent runs into liveguard's JSONL run format.

Reads the sources from git snapshots fetched into ``/work/.mirror`` (``git show`` on the
snapshot's HEAD; no work tree needed) and writes ``data/<source>.jsonl``, one run a line.
Not run in CI: the committed JSONL is the benchmark; this script says how it was made.

    python benchmarks/detection/convert.py [--mirror /work/.mirror] [--only SOURCE ...]

Mapping (SOURCES.md has the repositories, commits and licences):

* **tau-bench** (``historical_trajectories/gpt-4o-airline.json``): the user simulator's turns
  are message steps of node ``user``, the agent's text turns message steps of node
  ``agent``, each tool call a tool step of node ``tools`` (``tool`` = function name,
  ``args`` = its parsed arguments, ``result`` = the tool message that answered it). The
  system prompt (the same airline policy in every run) is left out.
* **tau2-bench** (``tau2_retail``, ``tau2_claude``: a results file of ``tau2 run``, read at a
  pinned commit, see ``TAU2_SOURCES``): the same mapping as tau-bench. ``simulations[*].messages``
  in order: ``user`` turns are message steps of node ``user``, the agent's text turns (the
  greeting "Hi! How can I help you today?" included) message steps of node ``agent``, each tool
  call a tool step of node ``tools`` (``tool`` = name, ``args`` = arguments, ``result`` = the
  content of the ``tool`` message with the same ``id``; an error reply stays in ``result`` as
  in tau-bench, e.g. "Error: ..."). The policy text, the task list, costs, token usage and
  provider objects (``raw_data``, Claude's thinking blocks among them) are left out; the
  reward and the termination reason are kept in ``outcome``.
* **Who&When** (``Who&When/Algorithm-Generated/*.json``, AG2 multi-agent runs): every
  history entry is a message step whose node is the speaking agent; the
  ``Computer_terminal``'s turns are tool steps (``tool="execute_code"``, ``args`` = the code
  blocks of the message it executed, ``result`` = its output).
* **Who&When Hand-Crafted** (``Who&When/Hand-Crafted/*.json``, Magentic-One runs): every
  history entry is a message step whose node is its role (``Orchestrator (thought)``,
  ``WebSurfer``, ...).
* **mini-swe-agent** (``*.traj.json``): the task prompt is a ``user`` message step; each
  assistant turn is an ``agent`` message step (its THOUGHT text, when it has any) followed
  by a ``tools`` step per bash action (``tool="bash"``, ``args={"command": ...}``,
  ``result`` = the observation, long outputs intact). A turn without a parsable action
  (format error) keeps its text as an ``agent`` step and the harness's reply as an ``env``
  step. Provider response objects (``extra``) are dropped. mini-swe-agent 2.x records a
  format error as the harness's ``user`` message only (``extra.interrupt_type:
  FormatError``): the model's malformed reply is not in the file, so two format errors in
  a row are two consecutive ``env`` steps with nothing recorded between them.

Policy: tau-bench, tau2-bench and mini-swe-agent runs carry ``metadata.policy = "tool_agent"`` (a
tool-calling agent; the preset ``liveguard score`` reads from the run). Who&When runs
carry none: no named preset is "no revisit ceiling" (``run.py``'s ``POLICIES`` table
has the policy of every source).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"

TAU_REPO = "sierra-research+tau-bench"
TAU2_REPO = "sierra-research+tau2-bench"
WW_REPO = "ag2ai+Agents_Failure_Attribution"
LIVESWE_REPO = "RussellRyanH+CSCI-635-LiveSWE-Agent"
GRUCKION_REPO = "gruckion+mini-swe-agent"

GEMINI_RUNS = 145  # Gemini 3 Pro runs added to miniswe.jsonl for the throughput benchmark

_BASH_BLOCK = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.S)
_CODE_BLOCK = re.compile(r"```(?:python|py|sh|bash|shell)?[^\n]*\n(.*?)```", re.S)


class Mirror:
    """Read files of a fetched snapshot (``/work/.mirror/<owner>+<name>/repo``) at HEAD, or at
    a pinned commit of its history (``rev``)."""

    def __init__(self, root: Path, name: str) -> None:
        self.git_dir = root / name / "repo"
        if not self.git_dir.is_dir():
            repo = name.replace("+", "/")
            raise SystemExit(f"convert: no snapshot at {self.git_dir} (fetch github:{repo})")

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args],
                              check=True, capture_output=True).stdout

    def head(self) -> str:
        return self._git("rev-parse", "HEAD").decode().strip()

    def files(self, prefix: str) -> list[str]:
        out = self._git("ls-tree", "-r", "--name-only", "HEAD", "--", prefix).decode()
        return [line for line in out.splitlines() if line]

    def read(self, path: str, rev: str = "HEAD") -> bytes:
        return self._git("show", f"{rev}:{path}")

    def json(self, path: str, rev: str = "HEAD") -> Any:
        return json.loads(self.read(path, rev))


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


# -- tau-bench --------------------------------------------------------------------------

def tau_runs(mirror: Mirror, path: str, model: str, domain: str) -> Iterator[dict[str, Any]]:
    for record in mirror.json(path):
        steps: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []  # tool steps waiting for their tool message
        for msg in record["traj"]:
            role = msg.get("role")
            if role == "system":
                continue
            if role == "user":
                steps.append({"node": "user", "summary": msg.get("content") or ""})
            elif role == "assistant":
                if msg.get("content"):
                    steps.append({"node": "agent", "summary": msg["content"]})
                for call in msg.get("tool_calls") or []:
                    fn = call.get("function", {})
                    step = {"node": "tools", "tool": fn.get("name") or "unknown",
                            "args": _args(fn.get("arguments"))}
                    steps.append(step)
                    pending.append(step)
            elif role == "tool":
                # tool_call ids repeat inside some runs: answer the oldest call still open
                fallback = pending[0] if pending else None
                match = next((s for s in pending if s["tool"] == msg.get("name")), fallback)
                if match is None:
                    steps.append({"node": "tools", "tool": msg.get("name") or "unknown",
                                  "result": msg.get("content")})
                else:
                    pending.remove(match)
                    match["result"] = msg.get("content")
        reward = record.get("reward")
        yield {
            "run_id": f"tau-{domain}-{model}-task{record['task_id']:03d}-trial{record.get('trial', 0)}",
            "graph": f"tau_bench_{domain}",
            "status": "success" if reward == 1.0 else "failed",
            "outcome": {"reward": reward},
            "metadata": {"source": "taubench", "model": model, "domain": domain,
                         "task_id": record["task_id"], "trial": record.get("trial"),
                         "policy": "tool_agent"},
            "steps": steps,
        }


# -- tau2-bench -------------------------------------------------------------------------

TAU2_SOURCES: dict[str, tuple[str, str, str]] = {
    # source: (commit, path, model tag of the run ids). Neither file is at the snapshot's HEAD:
    # the snapshot keeps the history, and these commits are on refs of sierra-research/tau2-bench.
    "tau2_retail": (  # Sierra's own run, branch feature/gym ("pushing results", Victor Barres)
        "59d0fb96f4292815e1f6463fb2f139ffef47dc7f",
        "src/experiments/model_training/results/gpt-4.1_retail_defautl_gpt-4.1_1trials.json",
        "gpt-4.1"),
    "tau2_claude": (  # leaderboard submission, pull request #80 (ValueLabs)
        "3059a91e162dfc651237bfa6d90db604d6d8ef9f",
        "web/leaderboard/public/submissions/claude-sonnet-4-5_aide-platform_2025-10-31/"
        "trajectories/claude-sonnet-4-5_airline_default_gpt4.1_1trials.json",
        "claude-sonnet-4-5"),
}


def _task_tag(task_id: Any) -> str:
    text = str(task_id)
    return f"{int(text):03d}" if text.isdigit() else re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def tau2_runs(mirror: Mirror, source: str) -> Iterator[dict[str, Any]]:
    commit, path, model = TAU2_SOURCES[source]
    record = mirror.json(path, commit)
    info = record["info"]
    domain = info["environment_info"]["domain_name"]
    agent_llm = info["agent_info"]["llm"]
    user_llm = info["user_info"]["llm"]
    for sim in record["simulations"]:
        steps: list[dict[str, Any]] = []
        open_calls: dict[str, dict[str, Any]] = {}
        for msg in sim["messages"]:
            role = msg.get("role")
            if role == "user":
                steps.append({"node": "user", "summary": msg.get("content") or ""})
            elif role == "assistant":
                if msg.get("content"):
                    steps.append({"node": "agent", "summary": msg["content"]})
                for call in msg.get("tool_calls") or []:
                    step = {"node": "tools", "tool": call.get("name") or "unknown",
                            "args": _args(call.get("arguments"))}
                    steps.append(step)
                    open_calls[call.get("id") or f"#{len(steps)}"] = step
            elif role == "tool":
                match = open_calls.pop(msg.get("id") or "", None)
                if match is None:
                    steps.append({"node": "tools", "tool": "unknown", "result": msg.get("content")})
                else:
                    match["result"] = msg.get("content")
        reward = (sim.get("reward_info") or {}).get("reward")
        yield {
            "run_id": f"tau2-{domain}-{model}-task{_task_tag(sim['task_id'])}-trial{sim.get('trial', 0)}",
            "graph": f"tau2_bench_{domain}",
            "status": "success" if reward == 1.0 else "failed",
            "outcome": {"reward": reward, "termination_reason": sim.get("termination_reason")},
            "metadata": {"source": source, "model": agent_llm, "user_model": user_llm, "domain": domain,
                         "task_id": sim["task_id"], "trial": sim.get("trial"), "origin": TAU2_REPO,
                         "commit": commit, "policy": "tool_agent"},
            "steps": steps,
        }


# -- Who&When ---------------------------------------------------------------------------

def _code_of(text: str) -> str:
    blocks = _CODE_BLOCK.findall(text or "")
    return "\n".join(b.strip() for b in blocks)


def whowhen_runs(mirror: Mirror) -> Iterator[dict[str, Any]]:
    prefix = "Who&When/Algorithm-Generated/"
    paths = sorted(mirror.files(prefix), key=lambda p: int(Path(p).stem))
    for path in paths:
        record = mirror.json(path)
        steps: list[dict[str, Any]] = []
        last_code = ""  # the code blocks of the message just before (what the terminal ran)
        for entry in record["history"]:
            name = entry.get("name") or entry.get("role") or "unknown"
            content = entry.get("content") or ""
            if name == "Computer_terminal":
                steps.append({"node": name, "tool": "execute_code", "args": {"code": last_code},
                              "result": content})
                last_code = ""
            else:
                steps.append({"node": name, "summary": content})
                last_code = _code_of(content)
        yield {
            "run_id": f"whowhen-ag-{Path(path).stem}",
            "graph": "whowhen_ag2",
            "status": "success" if record.get("is_correct") else "failed",
            "outcome": {"is_correct": record.get("is_correct")},
            "metadata": {"source": "whowhen", "question_id": record.get("question_ID"),
                         "level": record.get("level"), "mistake_agent": record.get("mistake_agent"),
                         "mistake_step": record.get("mistake_step")},
            "steps": steps,
        }


def whowhen_hc_runs(mirror: Mirror) -> Iterator[dict[str, Any]]:
    """The Hand-Crafted set (Magentic-One runs): every history entry a message step of its role."""
    prefix = "Who&When/Hand-Crafted/"
    paths = sorted(mirror.files(prefix), key=lambda p: int(Path(p).stem))
    for path in paths:
        record = mirror.json(path)
        steps = [{"node": entry.get("name") or entry.get("role") or "unknown",
                  "summary": entry.get("content") or ""} for entry in record["history"]]
        correct = record.get("is_corrected", record.get("is_correct"))
        yield {
            "run_id": f"whowhen-hc-{Path(path).stem}",
            "graph": "whowhen_magentic_one",
            "status": "success" if correct else "failed",
            "outcome": {"is_correct": correct},
            "metadata": {"source": "whowhen_hc", "question_id": record.get("question_ID"),
                         "mistake_agent": record.get("mistake_agent"),
                         "mistake_step": record.get("mistake_step")},
            "steps": steps,
        }


# -- mini-swe-agent ---------------------------------------------------------------------

def miniswe_run(data: dict[str, Any], run_id: str, model: str, origin: str) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    open_calls: list[dict[str, Any]] = []
    awaiting: dict[str, Any] | None = None  # text-format action waiting for its observation
    seen_task = False
    for msg in data["messages"]:
        role = msg.get("role")
        content = msg.get("content")
        if isinstance(content, list):  # content parts
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        if role == "system":
            continue
        if role == "exit":
            continue
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if calls:
                if content:
                    steps.append({"node": "agent", "summary": content})
                for call in calls:
                    fn = call.get("function", {})
                    step = {"node": "tools", "tool": fn.get("name") or "bash",
                            "args": _args(fn.get("arguments"))}
                    steps.append(step)
                    open_calls.append(step)
                continue
            text = content or ""
            actions = _BASH_BLOCK.findall(text)
            thought = _BASH_BLOCK.sub("", text).strip()
            if thought:
                steps.append({"node": "agent", "summary": thought})
            if len(actions) == 1:
                awaiting = {"node": "tools", "tool": "bash", "args": {"command": actions[0]}}
                steps.append(awaiting)
            continue
        if role == "tool" and open_calls:
            open_calls.pop(0)["result"] = content
            continue
        if role == "user":
            if not seen_task:
                seen_task = True
                steps.append({"node": "user", "summary": content or ""})
            elif awaiting is not None:
                awaiting["result"] = content
                awaiting = None
            else:
                steps.append({"node": "env", "summary": content or ""})
            continue
        steps.append({"node": role or "unknown", "summary": content or ""})
    info = data.get("info", {})
    return {
        "run_id": run_id,
        "graph": "mini_swe_agent",
        "status": info.get("exit_status"),
        "outcome": {"exit_status": info.get("exit_status"),
                    "api_calls": info.get("model_stats", {}).get("api_calls")},
        "metadata": {"source": "miniswe", "model": model, "instance_id": data.get("instance_id") or run_id,
                     "origin": origin, "mini_version": info.get("mini_version"),
                     "policy": "tool_agent"},
        "steps": steps,
    }


def miniswe_runs(liveswe: Mirror, gruckion: Mirror) -> Iterator[dict[str, Any]]:
    mini = liveswe.files("results/llm-ablation/gpt-5-mini")
    for path in sorted(p for p in mini if p.endswith(".traj.json")):
        instance = Path(path).name.removesuffix(".traj.json")
        yield miniswe_run(liveswe.json(path), f"miniswe-gpt5mini-{instance}", "gpt-5-mini", LIVESWE_REPO)
    gem = sorted(p for p in gruckion.files("swebench_results/20251118_gemini-3-pro-74pct/trajs")
                 if p.endswith(".traj.json"))
    stride = max(1, len(gem) // GEMINI_RUNS)
    for path in gem[::stride][:GEMINI_RUNS]:
        instance = Path(path).name.removesuffix(".traj.json")
        yield miniswe_run(gruckion.json(path), f"miniswe-gemini3pro-{instance}", "gemini-3-pro-preview",
                          GRUCKION_REPO)


def write(name: str, runs: Iterator[dict[str, Any]]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"{name}.jsonl"
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for run in runs:
            out.write(json.dumps(run, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    print(f"{path.relative_to(HERE)}: {count} runs, {path.stat().st_size / 1e6:.1f} MB")


SOURCES = ("taubench_airline", *TAU2_SOURCES, "whowhen", "whowhen_hc", "miniswe")
"""The data files ``main`` writes (``--only`` picks some)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--only", nargs="+", choices=SOURCES, help="write only these data files")
    args = parser.parse_args(argv)
    wanted = set(args.only or SOURCES)
    used: set[str] = set()
    if "taubench_airline" in wanted:
        airline = "historical_trajectories/gpt-4o-airline.json"
        write("taubench_airline", tau_runs(Mirror(args.mirror, TAU_REPO), airline, "gpt-4o", "airline"))
        used.add(TAU_REPO)
    for source in TAU2_SOURCES:
        if source in wanted:
            write(source, tau2_runs(Mirror(args.mirror, TAU2_REPO), source))
            used.add(TAU2_REPO)
    if "whowhen" in wanted:
        write("whowhen", whowhen_runs(Mirror(args.mirror, WW_REPO)))
        used.add(WW_REPO)
    if "whowhen_hc" in wanted:
        write("whowhen_hc", whowhen_hc_runs(Mirror(args.mirror, WW_REPO)))
        used.add(WW_REPO)
    if "miniswe" in wanted:
        write("miniswe", miniswe_runs(Mirror(args.mirror, LIVESWE_REPO), Mirror(args.mirror, GRUCKION_REPO)))
        used.update((LIVESWE_REPO, GRUCKION_REPO))
    for name in sorted(used):
        print(f"{name}: {Mirror(args.mirror, name).head()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
