"""``liveguard gate PATH...``: the release decision over every run (or the last ``--window N``).

PROMOTE (exit 0), HOLD (3) or ROLLBACK (4); REFUSE (2) when the input has duplicate run ids
or unreadable runs. ``--format json`` writes the decision and its evidence; ``--junit FILE``
also writes one JUnit test case per run for CI. :func:`decision_of` is the one decision
``report`` draws too.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import orjson

from liveguard.cli._common import (
    UsageError,
    add_engine,
    add_inputs,
    add_window,
    all_rows,
    output_path,
    write_output,
)
from liveguard.cli.terminal import visible_xml
from liveguard.evaluate.gate import GateDecision, decide
from liveguard.evaluate.rows import RunRow

__all__ = ["decision_of", "register", "run"]


def register(sub: Any) -> None:
    """Add ``gate`` to the CLI's subcommands."""
    gate = sub.add_parser("gate", help="PROMOTE / HOLD / ROLLBACK over every run (or --window N)")
    add_inputs(gate)
    add_window(gate)
    add_engine(gate)
    gate.add_argument("--format", choices=("text", "json"), default="text",
                      help="json: the decision, its evidence and the counts, on stdout")
    gate.add_argument("--junit", metavar="FILE", default=None,
                      help="also write a JUnit XML file: one test case per run")
    gate.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    junit = output_path(args.junit, "--junit") if args.junit else None  # before scoring: fail fast
    rows = all_rows(args)
    decision = decision_of(args, rows)
    if junit is not None:
        write_output(junit, junit_xml(decision, rows), "--junit")
    if args.format == "json":
        out.write(orjson.dumps(_decision_json(decision, rows), option=orjson.OPT_INDENT_2).decode() + "\n")
        return decision.exit_code
    for r in rows:
        if r.verdict is None:
            out.write(f"ERROR  {r.source}: {r.error}\n")
    _write_decision(decision, rows, out)
    return decision.exit_code


def decision_of(args: argparse.Namespace, rows: list[RunRow]) -> GateDecision:
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


def junit_xml(decision: GateDecision, rows: list[RunRow]) -> bytes:
    """``gate --junit FILE``: one test case per run (failure: not passed; error: unreadable).

    Every name, message and text is passed through :func:`liveguard.cli.terminal.visible_xml`: a
    run id or graph name with a NUL, an ESC or a lone surrogate is written as a visible escape,
    and the file stays well-formed XML 1.0.
    """
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
    for element in root.iter():  # one place for every value: nothing XML 1.0 forbids gets through
        element.attrib = {visible_xml(k): visible_xml(v) for k, v in element.attrib.items()}
        if element.text is not None:
            element.text = visible_xml(element.text)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
