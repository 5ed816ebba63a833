"""Batch scoring of recorded runs: inputs in, one row per run out, nothing dropped.

Shared by ``liveguard score``, ``gate`` and ``report``. Every input run yields exactly
one :class:`~liveguard.evaluate.rows.RunRow`: a verdict, or an error naming ``file:line`` (or the run id).

Scoring streams: :func:`~liveguard.readers.inputs.iter_records` reads lazily,
:func:`iter_scored` yields rows in input order as they are scored (``jobs`` worker processes, see
:mod:`liveguard.evaluate.engine.local`), so memory does not grow with the input. Each run goes
through the eval graph's nodes; with judges off (``--no-judges``, the kill switch, or
no key) that is the deterministic floor (loop_guard, trajectory_anomaly and
detect_defects), run by :class:`~liveguard.evaluate.engine.floor.Floor` without the per-run
graph overhead, and the verdict records why the judges were skipped.

Batch isolation: a run that cannot be read or scored, whatever the exception, is an
error row; a run id seen earlier in the same input makes the later run an error row
(``DuplicateRunId``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import xxhash

from liveguard.core.allowset import AllowSet
from liveguard.core.model import Trajectory
from liveguard.core.policy import PRESETS, Policy
from liveguard.errors import TrajectoryReadError
from liveguard.evaluate.engine.scorer import Record, ScoreOptions, default_jobs
from liveguard.evaluate.rows import RunRow
from liveguard.readers.inputs import iter_records
from liveguard.settings import Settings, resolve

__all__ = [
    "Record",
    "RunRow",
    "ScoreOptions",
    "iter_scored",
    "mark_duplicates",
    "policy_for",
    "score_paths",
    "score_runs",
]


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


def mark_duplicates(rows: Iterable[RunRow]) -> Iterator[RunRow]:
    """Rows unchanged, except a run whose id an earlier row had: an error row (``DuplicateRunId``).

    Remembers a 128-bit digest per distinct run id (about 60 bytes each), not the ids.
    """
    seen: set[int] = set()
    for row in rows:
        if row.run_id is None:
            yield row
            continue
        key = xxhash.xxh3_128_intdigest(row.run_id.encode("utf-8", "surrogatepass"))
        if key not in seen:
            seen.add(key)
            yield row
            continue
        yield RunRow(source=row.source, run_id=row.run_id, graph=row.graph, path=row.path,
                     error="DuplicateRunId: the same run id came earlier in this input",
                     expected=row.expected, name=row.name)


def _options(
    allow_sets: Mapping[str, AllowSet] | None, default_policy: Policy | None, judges: bool,
    settings: Settings | None, explicit_policy: Policy | None, *, verdicts: bool = True,
) -> ScoreOptions:
    settings = settings if settings is not None else Settings.from_env()
    return ScoreOptions(
        allow_sets=dict(allow_sets or {}),
        default_policy=default_policy if default_policy is not None else settings.policy(Policy()),
        explicit_policy=explicit_policy,
        judges=judges,
        env=dict(settings.env),  # read once here: workers may not share this environment
        verdicts=verdicts,
    )


def _counted(
    rows: Iterable[RunRow], progress: Callable[[int], None] | None, duplicates: bool
) -> Iterator[RunRow]:
    for done, row in enumerate(mark_duplicates(rows) if duplicates else rows, start=1):
        if progress is not None:
            progress(done)
        yield row


def iter_scored(
    records: Iterable[Record],
    *,
    allow_sets: Mapping[str, AllowSet] | None = None,
    default_policy: Policy | None = None,
    judges: bool = True,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    settings: Settings | None = None,
    explicit_policy: Policy | None = None,
    mark_duplicate_ids: bool = True,
    verdicts: bool = True,
) -> Iterator[RunRow]:
    """Score records as a stream on this machine: one row per record, in input order.

    ``jobs`` worker processes (default: the number of cores); the judges' concurrency
    bound (``AGENT_EVAL_CONCURRENCY``) is shared out between them. ``judges=False`` is a
    structural-only evaluation (the CLI's ``--no-judges``); ``settings`` default to the
    environment, read once; ``explicit_policy`` applies to every run (``--policy``).
    ``mark_duplicate_ids``: a run whose id came earlier is an error row
    (:func:`mark_duplicates`); ``False`` leaves duplicates to the caller (the gate refuses
    them as a whole). ``verdicts=False``: rows keep only their JSON form and summary
    (reading ``row.verdict`` raises); cheaper when only ``as_json`` is written.
    """
    from liveguard.evaluate.engine.local import iter_rows_local

    n = default_jobs() if jobs is None else jobs
    if n < 1:
        raise ValueError(f"jobs must be at least 1, got {n}")
    options = _options(allow_sets, default_policy, judges, settings, explicit_policy, verdicts=verdicts)
    config = options.judge_config()
    if judges and config.skip_reason() is None:
        # One bound for the whole machine: never more workers than judge slots, and the
        # slots shared out between them (judging waits on the network, not on the CPU).
        n = min(n, config.concurrency)
        options = replace(options, judge_concurrency=config.concurrency // n)
    yield from _counted(iter_rows_local(records, options, jobs=n), progress, mark_duplicate_ids)


def score_paths(
    paths: Sequence[str | Path],
    *,
    engine: str = "local",
    ray_address: str | None = None,
    allow_sets: Mapping[str, AllowSet] | None = None,
    default_policy: Policy | None = None,
    judges: bool = True,
    jobs: int | None = None,
    progress: Callable[[int], None] | None = None,
    settings: Settings | None = None,
    explicit_policy: Policy | None = None,
    mark_duplicate_ids: bool = True,
    verdicts: bool = True,
) -> Iterator[RunRow]:
    """Score the runs in ``paths`` (files, directories; with Ray also object-store URIs).

    ``engine="local"``: :func:`iter_scored` over :func:`~liveguard.readers.inputs.iter_records`.
    ``engine="ray"``: the same scoring functions on a Ray cluster (``ray_address``; default: a local one),
    through Ray Data (:mod:`liveguard.evaluate.engine.ray`). Same rows, same order.
    """
    if engine == "local":
        # several workers read their runs' lines themselves: the parent only finds them
        records = iter_records(paths, by_reference=(jobs or default_jobs()) > 1)
        yield from iter_scored(records, allow_sets=allow_sets, default_policy=default_policy,
                               judges=judges, jobs=jobs, progress=progress, settings=settings,
                               explicit_policy=explicit_policy, mark_duplicate_ids=mark_duplicate_ids,
                               verdicts=verdicts)
        return
    if engine != "ray":
        raise ValueError(f"unknown engine {engine!r}: expected 'local' or 'ray'")
    from liveguard.evaluate.engine.ray import iter_rows_ray

    options = _options(allow_sets, default_policy, judges, settings, explicit_policy, verdicts=verdicts)
    yield from _counted(iter_rows_ray(paths, options, address=ray_address), progress, mark_duplicate_ids)


def score_runs(
    items: Iterable[tuple[str, Trajectory | TrajectoryReadError]] | Iterable[Record], **options: Any
) -> list[RunRow]:
    """Every row of :func:`iter_scored`, as a list (same keyword options; ``jobs`` default 1)."""
    options.setdefault("jobs", 1)
    return list(iter_scored(items, **options))
