"""One scoring process: records in, one :class:`~liveguard.evaluate.rows.RunRow` per record out.

A :class:`Scorer` is built once per process (the local engine's workers, a Ray worker,
or the calling process with ``jobs=1``): it builds the judge gateway and the eval graph
once, and the :class:`~liveguard.evaluate.engine.floor.Floor` over the graph's own node functions.
Each run goes through the floor: a plain loop when no judge can run, awaiting the judge
nodes when judges are on (runs of a chunk concurrently, the gateway bounding the calls in
flight); the LangGraph invocation is the fallback when the floor declines the graph.
Every engine calls :meth:`Scorer.score_chunk`, so every engine gives the same rows for the
same records.

Batch isolation: whatever goes wrong with one record (unreadable JSON, a hostile value
that trips a rule, a bug), that record becomes an error row (``ExceptionType: message``)
and the others are scored. No step text reaches an error row, by construction rather than
by redaction: a read error names keys and positions only (:mod:`liveguard.core.schema_errors`,
built without the input), an error of liveguard's own (a ``LiveguardError``, a missing
extra's ``ImportError``) keeps its message, which names settings and packages, never the
run's text; any other exception is named by its type and where it was raised, its message
withheld (:func:`liveguard.core.schema_errors.withheld`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from liveguard.core.allowset import AllowSet
from liveguard.core.model import Trajectory, Verdict
from liveguard.core.policy import Policy
from liveguard.core.schema_errors import withheld
from liveguard.errors import LiveguardError, TrajectoryReadError
from liveguard.readers.inputs import LineReader, LineRef, Payload, Record, unreadable
from liveguard.readers.jsonl import parse_line

if TYPE_CHECKING:
    from liveguard.evaluate.engine.floor import Floor
    from liveguard.evaluate.judges import JudgeClient, JudgeConfig
    from liveguard.evaluate.rows import RunRow
    from liveguard.settings import Settings

__all__ = ["Payload", "Record", "ScoreOptions", "Scorer"]


@dataclass(frozen=True)
class ScoreOptions:
    """Everything a scoring process needs; picklable, so workers and Ray actors get a copy."""

    allow_sets: Mapping[str, AllowSet] = field(default_factory=dict)
    default_policy: Policy | None = None
    """For runs that name no policy preset (default: the workflow preset and the settings)."""
    explicit_policy: Policy | None = None
    """For every run, whatever its metadata says (the CLI's ``--policy``)."""
    judges: bool = True
    """False: a structural-only evaluation (the CLI's ``--no-judges``)."""
    env: Mapping[str, str] | None = None
    """liveguard's environment variables, read once where the command runs (workers, and
    Ray workers on other machines, may not share that environment); None: this process's."""
    judge_concurrency: int | None = None
    """Judge calls in flight in this process (default: the config's ``concurrency``)."""
    verdicts: bool = True
    """False: rows cross from the scoring processes without their verdict, only their JSON
    form and summary (for output that writes just that: ``score --format json|jsonl``)."""

    def settings(self) -> Settings:
        from liveguard.settings import Settings

        return Settings.from_env(dict(self.env) if self.env is not None else None)

    def judge_config(self) -> JudgeConfig:
        from liveguard.evaluate.judges import JudgeConfig

        return JudgeConfig.from_settings(self.settings())


class Scorer:
    """Scores records in one process; builds its gateway, graph and floor once."""

    def __init__(self, options: ScoreOptions) -> None:
        from liveguard.evaluate.engine.floor import Floor
        from liveguard.evaluate.eval_graph import EvalState, eval_chain

        self.options = options
        self.settings = settings = options.settings()
        config = options.judge_config()
        if options.judge_concurrency is not None:
            config = config.model_copy(update={"concurrency": max(1, options.judge_concurrency)})
        self.gateway: JudgeClient = self._gateway(config)
        self.judging = options.judges and self.gateway.skip_reason is None
        """A judge may be called (else every run takes the synchronous floor)."""
        # The floor runs the eval graph's own node functions without LangGraph (not even
        # imported); the compiled graph is built only if a run needs it (see ``graph``).
        self.floor: Floor | None = Floor.from_chain(
            eval_chain(client=self.gateway, structural_only=not options.judges, settings=settings),
            EvalState)
        self._graph: Any = None
        from liveguard.evaluate.eval_graph import _inputs

        self._graph_inputs = _inputs
        given = options.default_policy
        self.default = given if given is not None else settings.policy(Policy())
        self.allowsets_in_use = bool(options.allow_sets)
        self._presets: dict[str, Policy] = {}
        self._lines = LineReader()

    @property
    def graph(self) -> Any:
        """The compiled eval graph around this scorer's judge client (built on first use)."""
        if self._graph is None:
            from liveguard.evaluate.eval_graph import build_eval_graph

            self._graph = build_eval_graph(client=self.gateway, structural_only=not self.options.judges,
                                           settings=self.settings)
        return self._graph

    def _gateway(self, config: JudgeConfig) -> JudgeClient:
        """The client judges go through (the Ray engine wraps it in a global bound)."""
        from liveguard.evaluate.judges import JudgeClient

        return JudgeClient(config)

    # -- one run ------------------------------------------------------------------------------
    def policy_for(self, run: Trajectory) -> Policy:
        """:func:`liveguard.evaluate.scoring.policy_for`, with each preset's policy built once per process."""
        if self.options.explicit_policy is not None:
            return self.options.explicit_policy
        metadata = run.metadata
        preset = metadata.get("policy") if metadata else None
        if preset is None:
            return self.default
        policy = self._presets.get(preset) if isinstance(preset, str) else None
        if policy is not None:
            return policy
        from liveguard.core.policy import PRESETS

        if isinstance(preset, str) and preset in PRESETS:
            policy = self._presets[preset] = self.settings.policy(PRESETS[preset]())
            return policy
        return self.default

    def _inputs(self, run: Trajectory) -> tuple[AllowSet | None, Policy]:
        allow = self.options.allow_sets.get(run.graph) if run.graph else None
        return allow, self.policy_for(run)

    def floor_verdict(self, run: Trajectory) -> Verdict:
        """The verdict without judges, through the floor (the graph when the floor declines)."""
        from liveguard.evaluate.engine.floor import FloorNeedsLoop

        if self.floor is None:
            return asyncio.run(self.graph_verdict(run))
        try:
            state = self.floor.invoke(self._state(run))
        except FloorNeedsLoop:  # a node wanted I/O after all: the graph, with its event loop
            return asyncio.run(self.graph_verdict(run))
        return self._final(state)

    async def averdict(self, run: Trajectory) -> Verdict:
        """The verdict with judges: the same chain of nodes, judge nodes awaited."""
        if self.floor is None:
            return await self.graph_verdict(run)
        return self._final(await self.floor.ainvoke(self._state(run)))

    async def graph_verdict(self, run: Trajectory) -> Verdict:
        """The verdict through a LangGraph invocation of the eval graph (the reference path)."""
        from liveguard.evaluate.eval_graph import aevaluate_trajectory

        allow, policy = self._inputs(run)
        return await aevaluate_trajectory(run, allow_set=allow, policy=policy, graph=self.graph,
                                          allowsets_in_use=self.allowsets_in_use)

    def _state(self, run: Trajectory) -> dict[str, Any]:
        """The graph's input state for ``run`` (as :func:`aevaluate_trajectory` builds it)."""
        allow, policy = self._inputs(run)
        return self._graph_inputs(run, allow, policy, None, self.allowsets_in_use)

    @staticmethod
    def _final(state: Mapping[str, Any]) -> Verdict:
        """The final verdict of a finished state (the graph's last node wrote it)."""
        verdict: Verdict = state["verdict"]
        return verdict

    # -- rows ---------------------------------------------------------------------------------
    @staticmethod
    def _read(source: str, payload: bytes | memoryview | Trajectory | TrajectoryReadError) -> (
            Trajectory | TrajectoryReadError):
        if isinstance(payload, bytes | memoryview):
            return parse_line(payload, source)
        return payload

    @staticmethod
    def _error_row(source: str, payload: Payload, exc: BaseException, run: Trajectory | None) -> RunRow:
        from liveguard.evaluate.rows import RunRow

        error = _error_text(exc)
        if run is None:
            return RunRow(source=source, error=error)
        return RunRow(source=source, run_id=run.run_id, graph=run.graph, name=_name_of(run),
                      path=tuple(s.node for s in run.steps), error=error, expected=run.expected)

    def _prepare(self, source: str, payload: Payload) -> Trajectory | RunRow:
        from liveguard.evaluate.rows import RunRow

        try:
            if isinstance(payload, LineRef):  # read into the reader's buffer, parsed from there
                with self._lines.lock:  # one line in the buffer at a time, whatever the threads
                    try:
                        item = self._read(source, self._lines.view(payload))
                    except OSError as exc:
                        item = unreadable(source, exc)
            else:
                item = self._read(source, payload)
        except Exception as exc:  # batch isolation: a reader bug is this record's error row
            return self._error_row(source, payload, exc, None)
        if isinstance(item, TrajectoryReadError):  # its reason names keys, never values
            return RunRow(source=item.source, error=item.reason)
        return item

    def _row(self, source: str, run: Trajectory, verdict: Verdict) -> RunRow:
        from liveguard.evaluate.rows import RunRow

        row = RunRow(source=source, run_id=run.run_id, graph=run.graph, name=_name_of(run),
                     path=tuple([s.node for s in run.steps]), verdict=verdict, expected=run.expected)
        row.keep_verdict = self.options.verdicts
        return row

    def score_chunk(self, chunk: Sequence[Record]) -> list[RunRow]:
        """One row per record, in order."""
        if not self.judging:
            return [self._score_floor(source, payload) for source, payload in chunk]
        return asyncio.run(self._ascore_chunk(chunk))

    def _score_floor(self, source: str, payload: Payload) -> RunRow:
        try:
            return self._score_floor_unguarded(source, payload)
        except Exception as exc:  # even the error path failed: a row naming only the type
            return _bare_error(source, exc)

    def _score_floor_unguarded(self, source: str, payload: Payload) -> RunRow:
        item = self._prepare(source, payload)
        if not isinstance(item, Trajectory):
            return item
        try:
            return self._row(source, item, self.floor_verdict(item))
        except Exception as exc:  # batch isolation, whatever the type
            return self._error_row(source, payload, exc, item)

    async def _ascore_chunk(self, chunk: Sequence[Record]) -> list[RunRow]:
        """With judges: runs concurrently; the gateway bounds the judge calls in flight."""
        limit = asyncio.Semaphore(max(4, 4 * self.gateway.config.concurrency))

        async def one(source: str, payload: Payload) -> RunRow:
            try:
                return await one_unguarded(source, payload)
            except Exception as exc:  # even the error path failed: a row naming only the type
                return _bare_error(source, exc)

        async def one_unguarded(source: str, payload: Payload) -> RunRow:
            item = self._prepare(source, payload)
            if not isinstance(item, Trajectory):
                return item
            async with limit:
                try:
                    return self._row(source, item, await self.averdict(item))
                except Exception as exc:  # batch isolation, whatever the type
                    return self._error_row(source, payload, exc, item)

        try:
            return list(await asyncio.gather(*(one(s, p) for s, p in chunk)))
        finally:
            await self.gateway.aclose()  # the client belongs to this chunk's event loop


def _name_of(run: Trajectory) -> str | None:
    """A person's handle on the run for the table: the recorded run's name (a LangSmith root
    run's, ``metadata.run_name``) unless it is just the graph's, else its scenario; None when
    it has neither."""
    metadata = run.metadata or {}
    name, scenario = metadata.get("run_name"), metadata.get("scenario")
    # a root run named after its graph says less than the scenario it recorded
    for value in ((name if name != run.graph else None), scenario, name):
        if isinstance(value, str) and value and value != run.run_id:
            return value
    return None


def _error_text(exc: BaseException) -> str:
    """An error row's text: liveguard's own errors as written, any other with its message withheld."""
    if isinstance(exc, LiveguardError | ImportError):
        message = str(exc)
        return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return withheld(exc)


def _bare_error(source: str, exc: BaseException) -> RunRow:
    from liveguard.evaluate.rows import RunRow

    return RunRow(source=source, error=f"{type(exc).__name__} (message withheld)")


def default_jobs() -> int:
    """Worker processes by default: the number of cores."""
    return os.cpu_count() or 1


CHUNK_BYTES = 1 << 20
"""Raw JSONL bytes per chunk at most (besides the record count): runs of recorded agents with
long tool outputs (90 KB a run) come in chunks of a dozen, so every worker gets its share of a
small file, where 128 of them would leave one worker idle."""


def chunked(records: Iterable[Record], size: int, max_bytes: int = CHUNK_BYTES) -> Iterable[list[Record]]:
    """``records`` in lists of ``size`` records, or fewer when their raw lines reach ``max_bytes``."""
    chunk: list[Record] = []
    held = 0
    for record in records:
        chunk.append(record)
        payload = record[1]
        if isinstance(payload, bytes):
            held += len(payload)
        elif isinstance(payload, LineRef):
            held += payload.length
        if len(chunk) >= size or held >= max_bytes:
            yield chunk
            chunk = []
            held = 0
    if chunk:
        yield chunk
