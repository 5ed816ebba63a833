"""``score``'s text table: a header, fixed columns, hard and soft findings apart.

Rows are written as they are scored (bounded memory), so the columns have fixed widths; a
value wider than its column is cut with ``…`` (every value is whole in ``--format json``
and ``jsonl``). The findings come last, unbounded: ``hard:`` the violations that fail a
run, ``soft:`` the findings that do not (a missing allow-set, a warning), each as
``code@step``. A run read from LangSmith shows its name beside its id.

On a terminal, the progress bar (tqdm, on stderr) is cleared before a row is written and
drawn again after it, so a row never runs into the bar (:func:`write_row`).
"""

from __future__ import annotations

import sys
from typing import Final, TextIO

from liveguard.evaluate.rows import RunRow

__all__ = ["COLUMNS", "header", "row_line", "write_row"]

COLUMNS: Final = (("VERDICT", 10), ("JUDGE", 5), ("RUN", 36), ("NAME", 18), ("GRAPH", 16))
"""The fixed columns and their widths; FINDINGS follows, unbounded."""


def _cell(text: str, width: int) -> str:
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"


def _line(cells: list[str], tail: str) -> str:
    fixed = " ".join(_cell(c, w) for c, (_, w) in zip(cells, COLUMNS, strict=True))
    return f"{fixed} {tail}".rstrip()


def header() -> str:
    """The header line: the column names, and what FINDINGS holds."""
    return _line([name for name, _ in COLUMNS], "FINDINGS (hard: fail the run; soft: do not)")


def row_line(r: RunRow) -> str:
    """One row: verdict, judge score, run id, name, graph, then the findings and notes."""
    if r.verdict is None:
        return _line(["ERROR", "-", r.run_id or "-", r.name or "-", r.graph or "-"],
                     f"{r.source}: {r.error}")
    v = r.verdict
    verdict = "PASS" if v.passed else "UNJUDGED" if v.reason.endswith("unjudged") else "FAIL"
    if v.missing and not v.reason.endswith("unjudged") and not v.passed and not v.hard_codes:
        verdict = "INCOMPLETE"
    judge = "-" if v.composite is None else f"{v.composite:.2f}"
    hard = ", ".join(f"{x.code}@{x.step}" for x in v.violations if x.severity == "hard")
    soft = ", ".join(f"{x.code}@{x.step}" for x in v.violations if x.severity != "hard")
    parts = [f"hard: {hard or '-'}"] + ([f"soft: {soft}"] if soft else [])
    mark = {None: "", True: "as expected", False: "UNEXPECTED"}[r.matches_expected]
    if mark:
        parts.append(mark)
    if v.missing:
        parts.append(f"missing: {', '.join(v.missing)}")
    return _line([verdict, judge, r.run_id or "-", r.name or "-", r.graph or "-"], "; ".join(parts))


def write_row(out: TextIO, line: str) -> None:
    """Write ``line`` to ``out``; on a terminal, with the progress bar cleared first.

    The bar is on stderr, drawn only when stderr is a terminal; when ``out`` is one too,
    both land on the same screen: the bar is cleared, the row written, the bar redrawn.
    """
    if not (out.isatty() and sys.stderr.isatty()):
        out.write(line + "\n")
        return
    from tqdm import tqdm

    with tqdm.external_write_mode(file=sys.stderr):
        out.write(line + "\n")
        out.flush()
