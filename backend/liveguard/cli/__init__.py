"""The ``liveguard`` console script: a thin shell over the library, one module per command.

* :mod:`liveguard.cli.score`, :mod:`~liveguard.cli.gate`, :mod:`~liveguard.cli.report`: read
  recorded runs and score them (the shared stream and options: :mod:`liveguard.cli._common`);
* :mod:`liveguard.cli.paths`: allow-set checks and derivation;
* :mod:`liveguard.cli.approvals`: drafts held by the approval step;
* :mod:`liveguard.cli.threads`: a thread's liveness state.

Each command module has ``register(subparsers)``; :func:`main` parses, reads the environment
once (:class:`liveguard.settings.Settings`), runs the command's handler and maps errors to
exit statuses. The top-level ``--help`` is :data:`HELP` (plain text: every command).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from liveguard.cli import approvals, gate, paths, report, score, threads
from liveguard.cli._common import EXIT_BUG, EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from liveguard.cli.terminal import VisibleWriter, visible
from liveguard.errors import AllowSetError, PolicyError
from liveguard.settings import Settings

__all__ = ["EXIT_BUG", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "HELP", "build_parser", "main"]

HELP = """\
Stop LLM agents that loop: score recorded runs, gate a release, report, and manage the
drafts and threads the live guards hold.

commands:
  score PATH...               score recorded runs (JSONL, LangSmith JSON or Parquet exports,
                              directories read recursively, or --langsmith-project NAME
                              [--push-feedback])
  gate PATH...                release decision over every run (or --window N): PROMOTE /
                              HOLD / ROLLBACK; PROMOTE needs --min-runs (default 10) runs;
                              --format json, --junit FILE for CI
  report PATH... -o FILE      a static HTML report: FILE (the overview) and a folder of pages
                              beside it (run lists, one page per run); --fail-on rollback|hold
  paths check FILE...         static checks of allow-set files
  paths derive MODULE:ATTR    write the allow-set YAML of a compiled LangGraph graph
  approvals list              drafts waiting for a person
  approvals show THREAD       one held draft: description, verdict, reasons
  approvals approve THREAD    send the held draft (--by NAME --graph MODULE:ATTR)
  approvals reject THREAD     send nothing; the graph revises or ends
  approvals edit THREAD       replace the draft (--draft-file F), then send
  threads show MODULE:ATTR    a thread's saved liveness state (--thread ID), as JSON
  threads clear MODULE:ATTR   clear a stopped thread so it can run again

exit status:
  0 done; 1 score --strict with a failing run, or paths check with an error finding;
  2 bad input or usage, or an output file that cannot be written (gate and report also
  refuse duplicate run ids and unreadable runs; report writes its pages first);
  gate (and report --fail-on): PROMOTE 0, HOLD 3, ROLLBACK 4; 70 a bug in liveguard itself.

Progress goes to stderr, only when stderr is a terminal. The environment is read once
(every variable: docs/configuration.md). `liveguard COMMAND --help` for a command's options.
"""
"""The top-level ``--help`` text: plain text, every command (a test compares it with the parser)."""

COMMANDS = (score, gate, report, paths, approvals, threads)
"""The command modules, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``liveguard`` parser: each command module registers its own subcommand."""
    from liveguard import __version__

    parser = argparse.ArgumentParser(prog="liveguard", description=HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"liveguard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    # run data never reaches the terminal raw: escapes, bidi and control characters are
    # written visibly (liveguard.cli.terminal), in human and JSON output alike
    stream = VisibleWriter(out or sys.stdout)
    try:
        args.settings = Settings.from_env()
        if getattr(args, "semantic", False):  # --semantic: every policy of this command gets the layer
            args.settings = Settings.from_env({**args.settings.env, "AGENT_EVAL_SEMANTIC": "1"})
        if getattr(args, "embedder", None):  # --embedder NAME: the layer's embedder and its threshold
            args.settings = Settings.from_env({**args.settings.env,
                                               "AGENT_EVAL_SEMANTIC_EMBEDDER": args.embedder})
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
