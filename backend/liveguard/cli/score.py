"""``liveguard score PATH...``: one row per run (a table, JSON or JSONL), nothing dropped.

PATH is a JSONL file, a LangSmith JSON export, a Parquet bulk export or a directory of them;
``--langsmith-project NAME`` also scores the root runs of a LangSmith project, and
``--push-feedback`` writes a ``liveness`` feedback row on each of them. Rows are written as
they are scored (bounded memory); exit 1 with ``--strict`` when a run fails, 2 when one
cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

import orjson

from liveguard.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_engine,
    add_inputs,
    iter_rows,
    langsmith_client,
)
from liveguard.cli._table import header, row_line, write_row
from liveguard.core.evidence import RULE_FAMILY_OFF, MissingEvidence
from liveguard.core.model import Trajectory
from liveguard.evaluate.rows import RunRow

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add ``score`` to the CLI's subcommands."""
    score = sub.add_parser("score", help="score recorded runs")
    add_inputs(score, required=False)
    score.add_argument("--langsmith-project", metavar="NAME", default=None,
                       help="also score the root runs of this LangSmith project")
    score.add_argument("--push-feedback", action="store_true",
                       help="write a 'liveness' feedback row on each LangSmith run scored")
    score.add_argument("--format", choices=("table", "json", "jsonl"), default="table")
    score.add_argument("--strict", action="store_true", help="exit 1 when any run fails")
    add_engine(score)
    score.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    if not args.paths and not args.langsmith_project:
        print("liveguard: give PATH... or --langsmith-project NAME", file=sys.stderr)
        return EXIT_USAGE
    if args.push_feedback and not args.langsmith_project:
        print("liveguard: --push-feedback needs --langsmith-project", file=sys.stderr)
        return EXIT_USAGE
    if args.engine == "ray" and args.langsmith_project:
        print("liveguard: --engine ray reads PATH... only, not --langsmith-project", file=sys.stderr)
        return EXIT_USAGE
    tally = _emit(iter_rows(args), args.format, out)
    if not tally.total:
        print("liveguard: no runs found", file=sys.stderr)
        return EXIT_USAGE
    if args.push_feedback:
        from_langsmith = {
            t.run_id: t for _, t in args.langsmith_items if isinstance(t, Trajectory)
        }
        _push_feedback(tally.langsmith, from_langsmith, out)
    if tally.errors:
        return EXIT_USAGE
    if args.strict and tally.passed < tally.total:
        return EXIT_FAILED
    return EXIT_OK


def _push_feedback(rows: list[RunRow], items: dict[str, Trajectory], out: TextIO) -> int:
    """One ``liveness`` feedback row per scored LangSmith run (``feedback_for``: hard codes)."""
    from liveguard.evaluate._langsmith import feedback_for, push_feedback

    client = langsmith_client()
    pushed = 0
    for row in rows:
        run = items.get(row.run_id or "")
        if row.verdict is None or run is None:
            continue
        push_feedback(client, row.run_id, **feedback_for(row.verdict),
                      session_id=(run.metadata or {}).get("session_id"))
        pushed += 1
    out.write(f"-- pushed {pushed} feedback row(s) to LangSmith\n")
    return pushed


@dataclass
class _Tally:
    """What ``score`` needs to know about the rows it has streamed out."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    mismatched: int = 0
    unjudged: int = 0
    structural: int = 0
    skipped: set[str] = field(default_factory=set)
    families: set[str] = field(default_factory=set)
    langsmith: list[RunRow] = field(default_factory=list)

    def add(self, r: RunRow) -> None:
        self.total += 1
        passed, error, reason = r.passed, r.error, r.reason
        self.passed += passed is True
        self.failed += passed is False
        self.errors += error is not None
        if r.expected is not None:
            self.mismatched += r.matches_expected is False
        self.unjudged += reason is not None and reason.endswith("unjudged")
        self.structural += error is not None or r.structural_only
        skipped = r.judges_skipped
        if skipped:
            self.skipped.add(skipped)
        missing = r.missing
        if missing:
            parsed = (MissingEvidence.parse(m) for m in missing)
            self.families.update(m.detail for m in parsed if m.kind == RULE_FAMILY_OFF)
        if r.source.startswith("langsmith:"):
            self.langsmith.append(r)


def _emit(rows: Iterable[RunRow], fmt: str, out: TextIO) -> _Tally:
    """Write each row as it comes (bounded memory); the tally of what was written."""
    tally = _Tally()
    if fmt == "json":
        out.write("[")
    for r in rows:
        if fmt == "jsonl":
            out.write(r.json_bytes().decode() + "\n")
        elif fmt == "json":
            text = orjson.dumps(r.as_json(), option=orjson.OPT_INDENT_2).decode()
            out.write(("\n" if not tally.total else ",\n") + "\n".join("  " + ln for ln in text.splitlines()))
        else:
            write_row(out, row_line(r) if tally.total else f"{header()}\n{row_line(r)}")
        tally.add(r)
    if fmt == "json":
        out.write("\n]\n" if tally.total else "]\n")
    if fmt in ("json", "jsonl"):
        return tally
    skipped = sorted(tally.skipped)
    judges = f"Judges skipped: {', '.join(skipped)}." if skipped else "Judges ran."
    if tally.total and tally.structural == tally.total:
        judges = "Structural only (--no-judges): judges not asked."
    out.write(
        f"-- {tally.total} runs: {tally.total - tally.failed - tally.errors} passed, {tally.failed} failed "
        f"({tally.unjudged} unjudged), {tally.errors} unreadable; expected-verdict mismatches: "
        f"{tally.mismatched}. {judges}\n"
    )
    if tally.families:
        out.write(f"-- rule families off: {', '.join(sorted(tally.families))}\n")
    return tally
