"""The ``liveguard`` console script: a thin shell over the library.

Commands:
  score PATH...             score recorded runs (JSONL files or directories)
  paths check FILE...       static checks of allow-sets
  paths derive MODULE:ATTR  write the allow-set YAML of a compiled LangGraph graph

Exit status: 0 done, 1 ``score --strict`` with a failing run or ``paths check`` with an
error finding, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import orjson

from liveguard.allowset import (
    AllowSet,
    AllowSetError,
    check_allowset,
    derive_transitions,
    load_allowset,
    load_allowsets,
)
from liveguard.errors import FingerprintError, PolicyError, TrajectoryReadError
from liveguard.model import Trajectory, Violation
from liveguard.monitor import check_trajectory
from liveguard.policy import Policy
from liveguard.readers.jsonl import iter_paths, read_jsonl

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_PRESETS = {"workflow": Policy.workflow, "tool_agent": Policy.tool_agent}


@dataclass
class RunResult:
    """One output row: a scored run, or an error naming where the input went wrong."""

    run_id: str | None
    graph: str | None
    source: str
    violations: list[Violation] = field(default_factory=list)
    error: str | None = None
    expected_passed: bool | None = None
    expected_codes: list[str] | None = None

    @property
    def passed(self) -> bool | None:
        if self.error is not None:
            return None
        return not any(v.hard for v in self.violations)

    @property
    def hard_codes(self) -> list[str]:
        return sorted({v.code for v in self.violations if v.hard})

    @property
    def matches_expected(self) -> bool | None:
        if self.expected_passed is None:
            return None
        return self.passed == self.expected_passed and self.hard_codes == self.expected_codes

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"run_id": self.run_id, "graph": self.graph, "source": self.source}
        if self.error is not None:
            row.update(passed=None, score=None, error=self.error, violations=[])
            return row
        row.update(
            passed=self.passed,
            score=1.0 if self.passed else 0.0,
            violations=[
                {"code": v.code, "severity": v.severity, "step": v.step, "node": v.node,
                 "count": v.count}
                for v in self.violations
            ],
            provenance={"source": "monitor", "judges": "skipped: deterministic score"},
        )
        if self.expected_passed is not None:
            row["expected"] = {"passed": self.expected_passed, "hard_codes": self.expected_codes}
        return row


def score_run(
    run: Trajectory, source: str, default: Policy, allow_sets: dict[str, AllowSet] | None = None
) -> RunResult:
    """Run the Monitor over one trajectory; a policy preset in metadata wins over the default."""
    result = RunResult(run.run_id, run.graph, source)
    if run.expected is not None:
        result.expected_passed = run.expected.passed
        result.expected_codes = sorted(run.expected.hard_codes)
    preset = (run.metadata or {}).get("policy")
    try:
        if isinstance(preset, str) and preset in _PRESETS:
            policy = Policy.from_env(_PRESETS[preset]())
        else:
            policy = default
        allow = (allow_sets or {}).get(run.graph) if run.graph else None
        result.violations = check_trajectory(run.steps, policy, allow)
    except (FingerprintError, PolicyError) as exc:
        result.error = str(exc)
    return result


def _score(args: argparse.Namespace, out: TextIO) -> int:
    # Validates the environment once, up front: a bad override is a usage error.
    default = Policy.from_env(_PRESETS[args.policy or "workflow"]())
    allow_sets = load_allowsets(args.paths_dir) if args.paths_dir else None
    results: list[RunResult] = []
    for path in iter_paths(args.paths):
        for item in read_jsonl(path):
            if isinstance(item, TrajectoryReadError):
                results.append(RunResult(None, None, item.source, error=item.reason))
            else:
                results.append(score_run(item, f"{path}", default, allow_sets))
    if not results:
        print("liveguard: no runs found in " + " ".join(args.paths), file=sys.stderr)
        return EXIT_USAGE
    _emit(results, args.format, out)
    if any(r.error is not None for r in results):
        return EXIT_USAGE
    if args.strict and not all(r.passed for r in results):
        return EXIT_FAILED
    return EXIT_OK


def _emit(results: list[RunResult], fmt: str, out: TextIO) -> None:
    if fmt == "jsonl":
        for r in results:
            out.write(orjson.dumps(r.as_json()).decode() + "\n")
        return
    if fmt == "json":
        out.write(orjson.dumps([r.as_json() for r in results], option=orjson.OPT_INDENT_2).decode())
        out.write("\n")
        return
    for r in results:
        out.write(_table_row(r) + "\n")
    failed = sum(1 for r in results if r.passed is False)
    errors = sum(1 for r in results if r.error is not None)
    mismatched = sum(1 for r in results if r.matches_expected is False)
    out.write(
        f"-- {len(results)} runs: {len(results) - failed - errors} passed, {failed} failed, "
        f"{errors} unreadable; expected-verdict mismatches: {mismatched}. "
        "Judges skipped (deterministic monitor only).\n"
    )


def _table_row(r: RunResult) -> str:
    if r.error is not None:
        return f"ERROR  {r.source}: {r.error}"
    verdict = "PASS" if r.passed else "FAIL"
    hits = ", ".join(f"{v.code}@{v.step}" for v in r.violations) or "-"
    mark = {None: "", True: "  [as expected]", False: "  [UNEXPECTED]"}[r.matches_expected]
    return f"{verdict}  {r.run_id:<28} {r.graph or '-':<16} {hits}{mark}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="liveguard", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="score recorded runs (JSONL files or directories)")
    score.add_argument("paths", nargs="+", metavar="PATH")
    score.add_argument("--format", choices=("table", "json", "jsonl"), default="table")
    score.add_argument(
        "--policy", choices=sorted(_PRESETS), default=None,
        help="policy preset for runs whose metadata names none (default: workflow)",
    )
    score.add_argument("--strict", action="store_true", help="exit 1 when any run fails")
    score.add_argument(
        "--paths", dest="paths_dir", metavar="DIR", default=None,
        help="directory of allow-set YAML files (matched to runs by graph name)",
    )
    score.set_defaults(handler=_score)

    paths = sub.add_parser("paths", help="allow-sets: static checks and derivation")
    paths_sub = paths.add_subparsers(dest="paths_command", required=True)
    check = paths_sub.add_parser("check", help="check allow-set YAML files")
    check.add_argument("files", nargs="+", metavar="FILE")
    check.set_defaults(handler=_paths_check)
    derive = paths_sub.add_parser("derive", help="allow-set YAML from a compiled LangGraph graph")
    derive.add_argument("target", metavar="MODULE:ATTR")
    derive.add_argument("--graph-name", default=None, help="graph name (default: the module's last part)")
    derive.add_argument("-o", "--output", default=None, help="write here instead of stdout")
    derive.set_defaults(handler=_paths_derive)
    return parser


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

    module_name, _, attr = args.target.partition(":")
    if not module_name or not attr:
        print("liveguard: expected MODULE:ATTR, e.g. graphs.campaign:graph", file=sys.stderr)
        return EXIT_USAGE
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # like `python -m`: modules of the project
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        print(f"liveguard: cannot load {args.target}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not hasattr(target, "get_graph"):
        print(f"liveguard: {args.target} is not a compiled graph (no get_graph())", file=sys.stderr)
        return EXIT_USAGE
    transitions, warnings = derive_transitions(target)
    for warning in warnings:
        print(f"liveguard: warning: {warning}", file=sys.stderr)
    name = args.graph_name or module_name.rsplit(".", 1)[-1]
    text = yaml.safe_dump(
        {"graph": name, "transitions": transitions}, sort_keys=False, default_flow_style=None
    )
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return EXIT_OK


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        status: int = args.handler(args, out or sys.stdout)
    except (PolicyError, AllowSetError) as exc:
        print(f"liveguard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
