"""``liveguard report PATH... -o FILE``: the static HTML report (an overview and its pages).

FILE is the overview; its pages (run lists, one drill-down page per run) go to a folder
beside it (:func:`liveguard.report.site.pages_dir`). The command refuses to overwrite an
input. Exit 0 once written (``--fail-on rollback|hold``: as the gate does), 2 when the input
was refused, a run could not be read, or the report cannot be written (one line).
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any, TextIO

from liveguard.cli._common import (
    DEFAULT_PATHS,
    EXIT_OK,
    EXIT_USAGE,
    Progress,
    UsageError,
    add_engine,
    add_inputs,
    add_window,
    all_rows,
    cannot_write,
    output_path,
)
from liveguard.cli.gate import decision_of

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add ``report`` to the CLI's subcommands."""
    report = sub.add_parser("report", help="write a static HTML report (overview and pages)")
    add_inputs(report)
    add_window(report)
    add_engine(report)
    report.add_argument("-o", "--output", default="report.html",
                        help="the overview page; the other pages go to a folder beside it "
                             "(report.html: report_pages/)")
    report.add_argument("--fail-on", choices=("rollback", "hold"), default=None,
                        help="exit as the gate does: rollback: 4 on ROLLBACK; hold: also 3 on HOLD "
                             "(default: 0 once the report is written; 2, the report still "
                             "written, when a run could not be read)")
    report.set_defaults(handler=run)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def run(args: argparse.Namespace, out: TextIO) -> int:
    from liveguard.report.site import pages_dir, write_report

    target = output_path(args.output, "-o")  # before scoring: a directory or no folder is exit 2
    folder = pages_dir(target)
    inputs: list[Path] = []
    allow_dir = args.paths_dir or (DEFAULT_PATHS if Path(DEFAULT_PATHS).is_dir() else None)
    for p in [*args.paths, *([allow_dir] if allow_dir else [])]:
        path = Path(p)
        inputs += [q for q in path.rglob("*") if q.is_file()] if path.is_dir() else [path]
    clash = next((p for p in inputs if _same_file(p, target)), None)
    if clash is not None:
        raise UsageError(f"-o {target}: refusing to overwrite the input file {clash}")
    inside = next((p for p in inputs if p.resolve().is_relative_to(folder.resolve())), None)
    if inside is not None:
        raise UsageError(f"-o {target}: its pages folder {folder}/ holds the input file {inside}")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"-o {target}: {folder} (its pages folder) exists and is not a directory")
    rows = all_rows(args)
    decision = decision_of(args, rows)
    # Every row and verdict lives until the end: out of the collector's sight, so writing
    # 50,000 pages does not rescan them again and again.
    gc.freeze()
    progress = Progress("liveguard report: pages") if sys.stderr.isatty() else None
    try:
        files = write_report(rows, decision, args.allow_sets, target, policy=args.policy or "workflow",
                             inputs=args.paths, progress=progress)
    except OSError as exc:  # a read-only folder, a full disk, a page name taken by a folder
        raise cannot_write("-o", target, exc) from None
    finally:
        gc.unfreeze()  # main() may run inside a longer-lived process
        if progress is not None:
            progress.close()
    out.write(f"wrote {args.output}: {len(rows)} runs, decision {decision.decision}; "
              f"{files.run_pages} run page(s) and {files.list_pages + files.failing_pages} list page(s) "
              f"in {files.pages}/\n")
    out.write(f"  {decision.window_line()}\n")
    for line in decision.missing:
        out.write(f"  missing: {line}\n")
    if decision.decision == "REFUSE":
        for reason in decision.reasons:
            print(f"liveguard: refused: {reason}", file=sys.stderr)
        return EXIT_USAGE
    if any(r.error for r in rows):
        return EXIT_USAGE
    failing = {"rollback": ("ROLLBACK",), "hold": ("ROLLBACK", "HOLD")}.get(args.fail_on or "", ())
    return decision.exit_code if decision.decision in failing else EXIT_OK
