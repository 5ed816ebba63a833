"""Detection on real recorded runs: liveguard against labelled public agent runs.

    PYTHONPATH=backend .venv/bin/python benchmarks/detection/run.py [--configs ...] [--json FILE]
        [--sources SOURCE ...] [--split dev|test|all] [--runs] [--embedder NAME [--semantic-threshold T]]
        [--export-prompts FILE] [--cassette FILE]

(``--split dev`` for tuning: the test half is for the reported figures; ``--runs`` prints
each run's label and first flagged step per configuration; ``--embedder static`` scores the
semantic configurations with that embedder at the threshold tuned for it.)

Scores every run of ``labels.jsonl`` (the runs are in ``data/*.jsonl``) in five
configurations, through liveguard's public API only:

* ``structural``: ``liveguard.check_trajectory`` with the source's policy (``POLICIES``).
* ``semantic``: the same with ``semantic=True`` (``liveguard score --semantic
  --no-judges``): the semantic layer without judges.
* ``semantic+recorded judge``: the semantic layer with its spin checks answered by a real
  LLM, recorded (``cassette.py``: ``judge_cassette.jsonl``, keyed by the prompt's digest) and
  replayed by the local OpenAI-compatible server of ``tests/fake_openai.py`` to the real
  judge client (``JudgeClient``, the real ``openai`` client). The run's hard findings are the
  eval graph's (``liveguard score --semantic`` with a judge): ``check_trajectory`` with the
  semantic layer; when nothing is hard, ``liveguard.evaluate.spin.spin_checks`` (what the eval
  graph's ``detect_defects`` asks) and ``spin_confirmations`` (what ``aggregate`` makes
  hard). The step, trajectory and outcome judges are not asked: they never make a finding
  hard. A prompt with no recorded answer **fails the run of run.py** (exit status 1, the
  prompts listed): re-export and re-record after any prompt change
  (``--export-prompts FILE``, then ``record.py``). An unusable recorded answer (not the
  answer's JSON) is missing evidence, as in the eval graph: counted, never a finding.
  Reported beside the table: judge calls and tokens per run (the answerer's usage when it
  was recorded, else 4 characters a token).
* ``structural-bare``: ``structural`` with the bare presets, for comparison:
  ``Policy.tool_agent()`` (only ``model``/``tools``/``agent`` exempt) for the tool agents,
  the same Who&When policy, no dev-tuned threshold.
* ``identical3``: naive baseline (a): some step (same node and same content digest) occurs
  three times in the run.
* ``reference``: naive baseline (b): the reference no-progress guard of
  ``benchmarks/run.py`` (``reference_guard``: a digest per step, three equal digests in a
  window of 6).

The policy is the one a user of liveguard would pick for the source's agent architecture,
never chosen by label (``POLICIES``, one entry per source):

* tau-bench and tau2-bench (``tau2_retail``, ``tau2_claude``), tool-calling agents with a user
  simulator, and mini-swe-agent (a bash-tool agent): the tool-agent preset,
  ``Policy.tool_agent(agent_nodes=...)`` with every node of
  the converted agent exempt from revisit counting, as ``integrations.langgraph.
  default_policy`` exempts every node of a recognised agent graph (its core and hook
  nodes). Their runs carry ``metadata.policy = "tool_agent"``.
* Who&When (multi-agent conversations, agents taking turns): an arbitrary graph, the
  construction of ``default_policy`` for one: the workflow preset with no revisit ceiling
  (``max_revisits = window + 1``).
* One threshold tuned on the **dev** half only: mini-swe-agent's harness node ``env``
  ("No tool calls found ..." after a format error) has ``stall=3`` (``NodePolicy``): two in
  a row and then a new command is how healthy dev runs look; the labelled stalls have six
  or more.

A run is *flagged* when the configuration raises any hard finding (any code: the rules
are changing, so no code list is assumed). Reported per source and split: recall on runs
labelled ``loop`` or ``stall``, the rate of flagged runs among runs labelled
``progress``, and, on caught loops, the first flagged step against the labelled loop
start. A benchmark, never a test: it exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import json
import logging
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import cassette  # noqa: E402  (benchmarks/detection/cassette.py, beside this file)

ROOT = HERE.parents[1]
DATA = HERE / "data"
LABELS = HERE / "labels.jsonl"
RECORDED = "semantic+recorded judge"
CONFIGS = ("structural", "semantic", RECORDED, "identical3", "reference", "structural-bare")
LOOPING = frozenset({"loop", "stall"})


def _load_module(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"run.py: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_runs(wanted: set[str]) -> dict[str, Any]:
    """The labelled runs, parsed into ``liveguard.Trajectory`` by the project's reader."""
    from liveguard import Trajectory, read_jsonl

    runs: dict[str, Any] = {}
    for path in sorted(DATA.glob("*.jsonl")):
        for item in read_jsonl(path):
            if isinstance(item, Trajectory) and item.run_id in wanted:
                runs[item.run_id] = item
    return runs


# -- the policy of each source (by agent architecture, never by label) -------------------

def _tool_agent(*channels: str, env_stall: int | None = None) -> Any:
    """``Policy.tool_agent`` with the converted agent's other nodes (the user simulator, the
    harness) exempt from revisit counting too: the user's turns are requests, not revisits."""
    from liveguard import Policy
    from liveguard.core.policy import NodePolicy

    policy = Policy.tool_agent(agent_nodes=("model", "tools", "agent", *channels))
    if env_stall is not None:
        nodes = dict(policy.nodes)
        nodes["env"] = nodes.get("env", NodePolicy()).model_copy(update={"stall": env_stall})
        policy = policy.model_copy(update={"nodes": nodes})
    return policy


def _arbitrary_graph() -> Any:
    """``liveguard.integrations.langgraph.default_policy``'s construction for a graph that is
    not a recognised tool agent (without the environment overrides)."""
    from liveguard import Policy

    base = Policy.workflow()
    return base.model_copy(update={"max_revisits": base.window + 1})


POLICIES: dict[str, Callable[[], Any]] = {
    "taubench": lambda: _tool_agent("user"),
    "tau2_retail": lambda: _tool_agent("user"),  # tau2-bench: the same agent/user-simulator architecture
    "tau2_claude": lambda: _tool_agent("user"),
    "miniswe": lambda: _tool_agent("user", "env", env_stall=3),  # env_stall: tuned on dev
    "whowhen": _arbitrary_graph,
    "whowhen_hc": _arbitrary_graph,
}
"""The policy of every source (``source`` of ``labels.jsonl``), by agent architecture."""

PRESET_OF: dict[str, str | None] = {"taubench": "tool_agent", "tau2_retail": "tool_agent",
                                    "tau2_claude": "tool_agent", "miniswe": "tool_agent",
                                    "whowhen": None, "whowhen_hc": None}
"""The ``metadata.policy`` preset each source's runs carry (None: none)."""


def policy_of(run: Any, *, semantic: bool = False) -> Any:
    """The source's policy for ``run``; its ``metadata.policy`` must agree with the table."""
    metadata = run.metadata or {}
    source = metadata.get("source")
    if source not in POLICIES:
        raise SystemExit(f"run.py: run {run.run_id}: no policy for source {source!r}")
    if metadata.get("policy") != PRESET_OF[source]:
        raise SystemExit(f"run.py: run {run.run_id}: metadata.policy {metadata.get('policy')!r}, "
                         f"expected {PRESET_OF[source]!r} for source {source!r}")
    policy = _POLICY_CACHE.get((source, semantic))
    if policy is None:
        policy = POLICIES[source]()
        if semantic:
            policy = policy.model_copy(update={"semantic": True, **EMBEDDER})
        _POLICY_CACHE[(source, semantic)] = policy
    return policy


_POLICY_CACHE: dict[tuple[str, bool], Any] = {}
EMBEDDER: dict[str, Any] = {}
"""``--embedder`` / ``--semantic-threshold``: the semantic configurations' ``semantic_embedder``
and ``semantic_threshold`` (empty: the policy's, MiniLM at 0.675)."""


# -- the detectors: each returns the first step index of a hard finding, or None ---------

def _first_hard(violations: Iterable[Any]) -> int | None:
    steps = [v.step for v in violations if getattr(v, "severity", None) == "hard"]
    return min(steps) if steps else None


def structural(run: Any) -> int | None:
    from liveguard import check_trajectory

    return _first_hard(check_trajectory(run.steps, policy_of(run)))


def semantic(run: Any) -> int | None:
    from liveguard import check_trajectory

    return _first_hard(check_trajectory(run.steps, policy_of(run, semantic=True)))


def structural_bare(run: Any) -> int | None:
    from liveguard import Policy, check_trajectory

    policy = policy_of(run)  # checks metadata.policy against the table
    if PRESET_OF[run.metadata["source"]] == "tool_agent":
        policy = Policy.tool_agent()
    return _first_hard(check_trajectory(run.steps, policy))


def _content_digest(step: Any) -> str:
    content = {"summary": step.summary, "output": step.output, "tool": step.tool,
               "args": step.args, "result": step.result, "error": step.error}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def identical3(run: Any) -> int | None:
    """Baseline (a): the third occurrence of a (node, content digest) pair anywhere in the run."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for index, step in enumerate(run.steps):
        key = (step.node, _content_digest(step))
        seen[key] += 1
        if seen[key] == 3:
            return index
    return None


class Reference:
    """Baseline (b): ``reference_guard`` of ``benchmarks/run.py``, imported, not copied.

    It returns a hit count; the first flagged step is the shortest prefix with a hit
    (hits only grow with the prefix, so a binary search finds it)."""

    def __init__(self) -> None:
        bench = str(ROOT / "benchmarks")
        if bench not in sys.path:  # benchmarks/run.py imports its sibling modules
            sys.path.insert(0, bench)
        self.guard: Callable[[Iterable[Any]], int] = _load_module(
            "liveguard_bench_run", ROOT / "benchmarks" / "run.py").reference_guard

    def __call__(self, run: Any) -> int | None:
        steps = list(run.steps)
        if not self.guard(steps):
            return None
        lo, hi = 1, len(steps)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.guard(steps[:mid]):
                hi = mid
            else:
                lo = mid + 1
        return lo - 1


class RecordedJudge:
    """``semantic+recorded judge``: the semantic layer, and its spin checks asked of the
    recorded answers (``cassette.Replay``), or of nothing while their prompts are collected
    (``cassette.Collect``, ``--export-prompts``)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.calls: dict[str, int] = {}
        self.tokens: dict[str, int] = {}
        self.unusable = 0

    def __call__(self, run: Any) -> int | None:
        from liveguard import check_trajectory
        from liveguard.evaluate.spin import spin_confirmations

        policy = policy_of(run, semantic=True)
        violations = check_trajectory(run.steps, policy)
        first = _first_hard(violations)
        if first is not None:  # the eval graph asks no spin check once a hard finding fired
            self.calls[run.run_id] = self.tokens[run.run_id] = 0
            return first
        calls, tokens = self.server.requests, getattr(self.server, "tokens", 0)
        spins = asyncio.run(self._checks(run, violations, policy))
        self.calls[run.run_id] = self.server.requests - calls
        self.tokens[run.run_id] = getattr(self.server, "tokens", 0) - tokens
        self.unusable += sum(1 for spin in spins if spin.score is None)
        return _first_hard(spin_confirmations(spins, policy))

    async def _checks(self, run: Any, violations: list[Any], policy: Any) -> list[Any]:
        from liveguard.evaluate.judges import JudgeClient, JudgeConfig
        from liveguard.evaluate.spin import spin_checks

        config = JudgeConfig(base_url=self.server.base_url, api_key="recorded", model="recorded-judge",
                             max_retries=0, timeout=60.0)
        async with JudgeClient(config) as client:
            return await spin_checks(run.steps, violations, policy, client)

    def close(self) -> None:
        self.server.close()


# -- scoring and the table --------------------------------------------------------------

def score(labels: Sequence[dict[str, Any]], runs: dict[str, Any], configs: Sequence[str], *,
          collect: bool = False, cassette_path: Path | None = None) -> dict[str, Any]:
    """Every configuration's first flagged step per run. ``collect``: the recorded judge's
    server only collects the spin-check prompts (``scored["prompts"]``); else it replays
    ``cassette_path`` (default ``judge_cassette.jsonl``) and a prompt it lacks fails the run."""
    cassette_path = cassette_path or cassette.CASSETTE
    results: dict[str, dict[str, int | None]] = {}
    timings: dict[str, float] = {}
    judge: RecordedJudge | None = None
    detectors: dict[str, Callable[[Any], int | None]] = {}
    for name in configs:
        if name == "structural":
            detectors[name] = structural
        elif name == "semantic":
            detectors[name] = semantic
        elif name == RECORDED:
            server = cassette.Collect() if collect else cassette.Replay(cassette.load(cassette_path))
            judge = RecordedJudge(server)
            detectors[name] = judge
        elif name == "identical3":
            detectors[name] = identical3
        elif name == "reference":
            detectors[name] = Reference()
        elif name == "structural-bare":
            detectors[name] = structural_bare
        else:
            raise SystemExit(f"run.py: unknown configuration {name!r}; known: {', '.join(CONFIGS)}")
    embedded: dict[str, int] = {}
    try:
        for name, detect in detectors.items():
            layer = name in ("semantic", RECORDED)
            before = _embedded() if layer else 0  # loads the model once, before the clock starts
            started = time.perf_counter()
            results[name] = {row["run_id"]: detect(runs[row["run_id"]]) for row in labels}
            timings[name] = time.perf_counter() - started
            if layer:
                embedded[name] = _embedded() - before
    finally:
        if judge is not None:
            judge.close()
    out: dict[str, Any] = {"results": results, "timings": timings, "embedded": embedded}
    if judge is not None:
        server = judge.server
        if isinstance(server, cassette.Collect):
            out["prompts"] = server.prompts
        else:
            if server.missing:
                raise MissingAnswers(server.missing, cassette_path)
            runs_scored = max(1, len(judge.calls))
            out["judge"] = {
                "calls": sum(judge.calls.values()), "tokens": sum(judge.tokens.values()),
                "calls_per_run": round(sum(judge.calls.values()) / runs_scored, 2),
                "tokens_per_run": round(sum(judge.tokens.values()) / runs_scored),
                "max_calls_run": max(judge.calls.values(), default=0),
                "unusable_answers": judge.unusable, "tokens_estimated_calls": server.estimated,
                "distinct_prompts": len(server.used),
            }
    return out


class MissingAnswers(SystemExit):
    """Spin-check prompts the cassette has no answer for: the recorded judge cannot be scored."""

    def __init__(self, missing: dict[str, Any], path: Path) -> None:
        from liveguard.evaluate.judges import PROMPT_VERSION

        shown = "\n  ".join(sorted(missing)[:10])
        super().__init__(
            f"run.py: FAILED: {len(missing)} spin-check prompt(s) have no recorded answer in {path} "
            f"(prompt version {PROMPT_VERSION}); the recorded judge cannot be scored.\n  {shown}"
            f"{chr(10) + '  ...' if len(missing) > 10 else ''}\n"
            "Export them (run.py --split <half> --export-prompts FILE), have a model answer them "
            "blind, and import the answers (benchmarks/detection/record.py).")


def _embedded() -> int:
    """Texts the process-wide embedder has embedded so far (one model and one cache per
    process, shared by every run and configuration: a text is embedded once)."""
    from liveguard.core.semantic.registry import cache_for

    return int(cache_for(EMBEDDER.get("semantic_embedder", "local")).embedded)


def _pct(hit: int, total: int) -> str:
    return f"{100.0 * hit / total:.0f}% ({hit}/{total})" if total else "-"


def summarise(labels: Sequence[dict[str, Any]], scored: dict[str, Any]) -> dict[str, Any]:
    """Per configuration, source and split: recall, progress hard rate, first-step lag."""
    out: dict[str, Any] = {}
    for name, flags in scored["results"].items():
        cells: dict[tuple[str, str], dict[str, Any]] = defaultdict(
            lambda: {"loops": 0, "caught": 0, "progress": 0, "flagged": 0, "lags": []})
        for row in labels:
            first = flags[row["run_id"]]
            source, split = row["source"], row["split"]
            for key in ((source, split), ("all", split), (source, "all"), ("all", "all")):
                cell = cells[key]
                if row["label"] in LOOPING:
                    cell["loops"] += 1
                    if first is not None:
                        cell["caught"] += 1
                        if "loop_start" in row:
                            cell["lags"].append(first - int(row["loop_start"]))
                else:
                    cell["progress"] += 1
                    cell["flagged"] += first is not None
        out[name] = {f"{s}/{sp}": c for (s, sp), c in sorted(cells.items())}
    return out


def table(labels: Sequence[dict[str, Any]], summary: dict[str, Any]) -> str:
    """One row per configuration and source: recall and progress hard-finding rate, dev | test."""
    sources = [*sorted({row["source"] for row in labels}), "all"]
    lines = ["| configuration | source | recall loop/stall, dev | recall loop/stall, test "
             "| hard on progress, dev | hard on progress, test | first flag - labelled start |",
             "|---|---|---|---|---|---|---|"]
    for name, cells in summary.items():
        for source in sources:
            dev, test, both = (cells.get(f"{source}/{split}") for split in ("dev", "test", "all"))
            if both is None:
                continue
            lag = (f"{statistics.median(both['lags']):+.0f} (n={len(both['lags'])})"
                   if both["lags"] else "-")
            lines.append(
                f"| {name} | {source} "
                f"| {_pct(dev['caught'], dev['loops']) if dev else '-'} "
                f"| {_pct(test['caught'], test['loops']) if test else '-'} "
                f"| {_pct(dev['flagged'], dev['progress']) if dev else '-'} "
                f"| {_pct(test['flagged'], test['progress']) if test else '-'} | {lag} |")
    return "\n".join(lines)


def _choose_embedder(name: str | None, threshold: float | None) -> None:
    """Fill :data:`EMBEDDER` from ``--embedder`` and ``--semantic-threshold``."""
    EMBEDDER.clear()
    _POLICY_CACHE.clear()
    if name is not None:
        from liveguard.core.semantic.registry import threshold_for

        EMBEDDER["semantic_embedder"] = name
        threshold = threshold if threshold is not None else threshold_for(name)
    if threshold is not None:
        EMBEDDER["semantic_threshold"] = threshold


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--json", type=Path, help="also write per-run first-flag steps and the summary")
    parser.add_argument("--sources", nargs="+", help="score only these sources (labels.jsonl's source)")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all",
                        help="score only this half (tune on dev; the test half is for the reported figures)")
    parser.add_argument("--runs", action="store_true",
                        help="also print each scored run: label, first flagged step per configuration")
    parser.add_argument("--embedder", default=None,
                        help="the semantic configurations' embedder (policy.semantic_embedder; "
                             "default local, MiniLM), e.g. static; with its own tuned threshold")
    parser.add_argument("--semantic-threshold", type=float, default=None,
                        help="the semantic configurations' threshold (default: the embedder's own)")
    parser.add_argument("--export-prompts", type=Path, default=None,
                        help="write the recorded judge's spin-check prompts of the scored runs to FILE "
                             "(one line per distinct prompt: digest and messages, nothing else) and stop")
    parser.add_argument("--cassette", type=Path, default=None,
                        help=f"the recorded answers (default {cassette.CASSETTE.name})")
    args = parser.parse_args(argv)
    logging.getLogger("liveguard.judges").setLevel(logging.ERROR)  # unusable answers are counted below
    _choose_embedder(args.embedder, args.semantic_threshold)
    labels = [row for row in load_labels()
              if (args.split == "all" or row["split"] == args.split)
              and (not args.sources or row["source"] in args.sources)]
    if not labels:
        raise SystemExit("run.py: no labelled run matches --sources/--split")
    runs = load_runs({row["run_id"] for row in labels})
    missing = sorted({row["run_id"] for row in labels} - set(runs))
    if missing:
        raise SystemExit(f"run.py: {len(missing)} labelled run(s) not in data/: {missing[:5]}")
    if args.export_prompts is not None:
        return export_prompts(labels, runs, args.export_prompts)
    started = time.perf_counter()
    scored = score(labels, runs, args.configs, cassette_path=args.cassette)
    summary = summarise(labels, scored)
    counts: dict[str, int] = defaultdict(int)
    for row in labels:
        counts[row["label"]] += 1
    print(f"{len(labels)} labelled runs ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}), "
          f"{sum(len(r.steps) for r in runs.values())} steps; "
          f"{time.perf_counter() - started:.1f} s in all "
          f"({', '.join(f'{k} {v:.1f} s' for k, v in scored['timings'].items())})")
    if scored["embedded"]:
        print(f"texts embedded (shared cache, once per distinct text): {scored['embedded']}")
    if "judge" in scored:
        j = scored["judge"]
        print(f"recorded judge: {j['calls']} spin checks ({j['calls_per_run']} per run, at most "
              f"{j['max_calls_run']}), {j['tokens']} tokens ({j['tokens_per_run']} per run; "
              f"{j['tokens_estimated_calls']} calls estimated at 4 characters a token), "
              f"{j['distinct_prompts']} distinct prompts, {j['unusable_answers']} unusable answers")
    print()
    print(table(labels, summary))
    if args.runs:
        print()
        for row in labels:
            flags = " ".join(f"{name}={scored['results'][name][row['run_id']]}" for name in args.configs)
            print(f"{row['run_id']} {row['split']} {row['label']} start={row.get('loop_start', '-')} {flags}")
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": summary, "first_flag": scored["results"],
                                         "timings": scored["timings"], "judge": scored.get("judge")},
                                        indent=1, default=str))
    return 0


def export_prompts(labels: Sequence[dict[str, Any]], runs: dict[str, Any], path: Path) -> int:
    """Write every distinct spin-check prompt of ``labels``' runs to ``path``: ``{"digest",
    "messages"}`` per line, the messages exactly as the model is to see them (no label, no run
    id), in the order first asked."""
    scored = score(labels, runs, [RECORDED], collect=True)
    lines = [cassette.exported(digest, messages) for digest, messages in scored["prompts"].items()]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    chars = sum(len(str(m.get("content", ""))) for line in lines for m in line["messages"])
    print(f"{len(lines)} distinct spin-check prompts of {len(labels)} runs written to {path} "
          f"({chars} characters of messages)")
    return 0


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    sys.exit(main())
