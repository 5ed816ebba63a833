"""Batch scoring of recorded runs: inputs in, one row per run out, nothing dropped.

Shared by ``liveguard score``, ``gate`` and ``report``. Every input run yields exactly
one :class:`RunRow`: a verdict, or an error naming ``file:line`` (or the run id).

Scoring streams: :func:`iter_records` reads lazily, :func:`iter_scored` yields rows in
input order as they are scored (``jobs`` worker processes, see
:mod:`liveguard.engine.local`), so memory does not grow with the input. Each run goes
through the eval graph's nodes; with judges off (``--no-judges``, the kill switch, or
no key) that is the deterministic floor (loop_guard, trajectory_anomaly and
detect_defects), run by :class:`~liveguard.engine.floor.Floor` without the per-run
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

import orjson
import xxhash

from liveguard.allowset import AllowSet
from liveguard.engine.scorer import Record, ScoreOptions, default_jobs
from liveguard.errors import TrajectoryReadError
from liveguard.model import Expected, Trajectory, Verdict
from liveguard.policy import Policy
from liveguard.readers.jsonl import parse_line
from liveguard.settings import Settings, resolve

__all__ = [
    "PRESETS",
    "Record",
    "RunRow",
    "ScoreOptions",
    "iter_inputs",
    "iter_records",
    "iter_scored",
    "mark_duplicates",
    "policy_for",
    "score_paths",
    "score_runs",
]

PRESETS: Mapping[str, Callable[..., Policy]] = {
    "workflow": Policy.workflow,
    "tool_agent": Policy.tool_agent,
}


_PATH_SEP = "\x1f"
"""Joins a row's node path when it is pickled (unless a node name contains it)."""

_Summary = tuple[bool, tuple[str, ...], str | None, bool, str, tuple[str, ...]]
"""passed, hard codes, judges skipped, structural only, reason, missing: what ``score``'s
tally reads without rebuilding the verdict."""


def _summarise(v: Verdict) -> _Summary:
    return (v.passed, tuple(v.hard_codes), v.judges_skipped, v.structural_only, v.reason, tuple(v.missing))


class RunRow:
    """One output row: a verdict, or an error naming where the input went wrong.

    Rows cross process boundaries compactly: pickled, a row carries its rendered JSON
    form, a summary (passed, hard codes, judges skipped) and its verdict as JSON text; the
    :class:`~liveguard.model.Verdict` object is rebuilt only when ``verdict`` is read. A row
    scored with ``verdicts=False`` (``score --format json|jsonl``, which writes only the JSON
    form) crosses without its verdict, and reading ``verdict`` then raises.
    """

    __slots__ = ("_json", "_line", "_summary", "_verdict", "_verdict_json", "error", "expected",
                 "graph", "keep_verdict", "path", "run_id", "source")

    def __init__(
        self,
        source: str,
        *,
        run_id: str | None = None,
        graph: str | None = None,
        verdict: Verdict | None = None,
        path: tuple[str, ...] = (),
        error: str | None = None,
        expected: Expected | None = None,
    ) -> None:
        self.source = source
        self.run_id = run_id
        self.graph = graph
        self.path = path
        self.error = error
        self.expected = expected
        self._verdict = verdict
        self._verdict_json: bytes | None = None
        self._json: dict[str, Any] | None = None
        self._line: bytes | None = None
        self._summary: _Summary | None = None if verdict is None else _summarise(verdict)
        self.keep_verdict = True
        """False: the verdict does not cross to another process (only the JSON form and the
        summary do)."""

    @property
    def verdict(self) -> Verdict | None:
        if self._verdict is None:
            if self._verdict_json is not None:
                self._verdict = Verdict.model_validate_json(self._verdict_json)
            elif self._summary is not None:  # a scored row that left its verdict behind
                raise RuntimeError("this row was scored with verdicts=False: it carries its JSON "
                                   "form (as_json) and its summary, not its Verdict")
        return self._verdict

    @property
    def passed(self) -> bool | None:
        return None if self._summary is None else self._summary[0]

    @property
    def hard_codes(self) -> tuple[str, ...]:
        return () if self._summary is None else self._summary[1]

    @property
    def judges_skipped(self) -> str | None:
        return None if self._summary is None else self._summary[2]

    @property
    def structural_only(self) -> bool:
        return self._summary is not None and self._summary[3]

    @property
    def reason(self) -> str | None:
        return None if self._summary is None else self._summary[4]

    @property
    def missing(self) -> tuple[str, ...]:
        return () if self._summary is None else self._summary[5]

    @property
    def matches_expected(self) -> bool | None:
        if self.expected is None or self._summary is None:
            return None
        return (self._summary[0], list(self._summary[1])) == (
            self.expected.passed,
            sorted(self.expected.hard_codes),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRow):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside: not hashable

    def _key(self) -> tuple[Any, ...]:
        return (self.source, self.run_id, self.graph, self.verdict, self.path, self.error, self.expected)

    def __repr__(self) -> str:
        return (f"RunRow(source={self.source!r}, run_id={self.run_id!r}, graph={self.graph!r}, "
                f"passed={self.passed!r}, error={self.error!r})")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        verdict_json = self._verdict_json
        if verdict_json is None and self._verdict is not None and self.keep_verdict:
            verdict_json = self._verdict.__pydantic_serializer__.to_json(self._verdict)
        expected = None if self.expected is None else self.expected.model_dump()
        path: tuple[str, ...] | str = self.path
        joined = _PATH_SEP.join(self.path)
        if joined and joined.count(_PATH_SEP) == len(self.path) - 1:  # one string crosses cheaper
            path = joined
        return _restore_row, ((self.source, self.run_id, self.graph, path, self.error, expected,
                               verdict_json, self.json_bytes(), self._summary),)

    def as_json(self) -> dict[str, Any]:
        """The row as written by ``score --format json|jsonl`` (a fresh top-level dict)."""
        return dict(self._render())

    def json_bytes(self) -> bytes:
        """The row as one line of ``score --format jsonl``, without the newline (``orjson.dumps``
        of :meth:`as_json`; a row that crossed from a worker carries it ready-made)."""
        if self._line is None:
            self._line = orjson.dumps(self._render())
        return self._line

    def _render(self) -> dict[str, Any]:
        if self._json is not None:
            return self._json
        if self._line is not None:  # a row from a worker: its JSON text came along
            self._json = orjson.loads(self._line)
            return self._json
        row: dict[str, Any] = {"run_id": self.run_id, "graph": self.graph, "source": self.source}
        v = self.verdict
        if v is None:
            row.update(passed=None, score=None, violations=[], provenance=None, error=self.error)
            self._json = row
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
        self._json = row
        return row


def _restore_row(state: tuple[Any, ...]) -> RunRow:
    """Unpickle a row: the verdict stays JSON text until it is read."""
    source, run_id, graph, path, error, expected, verdict_json, line, summary = state
    if isinstance(path, str):
        path = tuple(path.split(_PATH_SEP)) if path else ()
    row = RunRow(source=source, run_id=run_id, graph=graph, path=path, error=error,
                 expected=None if expected is None else Expected.model_validate(expected))
    row._verdict_json = verdict_json
    row._line = line
    row._summary = summary
    return row


INPUT_SUFFIXES = (".jsonl", ".json", ".parquet")


def input_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files named by ``paths``: a directory contributes its ``*.jsonl`` and ``*.json``
    files (not recursively) and its ``*.parquet`` files at any depth (a LangSmith bulk
    export is partitioned into ``key=value`` folders)."""
    for entry in paths:
        p = Path(entry)
        if not p.is_dir():
            yield p
            continue
        flat = [q for q in p.iterdir() if q.is_file() and q.suffix in (".jsonl", ".json")]
        deep = [q for q in p.rglob("*.parquet") if q.is_file()]
        yield from sorted(flat + deep)


def iter_records(paths: Iterable[str | Path]) -> Iterator[Record]:
    """``(source, payload)`` for every run, lazily: a JSONL line stays raw bytes (the scoring
    process parses it); LangSmith JSON exports and Parquet files are read here."""
    for f in input_files(paths):
        if f.suffix == ".json":
            from liveguard.langsmith import load_export

            yield from _guarded(f, load_export(f))
        elif f.suffix == ".parquet":
            from liveguard.readers.parquet import read_parquet

            yield from _guarded(f, read_parquet(f))
        else:
            yield from _jsonl_lines(f)


_BLOCK = 1 << 20
"""Bytes read at a time from a JSONL file: lines are cut out of each block, about twice as
cheap as iterating the file object (the parent process does this for every run)."""


def _jsonl_lines(path: Path, block_size: int = _BLOCK) -> Iterator[Record]:
    """``(file:line, line)`` for every non-blank line, each line exactly as iterating the file
    in binary mode yields it (only ``\n`` ends a line, and it stays on the line)."""
    try:
        handle = path.open("rb", buffering=0)
    except OSError as exc:
        yield str(path), TrajectoryReadError(str(path), f"cannot open: {exc.strerror or exc}")
        return
    name = str(path)
    with handle:
        number = 0
        pending: list[bytes] = []  # the start of a line that continues in the next block
        try:
            while block := handle.read(block_size):
                if b"\n" not in block:  # a long line: no quadratic re-joining
                    pending.append(block)
                    continue
                data = b"".join((*pending, block)) if pending else block
                find, pos = data.find, 0
                while (nl := find(b"\n", pos)) >= 0:
                    number += 1
                    raw = data[pos : nl + 1]
                    pos = nl + 1
                    if raw.strip():
                        yield f"{name}:{number}", raw
                pending = [data[pos:]] if pos < len(data) else []
            rest = b"".join(pending)
            if rest:
                number += 1
                if rest.strip():
                    yield f"{name}:{number}", rest
        except OSError as exc:
            where = f"{name}:{number + 1}"
            yield where, TrajectoryReadError(where, f"reading stopped: {exc.strerror or exc}")


def _guarded(path: Path, items: Iterable[Trajectory | TrajectoryReadError]) -> Iterator[Record]:
    """A reader's items as records; a reader that raises ends its file with one error row."""
    try:
        for item in items:
            yield (item.source if isinstance(item, TrajectoryReadError) else str(path)), item
    except Exception as exc:  # batch isolation: the rest of the batch goes on
        yield str(path), TrajectoryReadError(str(path), f"reading stopped: {type(exc).__name__}")


def iter_inputs(paths: Iterable[str | Path]) -> Iterator[tuple[str, Trajectory | TrajectoryReadError]]:
    """(source, run-or-error) for every run in JSONL files, LangSmith JSON exports, Parquet
    bulk exports and directories (see :func:`input_files`)."""
    for source, payload in iter_records(paths):
        yield source, (parse_line(payload, source) if isinstance(payload, bytes) else payload)


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
                     expected=row.expected)


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
    from liveguard.engine.local import iter_rows_local

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

    ``engine="local"``: :func:`iter_scored` over :func:`iter_records`. ``engine="ray"``:
    the same scoring functions on a Ray cluster (``ray_address``; default: a local one),
    through Ray Data (:mod:`liveguard.integrations.ray`). Same rows, same order.
    """
    if engine == "local":
        yield from iter_scored(iter_records(paths), allow_sets=allow_sets, default_policy=default_policy,
                               judges=judges, jobs=jobs, progress=progress, settings=settings,
                               explicit_policy=explicit_policy, mark_duplicate_ids=mark_duplicate_ids,
                               verdicts=verdicts)
        return
    if engine != "ray":
        raise ValueError(f"unknown engine {engine!r}: expected 'local' or 'ray'")
    from liveguard.integrations.ray import iter_rows_ray

    options = _options(allow_sets, default_policy, judges, settings, explicit_policy, verdicts=verdicts)
    yield from _counted(iter_rows_ray(paths, options, address=ray_address), progress, mark_duplicate_ids)


def score_runs(
    items: Iterable[tuple[str, Trajectory | TrajectoryReadError]] | Iterable[Record], **options: Any
) -> list[RunRow]:
    """Every row of :func:`iter_scored`, as a list (same keyword options; ``jobs`` default 1)."""
    options.setdefault("jobs", 1)
    return list(iter_scored(items, **options))
