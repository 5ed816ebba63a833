"""The ``liveguard`` console script: a thin shell over the library.

Commands:
  score PATH...             score recorded runs (JSONL, LangSmith JSON exports, directories,
                            or --langsmith-project NAME [--push-feedback])
  gate PATH...              release decision over every run (or --window N): PROMOTE / HOLD /
                            ROLLBACK; --format json, --junit FILE for CI
  report PATH... -o FILE    a static HTML report: FILE (the overview) and FILE's pages folder
                            (run lists, one drill-down page per run); --fail-on rollback|hold
  paths check FILE...       static checks of allow-sets
  paths derive MODULE:ATTR  write the allow-set YAML of a compiled LangGraph graph

Exit status: 0 done; 1 ``score --strict`` with a failing run or ``paths check`` with an
error finding; 2 bad input or usage (and ``gate``/``report`` refusing: duplicate run ids,
unreadable runs); ``gate`` (and ``report --fail-on``): PROMOTE 0, HOLD 3, ROLLBACK 4; 70 a
bug in liveguard itself.

Progress goes to stderr, and only when stderr is a terminal (never on a pipe or a file).

The environment is read once, here (:class:`liveguard.settings.Settings`), and passed inward.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import itertools
import os
import sys
import traceback
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import orjson

from liveguard import cli_approvals
from liveguard.allowset import (
    AllowSet,
    AllowSetError,
    check_allowset,
    derive_transitions,
    load_allowset,
    load_allowsets,
)
from liveguard.errors import PolicyError, TrajectoryReadError
from liveguard.gate import GATE_PASS_RATE, GateDecision, decide
from liveguard.model import Trajectory
from liveguard.policy import PRESETS
from liveguard.readers.inputs import iter_records
from liveguard.rows import RunRow
from liveguard.scoring import Record, iter_scored, score_paths
from liveguard.settings import Settings
from liveguard.terminal import VisibleWriter, visible

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BUG = 70  # EX_SOFTWARE: an internal error, never confused with --strict's 1
DEFAULT_PATHS = "expected_paths"


class UsageError(Exception):
    """Bad input or usage: one line on stderr, exit 2."""


def _allow_sets(args: argparse.Namespace) -> dict[str, AllowSet]:
    """``--paths DIR`` (or ``./expected_paths`` when it exists), validated; says what it loaded."""
    given = args.paths_dir
    directory = Path(given) if given else Path(DEFAULT_PATHS)
    if given is None and not directory.is_dir():
        print(f"liveguard: allow-sets: none loaded (no --paths, no ./{DEFAULT_PATHS}/)", file=sys.stderr)
        return {}
    if not directory.exists():
        raise UsageError(f"--paths {directory}: no such directory")
    if not directory.is_dir():
        raise UsageError(f"--paths {directory}: not a directory")
    files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
    if not files:
        raise UsageError(f"--paths {directory}: no *.yaml or *.yml allow-set in it")
    found = load_allowsets(directory)
    print(f"liveguard: allow-sets: loaded {len(found)} from {directory}/ "
          f"({', '.join(sorted(found))})", file=sys.stderr)
    return found


def _iter_rows(args: argparse.Namespace) -> Iterator[RunRow]:
    """Read and score every run named on the command line, streamed in input order."""
    settings: Settings = args.settings
    # Validates the environment once, up front: a bad override is a usage error.
    default = settings.policy(PRESETS["workflow"]())
    explicit = settings.policy(PRESETS[args.policy]()) if args.policy else None
    settings.judge_config()
    allow_sets = _allow_sets(args)
    args.allow_sets = allow_sets  # the report draws them
    for line in _env_notes(args):
        print(f"liveguard: {line}", file=sys.stderr)
    for p in args.paths:
        if not Path(p).exists() and "://" not in str(p):
            raise UsageError(f"{p}: no such file or directory")
    progress = _Progress.on_terminal(args.command)
    common: dict[str, Any] = {"allow_sets": allow_sets, "default_policy": default,
                              "judges": args.judges, "jobs": args.jobs, "progress": progress,
                              "settings": settings, "explicit_policy": explicit,
                              # score marks a repeated run id as an error row; gate and report
                              # see every row and refuse duplicates as a whole
                              "mark_duplicate_ids": args.command == "score",
                              # score's JSON output is each row's JSON form: no verdict needed
                              "verdicts": not (args.command == "score" and args.format != "table"
                                               and not getattr(args, "push_feedback", False))}
    project = getattr(args, "langsmith_project", None)
    engine = getattr(args, "engine", "local")
    if engine == "ray":
        rows: Iterator[RunRow] = score_paths(args.paths, engine="ray", ray_address=args.ray_address,
                                             **common)
    else:
        records: Iterator[Record] = iter_records(args.paths)
        if project:
            args.langsmith_items = [(f"langsmith:{project}", item) for item in _langsmith_items(project)]
            records = itertools.chain(records, args.langsmith_items)
        rows = iter_scored(records, **common)
    try:
        yield from rows
    except ConnectionError as exc:  # the Ray engine: a cluster that cannot be reached or joined
        from liveguard.errors import LiveguardError

        if not isinstance(exc, LiveguardError):
            raise
        raise UsageError(str(exc)) from None
    finally:
        if progress is not None:
            progress.close()


def _rows(args: argparse.Namespace) -> list[RunRow]:
    """Every row (shared by gate/report)."""
    return list(_iter_rows(args))


def _env_notes(args: argparse.Namespace) -> list[str]:
    """Rule families and judges switched off by the environment or the command line."""
    settings: Settings = args.settings
    notes = [f"rule family off: {code.split(':', 1)[1]} (environment flag)"
             for code in settings.rule_families_off()]
    if not args.judges:
        notes.append("judges: off (--no-judges): structural only")
    else:
        hint = settings.judge_config().skip_hint()
        if hint:
            notes.append(f"judges: not run ({hint}); unjudged runs do not pass")
    return notes


def _langsmith_client() -> Any:
    """The LangSmith client from the environment (LANGSMITH_ENDPOINT, LANGSMITH_API_KEY)."""
    import logging

    import langsmith

    # The client logs its own retries and warnings; the CLI reports a failure in one line.
    logging.getLogger("langsmith").setLevel(logging.CRITICAL)
    return langsmith.Client()


def _langsmith_items(project: str) -> list[Trajectory | TrajectoryReadError]:
    import langsmith.utils
    import requests

    from liveguard.integrations.langsmith import list_project_trajectories

    try:
        return list(list_project_trajectories(_langsmith_client(), project))
    except (langsmith.utils.LangSmithError, requests.RequestException, OSError) as exc:
        kind = ("unauthorised" if isinstance(exc, langsmith.utils.LangSmithAuthError)
                else "not found" if isinstance(exc, langsmith.utils.LangSmithNotFoundError)
                else "unreachable")
        raise UsageError(f"LangSmith {kind}: cannot list project {project!r} "
                         f"({type(exc).__name__})") from None


def _push_feedback(rows: list[RunRow], items: dict[str, Trajectory], out: TextIO) -> int:
    """One ``liveness`` feedback row per scored LangSmith run (``feedback_for``: hard codes)."""
    from liveguard.integrations.langsmith import feedback_for, push_feedback

    client = _langsmith_client()
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


class _Progress:
    """A tqdm counter of scored runs on stderr; built only when stderr is a terminal."""

    def __init__(self, desc: str) -> None:
        from tqdm import tqdm

        try:  # a terminal that reports no size (a bare pseudo-terminal) gets 80 x 24
            size = os.get_terminal_size(sys.stderr.fileno())
            columns, lines = size.columns or 80, size.lines or 24
        except (OSError, ValueError):
            columns, lines = 80, 24
        self._bar = tqdm(desc=desc, unit=" run", file=sys.stderr, ncols=columns, nrows=lines,
                         leave=False)
        self._done = 0

    @classmethod
    def on_terminal(cls, command: str) -> _Progress | None:
        return cls(f"liveguard {command}: scoring") if sys.stderr.isatty() else None

    def __call__(self, done: int) -> None:
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        self._bar.close()


def _score(args: argparse.Namespace, out: TextIO) -> int:
    if not args.paths and not args.langsmith_project:
        print("liveguard: give PATH... or --langsmith-project NAME", file=sys.stderr)
        return EXIT_USAGE
    if args.push_feedback and not args.langsmith_project:
        print("liveguard: --push-feedback needs --langsmith-project", file=sys.stderr)
        return EXIT_USAGE
    if args.engine == "ray" and args.langsmith_project:
        print("liveguard: --engine ray reads PATH... only, not --langsmith-project", file=sys.stderr)
        return EXIT_USAGE
    tally = _emit(_iter_rows(args), args.format, out)
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


def _decision(args: argparse.Namespace, rows: list[RunRow]) -> GateDecision:
    """The one gate decision for ``gate`` and ``report`` (refusals included)."""
    seen: dict[str, int] = {}
    for r in rows:
        if r.run_id:
            seen[r.run_id] = seen.get(r.run_id, 0) + 1
    duplicates = sorted(rid for rid, n in seen.items() if n > 1)
    unreadable = [r.source for r in rows if r.verdict is None and r.run_id not in duplicates]
    verdicts = [r.verdict for r in rows if r.verdict is not None]
    if not rows:
        raise UsageError("no runs found in the input")
    try:
        return decide(verdicts, window=args.window, min_runs=args.min_runs,
                      pass_rate=args.pass_rate, unreadable=unreadable, duplicates=duplicates)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _write_decision(decision: GateDecision, rows: list[RunRow], out: TextIO) -> None:
    out.write(f"{decision.decision}\n")
    for reason in decision.reasons:
        out.write(f"  reason: {reason}\n")
    for line in decision.missing:
        out.write(f"  missing: {line}\n")
    rate = "n/a" if decision.pass_rate is None else f"{decision.pass_rate:.2f}"
    order = "by start time" if decision.order == "start_time" else "input order"
    out.write(f"  {decision.window_line()}\n")
    out.write(f"  runs: {decision.runs} ({order}, min {decision.min_runs}), "
              f"passed: {decision.passed}, pass rate: {rate}, threshold: {decision.threshold:.2f}\n")
    for run_id, hits in _hard_hits(decision.rollback_runs, rows):
        out.write(f"  rollback evidence: {run_id}: {hits}\n")
    for run_id, hits in _hard_hits(decision.left_out_hard_runs[:_LISTED], rows):
        out.write(f"  left out with hard findings: {run_id}: {hits}\n")
    if len(decision.left_out_hard_runs) > _LISTED:
        out.write(f"  left out with hard findings: +{len(decision.left_out_hard_runs) - _LISTED} more\n")


_LISTED = 20  # left-out runs named one by one in the text output


def _hard_hits(run_ids: Sequence[str], rows: list[RunRow]) -> Iterator[tuple[str, str]]:
    """(run id, ``code@step, ...`` of its hard violations) for each of ``run_ids``."""
    wanted = set(run_ids)
    verdicts = {r.run_id: r.verdict for r in rows if r.run_id in wanted and r.verdict is not None}
    for run_id in run_ids:
        verdict = verdicts.get(run_id)
        if verdict is not None:
            yield run_id, ", ".join(f"{v.code}@{v.step}" for v in verdict.violations if v.severity == "hard")


def _decision_json(decision: GateDecision, rows: list[RunRow]) -> dict[str, Any]:
    """``gate --format json``: the decision, its evidence and the counts (codes, ids, steps)."""
    def hits(run_ids: Sequence[str]) -> list[dict[str, Any]]:
        return [{"run_id": run_id, "hard": hard.split(", ") if hard else []}
                for run_id, hard in _hard_hits(run_ids, rows)]

    return {
        "decision": decision.decision,
        "exit_code": decision.exit_code,
        "reasons": decision.reasons,
        "missing": decision.missing,
        "window": decision.window,
        "order": decision.order,
        "min_runs": decision.min_runs,
        "pass_rate": decision.pass_rate,
        "threshold": decision.threshold,
        "structural_only": decision.structural_only,
        "counts": decision.counts(),
        "evidence": {
            "rollback_codes": decision.rollback_codes,
            "rollback": hits(decision.rollback_runs),
            "left_out_with_hard_findings": hits(decision.left_out_hard_runs),
            "unreadable": [r.source for r in rows if r.verdict is None],
        },
    }


def _junit(decision: GateDecision, rows: list[RunRow], path: str) -> None:
    """``gate --junit FILE``: one test case per run (failure: not passed; error: unreadable)."""
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="liveguard gate", tests=str(len(rows)))
    props = ET.SubElement(suite, "properties")
    for key, value in (("decision", decision.decision), ("window", str(decision.window or "all")),
                       *((k, str(v)) for k, v in decision.counts().items())):
        ET.SubElement(props, "property", name=key, value=value)
    failures = errors = 0
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname=f"liveguard.{row.graph or 'run'}",
                             name=row.run_id or row.source, file=row.source)
        verdict = row.verdict
        if verdict is None:
            errors += 1
            ET.SubElement(case, "error", message=row.error or "not scored", type="unreadable")
        elif not verdict.passed:
            failures += 1
            hard = ", ".join(f"{v.code}@{v.step}" for v in verdict.violations if v.severity == "hard")
            kind = "hard" if hard else "missing" if verdict.missing else "score"
            failure = ET.SubElement(case, "failure", type=kind,
                                    message=hard or ", ".join(verdict.missing) or verdict.reason)
            failure.text = f"reason: {verdict.reason}; missing: {', '.join(verdict.missing) or '-'}"
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    root = ET.Element("testsuites", name="liveguard")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _gate(args: argparse.Namespace, out: TextIO) -> int:
    rows = _rows(args)
    decision = _decision(args, rows)
    if args.junit:
        _junit(decision, rows, args.junit)
    if args.format == "json":
        out.write(orjson.dumps(_decision_json(decision, rows), option=orjson.OPT_INDENT_2).decode() + "\n")
        return decision.exit_code
    for r in rows:
        if r.verdict is None:
            out.write(f"ERROR  {r.source}: {r.error}\n")
    _write_decision(decision, rows, out)
    return decision.exit_code


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def _report(args: argparse.Namespace, out: TextIO) -> int:
    from liveguard.report.site import pages_dir, write_report

    target = Path(args.output)
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
    rows = _rows(args)
    decision = _decision(args, rows)
    # Every row and verdict lives until the end: out of the collector's sight, so writing
    # 50,000 pages does not rescan them again and again.
    gc.freeze()
    progress = _Progress("liveguard report: pages") if sys.stderr.isatty() else None
    try:
        files = write_report(rows, decision, args.allow_sets, target, policy=args.policy or "workflow",
                             inputs=args.paths, progress=progress)
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
            self.families.update(m.split(":", 1)[1] for m in missing if m.startswith("rule_family_off:"))
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
            out.write(_table_row(r) + "\n")
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


def _table_row(r: RunRow) -> str:
    if r.verdict is None:
        return f"ERROR  {r.source}: {r.error}"
    v = r.verdict
    verdict = "PASS" if v.passed else "UNJUDGED" if v.reason.endswith("unjudged") else "FAIL"
    if v.missing and not v.reason.endswith("unjudged") and not v.passed:
        verdict = "INCOMPLETE" if not v.hard_codes else verdict
    hits = ", ".join(f"{x.code}@{x.step}" for x in v.violations) or "-"
    score = "  -  " if v.composite is None else f"{v.composite:.2f} "
    mark = {None: "", True: "  [as expected]", False: "  [UNEXPECTED]"}[r.matches_expected]
    gaps = f"  missing: {', '.join(v.missing)}" if v.missing else ""
    return f"{verdict}  {score} {r.run_id or '-':<28} {r.graph or '-':<16} {hits}{mark}{gaps}"


def build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 - one statement per option
    from liveguard import __version__

    parser = argparse.ArgumentParser(prog="liveguard", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"liveguard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    def inputs(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument("paths", nargs="+" if required else "*", metavar="PATH")
        p.add_argument("--paths", dest="paths_dir", metavar="DIR", default=None,
                       help="directory of allow-set YAML files (matched to runs by graph name; "
                            f"default ./{DEFAULT_PATHS}/ when it exists)")
        p.add_argument("--policy", choices=sorted(PRESETS), default=None,
                       help="policy preset for every run, over the run's metadata.policy "
                            "(default: metadata.policy, else workflow)")
        p.add_argument("--judges", action=argparse.BooleanOptionalAction, default=True,
                       help="call the LLM judges; --no-judges is a structural-only evaluation "
                            "(a structurally clean run passes, and the output says so)")
        p.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help="worker processes (default: the number of cores)")
        p.add_argument("--semantic", action="store_true",
                       help="turn the semantic layer on (semantic_repeat, role_drift, spin checks; "
                            "needs liveguard[semantic]); same as AGENT_EVAL_SEMANTIC=1")

    def window(p: argparse.ArgumentParser) -> None:
        p.add_argument("--window", type=_positive_int, default=None, metavar="N",
                       help="decide over the last N runs only (default: every run given); runs "
                            "left out with hard findings hold the decision")
        p.add_argument("--min-runs", type=int, default=10, help="runs needed to PROMOTE")
        p.add_argument("--pass-rate", type=float, default=GATE_PASS_RATE,
                       help="share of runs in the window that must pass to PROMOTE")

    def engine(p: argparse.ArgumentParser) -> None:
        p.add_argument("--engine", choices=("local", "ray"), default="local",
                       help="local: this machine's cores; ray: a Ray cluster (extra liveguard[ray])")
        p.add_argument("--ray-address", metavar="ADDRESS", default=None,
                       help="Ray cluster to join (default: RAY_ADDRESS, else a local one)")

    score = sub.add_parser("score", help="score recorded runs")
    inputs(score, required=False)
    score.add_argument("--langsmith-project", metavar="NAME", default=None,
                       help="also score the root runs of this LangSmith project")
    score.add_argument("--push-feedback", action="store_true",
                       help="write a 'liveness' feedback row on each LangSmith run scored")
    score.add_argument("--format", choices=("table", "json", "jsonl"), default="table")
    score.add_argument("--strict", action="store_true", help="exit 1 when any run fails")
    engine(score)
    score.set_defaults(handler=_score)

    gate = sub.add_parser("gate", help="PROMOTE / HOLD / ROLLBACK over every run (or --window N)")
    inputs(gate)
    window(gate)
    engine(gate)
    gate.add_argument("--format", choices=("text", "json"), default="text",
                      help="json: the decision, its evidence and the counts, on stdout")
    gate.add_argument("--junit", metavar="FILE", default=None,
                      help="also write a JUnit XML file: one test case per run")
    gate.set_defaults(handler=_gate)

    report = sub.add_parser("report", help="write a static HTML report (overview and pages)")
    inputs(report)
    window(report)
    engine(report)
    report.add_argument("-o", "--output", default="report.html",
                        help="the overview page; the other pages go to a folder beside it "
                             "(report.html: report_pages/)")
    report.add_argument("--fail-on", choices=("rollback", "hold"), default=None,
                        help="exit as the gate does: rollback: 4 on ROLLBACK; hold: also 3 on HOLD "
                             "(default: 0 once the report is written)")
    report.set_defaults(handler=_report)

    paths = sub.add_parser("paths", help="allow-sets: static checks and derivation")
    paths_sub = paths.add_subparsers(dest="paths_command", required=True)
    check = paths_sub.add_parser("check", help="check allow-set YAML files")
    check.add_argument("files", nargs="+", metavar="FILE")
    check.set_defaults(handler=_paths_check)
    derive = paths_sub.add_parser("derive", help="allow-set YAML from a compiled LangGraph graph")
    derive.add_argument("target", metavar="MODULE:ATTR")
    derive.add_argument("--graph-name", default=None, help="graph name (default: the module's last part)")
    derive_out = derive.add_mutually_exclusive_group()
    derive_out.add_argument("-o", "--output", default=None, help="write here instead of stdout")
    derive_out.add_argument(
        "--check", default=None, metavar="FILE",
        help="compare the derived transitions with an allow-set file; exit 1 on a difference",
    )
    derive.set_defaults(handler=_paths_derive)
    cli_approvals.add_parser(sub)
    return importlib.import_module("liveguard.cli_threads").register(sub, parser)  # type: ignore[no-any-return]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _paths_check(args: argparse.Namespace, out: TextIO) -> int:
    status = EXIT_OK
    for name in args.files:
        try:
            allow = load_allowset(name)
        except AllowSetError as exc:
            out.write(f"{exc}\n")
            status = EXIT_USAGE
            continue
        findings = check_allowset(allow)
        for f in findings:
            out.write(f"{name}: {f.level}: {f.code}: {f.message}\n")
        if any(f.level == "error" for f in findings):
            status = max(status, EXIT_FAILED)
        elif not findings:
            out.write(f"{name}: ok ({len(allow.nodes)} nodes)\n")
    return status


def _paths_derive(args: argparse.Namespace, out: TextIO) -> int:
    import yaml

    from liveguard.loading import TargetError, import_target

    module_name = args.target.partition(":")[0]
    try:  # the user's module raising on import is an input fault (exit 2), not exit 70
        target = import_target(args.target, label=args.target, example="graphs.campaign:graph")
    except TargetError as exc:
        print(f"liveguard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not hasattr(target, "get_graph"):
        print(f"liveguard: {args.target} is not a compiled graph (no get_graph())", file=sys.stderr)
        return EXIT_USAGE
    transitions, warnings = derive_transitions(target)
    for warning in warnings:
        print(f"liveguard: warning: {warning}", file=sys.stderr)
    if args.check:
        return _paths_derive_check(args.check, transitions, out)
    name = args.graph_name or module_name.rsplit(".", 1)[-1]
    text = yaml.safe_dump(
        {"graph": name, "transitions": transitions}, sort_keys=False, default_flow_style=None
    )
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return EXIT_OK


def _paths_derive_check(path: str, derived: dict[str, list[str]], out: TextIO) -> int:
    """Diff derived transitions against a checked-in allow-set; the file is only read.

    ``-`` lines are hops the file allows but the graph no longer has; ``+`` lines are hops
    the graph has but the file does not allow. ``limits``, ``tools`` and ``description``
    are not compared.
    """
    existing = load_allowset(path)  # AllowSetError -> exit 2 in main()
    have = {(s, t) for s, targets in existing.transitions.items() for t in targets}
    want = {(s, t) for s, targets in derived.items() for t in targets}
    for sign, edges in (("-", have - want), ("+", want - have)):
        for source, target in sorted(edges):
            out.write(f"{path}: {sign} {source} -> {target}\n")
    if have != want:
        out.write(f"{path}: differs from the graph ({len(have - want)} hops only in the file, "
                  f"{len(want - have)} only in the graph)\n")
        return EXIT_FAILED
    out.write(f"{path}: transitions match the graph ({len(want)} hops)\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    # run data never reaches the terminal raw: escapes, bidi and control characters are
    # written visibly (liveguard.terminal), in human and JSON output alike
    stream = VisibleWriter(out or sys.stdout)
    try:
        args.settings = Settings.from_env()
        if getattr(args, "semantic", False):  # --semantic: every policy of this command gets the layer
            args.settings = Settings.from_env({**args.settings.env, "AGENT_EVAL_SEMANTIC": "1"})
        status: int = args.handler(args, stream)
        stream.flush()
    except (PolicyError, AllowSetError, UsageError) as exc:
        print(visible(f"liveguard: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `liveguard score ... | head`: the reader left; end quietly
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug in liveguard: exit 70, with where (never step text)
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"liveguard: internal error (a bug in liveguard, please report): "
              f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}", file=sys.stderr)
        return EXIT_BUG
    return status


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
