"""Batch scoring of recorded runs: inputs in, one row per run out, nothing dropped.

Shared by ``liveguard score``, ``gate`` and ``report``. Every input run yields exactly
one :class:`RunRow`: a verdict, or an error naming ``file:line`` (or the run id).
Each run goes through the eval graph; with judges off (``--no-judges``, the kill
switch, or no key) that is the deterministic floor: loop_guard, trajectory_anomaly
and detect_defects, and the verdict records why the judges were skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from liveguard.allowset import AllowSet
from liveguard.errors import LiveguardError, TrajectoryReadError, redact_location
from liveguard.model import Expected, Trajectory, Verdict
from liveguard.policy import Policy
from liveguard.readers.jsonl import read_jsonl
from liveguard.settings import Settings, resolve

__all__ = ["PRESETS", "RunRow", "iter_inputs", "policy_for", "score_runs"]

PRESETS: Mapping[str, Callable[..., Policy]] = {
    "workflow": Policy.workflow,
    "tool_agent": Policy.tool_agent,
}


@dataclass(frozen=True)
class RunRow:
    """One output row: a verdict, or an error naming where the input went wrong."""

    source: str
    run_id: str | None = None
    graph: str | None = None
    verdict: Verdict | None = None
    path: tuple[str, ...] = ()
    error: str | None = None
    expected: Expected | None = None

    @property
    def passed(self) -> bool | None:
        return None if self.verdict is None else self.verdict.passed

    @property
    def matches_expected(self) -> bool | None:
        if self.expected is None or self.verdict is None:
            return None
        return (self.verdict.passed, self.verdict.hard_codes) == (
            self.expected.passed,
            sorted(self.expected.hard_codes),
        )

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"run_id": self.run_id, "graph": self.graph, "source": self.source}
        v = self.verdict
        if v is None:
            row.update(passed=None, score=None, violations=[], provenance=None, error=self.error)
            return row
        row.update(
            passed=v.passed,
            score=v.composite,
            violations=[
                {"code": x.code, "severity": x.severity, "step": x.step, "node": x.node, "count": x.count}
                for x in v.violations
            ],
            provenance={
                "source": v.source,
                "reason": v.reason,
                "confidence": v.confidence,
                "judged": v.judged,
                "judges_skipped": v.judges_skipped,
                "structural_only": v.structural_only,
                "missing": list(v.missing),
                "judge_errors": [m.split(":", 1)[1] for m in v.missing
                                 if m.startswith("judge_error:")],
                "prompt_version": v.prompt_version,
                "levels": {
                    name: {"score": s.score, "reason": s.reason, "source": s.source}
                    for name, s in sorted(v.levels.items())
                },
            },
        )
        if self.expected is not None:
            row["expected"] = self.expected.model_dump()
        return row


def iter_inputs(paths: Iterable[str | Path]) -> Iterator[tuple[str, Trajectory | TrajectoryReadError]]:
    """(source, run-or-error) for every run in JSONL files, LangSmith JSON exports and directories.

    A directory contributes its ``*.jsonl`` and ``*.json`` files (not recursively).
    """
    for entry in paths:
        p = Path(entry)
        files = (
            sorted(q for q in p.iterdir() if q.is_file() and q.suffix in (".jsonl", ".json"))
            if p.is_dir()
            else [p]
        )
        for f in files:
            if f.suffix == ".json":
                from liveguard.langsmith import load_export

                items: Iterable[Trajectory | TrajectoryReadError] = load_export(f)
            else:
                items = read_jsonl(f)
            for item in items:
                yield (item.source if isinstance(item, TrajectoryReadError) else str(f)), item


def policy_for(
    run: Trajectory, default: Policy, explicit: Policy | None = None,
    settings: Settings | None = None,
) -> Policy:
    """The precedence (:func:`liveguard.settings.resolve`): ``explicit``, then the run's
    ``metadata.policy`` preset (with the settings' overrides applied), then ``default``."""
    preset = (run.metadata or {}).get("policy")
    from_metadata = None
    if isinstance(preset, str) and preset in PRESETS:
        from_metadata = (settings or Settings.from_env()).policy(PRESETS[preset]())
    return resolve(explicit, from_metadata, default)


def score_runs(
    items: Sequence[tuple[str, Trajectory | TrajectoryReadError]], **options: Any
) -> list[RunRow]:
    """Score every item through the eval graph; one row per item, in input order.

    Synchronous :func:`ascore_runs` (same keyword options).
    """
    return asyncio.run(ascore_runs(items, **options))


async def ascore_runs(
    items: Sequence[tuple[str, Trajectory | TrajectoryReadError]],
    *,
    allow_sets: Mapping[str, AllowSet] | None = None,
    default_policy: Policy | None = None,
    judges: bool = True,
    jobs: int = 4,
    progress: Callable[[int, int], None] | None = None,
    settings: Settings | None = None,
    explicit_policy: Policy | None = None,
) -> list[RunRow]:
    """``judges=False`` is a structural-only evaluation (the CLI's ``--no-judges``)."""
    from liveguard.eval_graph import aevaluate_trajectory, build_eval_graph
    from liveguard.judges import JudgeClient

    settings = settings if settings is not None else Settings.from_env()
    gateway = JudgeClient(settings.judge_config())
    graph = build_eval_graph(client=gateway, structural_only=not judges, settings=settings)
    default = default_policy if default_policy is not None else settings.policy()
    in_use = bool(allow_sets)
    limit = asyncio.Semaphore(max(1, jobs))
    done = 0

    async def one(source: str, item: Trajectory | TrajectoryReadError) -> RunRow:
        nonlocal done
        if isinstance(item, TrajectoryReadError):
            row = RunRow(source=item.source, error=redact_location(item.reason))
        else:
            row = await _score_one(source, item)
        done += 1
        if progress is not None:
            progress(done, len(items))
        return row

    async def _score_one(source: str, run: Trajectory) -> RunRow:
        path = tuple(s.node for s in run.steps)
        base = RunRow(source=source, run_id=run.run_id, graph=run.graph, path=path,
                      expected=run.expected)
        async with limit:
            try:
                allow = (allow_sets or {}).get(run.graph) if run.graph else None
                verdict = await aevaluate_trajectory(
                    run, allow_set=allow, policy=policy_for(run, default, explicit_policy, settings),
                    graph=graph, allowsets_in_use=in_use,
                )
            except LiveguardError as exc:  # e.g. a payload that cannot be fingerprinted
                return RunRow(source=base.source, run_id=base.run_id, graph=base.graph, path=path,
                              error=f"{type(exc).__name__}: {exc}", expected=base.expected)
        return RunRow(source=base.source, run_id=base.run_id, graph=base.graph, path=path,
                      verdict=verdict, expected=base.expected)

    try:
        return list(await asyncio.gather(*(one(s, i) for s, i in items)))
    finally:
        await gateway.aclose()
