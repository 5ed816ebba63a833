"""One output row of batch scoring: a verdict, or an error naming where the input went wrong.

:class:`RunRow` is what every scoring engine yields (the local workers, Ray, the approval
step's record) and what ``score``, ``gate`` and ``report`` read. It has its own module so
that the engines and the batch front end (:mod:`liveguard.evaluate.scoring`) both import it from
below, not from each other.
"""

from __future__ import annotations

from typing import Any

import orjson

from liveguard.core.evidence import JUDGE_ERROR, MissingEvidence
from liveguard.core.model import Expected, Verdict

__all__ = ["RunRow"]

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
    :class:`~liveguard.core.model.Verdict` object is rebuilt only when ``verdict`` is read. A row
    scored with ``verdicts=False`` (``score --format json|jsonl``, which writes only the JSON
    form) crosses without its verdict, and reading ``verdict`` then raises.
    """

    __slots__ = ("_json", "_line", "_summary", "_verdict", "_verdict_json", "error", "expected",
                 "graph", "keep_verdict", "name", "path", "run_id", "source")

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
        name: str | None = None,
    ) -> None:
        self.source = source
        self.run_id = run_id
        self.name = name
        """A person's handle on the run beside its id (a LangSmith run's name or scenario), for
        the text table; not part of the JSON form."""
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
                               verdict_json, self.json_bytes(), self._summary, self.name),)

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
                "judge_errors": [e.detail for e in map(MissingEvidence.parse, v.missing)
                                 if e.kind == JUDGE_ERROR],
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
    source, run_id, graph, path, error, expected, verdict_json, line, summary, name = state
    if isinstance(path, str):
        path = tuple(path.split(_PATH_SEP)) if path else ()
    row = RunRow(source=source, run_id=run_id, graph=graph, path=path, error=error,
                 expected=None if expected is None else Expected.model_validate(expected), name=name)
    row._verdict_json = verdict_json
    row._line = line
    row._summary = summary
    return row
