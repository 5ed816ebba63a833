"""The report's data: per-graph aggregates and per-run marks, read from the verdicts.

Nothing here re-derives a decision: illegal hops come from ``illegal_transition``
violations (their step index locates the hop on the run's path), dead ends from
``dead_end`` violations, looping nodes from the loop codes. The allow-set is only used
for what the diagram draws (its edges, and whether a finished run's last node has an edge
to ``__end__``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from liveguard.core.allowset import END, START, AllowSet
from liveguard.core.codes import LOOP_CODES
from liveguard.core.model import Verdict, Violation

__all__ = ["LOOP_CODES", "GraphData", "ReportRow", "ReportRun", "collect", "failing_first", "label"]


Label = Literal["PASS", "FAIL", "ERROR"]


class ReportRow(Protocol):
    """What the report reads of a row: :class:`ReportRun`, or the CLI's ``RunRow`` as it is."""

    @property
    def run_id(self) -> str | None: ...
    @property
    def graph(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def verdict(self) -> Verdict | None: ...
    @property
    def path(self) -> tuple[str, ...]: ...
    @property
    def error(self) -> str | None: ...


@dataclass(frozen=True)
class ReportRun:
    """One row of the report: a scored run, or an input error (``verdict`` None)."""

    run_id: str | None
    graph: str | None
    source: str  # file or file:line
    verdict: Verdict | None  # None when the run could not be read/scored
    path: tuple[str, ...]  # the observed node sequence (Step.node in order)
    error: str | None = None


def label(run: ReportRow) -> Label:
    if run.verdict is None:
        return "ERROR"
    return "PASS" if run.verdict.passed else "FAIL"


_ORDER: dict[Label, int] = {"FAIL": 0, "ERROR": 1, "PASS": 2}


def failing_first(runs: Sequence[ReportRow]) -> list[ReportRow]:
    """Failing runs first, then unreadable ones, then passing ones; input order within each."""
    return [run for _, run in sorted(enumerate(runs), key=lambda item: (_ORDER[label(item[1])], item[0]))]


def hop_of(run: ReportRow, violation: Violation) -> tuple[str, str]:
    """The hop a violation at ``violation.step`` fired on: (previous node or __start__, node)."""
    step = violation.step
    source = START if step == 0 or step > len(run.path) else run.path[step - 1]
    return source, violation.node


@dataclass
class GraphData:
    name: str
    allow: AllowSet | None
    runs: list[ReportRow]
    edge_counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    edge_runs: Counter[tuple[str, str]] = field(default_factory=Counter)
    visits: Counter[str] = field(default_factory=Counter)
    visit_runs: Counter[str] = field(default_factory=Counter)
    max_visits: dict[str, int] = field(default_factory=dict)
    looping: dict[str, Counter[str]] = field(default_factory=dict)  # node -> code -> runs
    dead_ends: Counter[str] = field(default_factory=Counter)
    illegal_runs: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # from violations

    def is_legal(self, source: str, target: str) -> bool:
        """Drawn as allowed: the allow-set lists it and no run was flagged taking it."""
        return (
            self.allow is not None
            and (source, target) not in self.illegal_runs
            and self.allow.allows(source, target)
        )


def collect(name: str, allow: AllowSet | None, runs: Sequence[ReportRow]) -> GraphData:
    data = GraphData(name, allow, failing_first(runs))
    for run in data.runs:
        path = run.path
        hops = list(zip((START, *path), path, strict=False))
        if allow is not None and path and allow.allows(path[-1], END):
            hops.append((path[-1], END))  # drawn: the run could finish there
        for hop in hops:
            data.edge_counts[hop] += 1
        for hop in set(hops):
            data.edge_runs[hop] += 1
        per_run = Counter(path)
        if path:
            per_run[START] = 1
            if allow is not None and allow.allows(path[-1], END):
                per_run[END] = 1
        for node, count in per_run.items():
            data.visits[node] += count
            data.visit_runs[node] += 1
            data.max_visits[node] = max(data.max_visits.get(node, 0), count)
        if run.verdict is None:
            continue
        flagged: set[tuple[str, str]] = set()
        illegal: set[tuple[str, str]] = set()
        for v in run.verdict.violations:
            if v.code == "illegal_transition":
                illegal.add(hop_of(run, v))
            if v.code == "dead_end":
                data.dead_ends[v.node] += 1
            if v.code not in LOOP_CODES:
                continue
            flagged.add((v.node, v.code))
            period = v.detail.get("period")
            if v.code == "content_cycle" and isinstance(period, int) and 0 < period <= v.step + 1:
                for node in path[v.step + 1 - period : v.step + 1]:
                    flagged.add((node, v.code))
        for hop in sorted(illegal):
            data.illegal_runs.setdefault(hop, []).append(run.run_id or run.source)
        for node, code in flagged:
            data.looping.setdefault(node, Counter())[code] += 1
    return data
