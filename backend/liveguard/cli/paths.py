"""``liveguard paths``: allow-sets. ``check FILE...`` runs the static checks;
``derive MODULE:ATTR`` writes the allow-set YAML of a compiled LangGraph graph (``--check
FILE``: compares it with a checked-in file, exit 1 on a difference).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from liveguard.cli._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, output_path, write_output
from liveguard.core.allowset import AllowSetError, check_allowset, derive_transitions, load_allowset

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add ``paths check`` and ``paths derive`` to the CLI's subcommands."""
    paths = sub.add_parser("paths", help="allow-sets: static checks and derivation")
    paths_sub = paths.add_subparsers(dest="paths_command", required=True)
    check = paths_sub.add_parser("check", help="check allow-set YAML files")
    check.add_argument("files", nargs="+", metavar="FILE")
    check.set_defaults(handler=_check)
    derive = paths_sub.add_parser("derive", help="allow-set YAML from a compiled LangGraph graph")
    derive.add_argument("target", metavar="MODULE:ATTR")
    derive.add_argument("--graph-name", default=None, help="graph name (default: the module's last part)")
    derive_out = derive.add_mutually_exclusive_group()
    derive_out.add_argument("-o", "--output", default=None, help="write here instead of stdout")
    derive_out.add_argument(
        "--check", default=None, metavar="FILE",
        help="compare the derived transitions with an allow-set file; exit 1 on a difference",
    )
    derive.set_defaults(handler=_derive)


def _check(args: argparse.Namespace, out: TextIO) -> int:
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


def _derive(args: argparse.Namespace, out: TextIO) -> int:
    import yaml

    from liveguard.cli._loading import TargetError, import_target

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
        return _derive_check(args.check, transitions, out)
    name = args.graph_name or module_name.rsplit(".", 1)[-1]
    text = yaml.safe_dump(
        {"graph": name, "transitions": transitions}, sort_keys=False, default_flow_style=None
    )
    if args.output:
        write_output(output_path(args.output, "-o"), text.encode("utf-8"), "-o")
    else:
        out.write(text)
    return EXIT_OK


def _derive_check(path: str, derived: dict[str, list[str]], out: TextIO) -> int:
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
