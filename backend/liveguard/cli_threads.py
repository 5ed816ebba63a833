"""``liveguard threads``: look at and clear the liveness state of a thread.

::

    liveguard threads show  MODULE:ATTR --thread ID [--sqlite FILE]
    liveguard threads clear MODULE:ATTR --thread ID [--sqlite FILE]

``MODULE:ATTR`` names the compiled graph (``guard(...)`` or a ``create_agent`` graph with
``LivenessMiddleware``). ``--sqlite FILE`` opens a ``SqliteSaver`` on that file as the
graph's checkpointer (otherwise the graph's own is used). ``show`` prints JSON (codes,
counts and digests only); ``clear`` prints the code of the stop it cleared, or
``not stopped``. Exit status: 0 done, 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from liveguard.threads import clear, thread_status

__all__ = ["register"]

EXIT_OK = 0
EXIT_USAGE = 2


def register(sub: Any, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``threads`` command to the CLI's subparsers; return ``parser``."""
    threads = sub.add_parser("threads", help="show or clear a thread's liveness state")
    commands = threads.add_subparsers(dest="threads_command", required=True)
    for name, handler, text in (
        ("show", _show, "print the thread's saved liveness state (JSON)"),
        ("clear", _clear, "clear a stopped thread so it can run again"),
    ):
        p = commands.add_parser(name, help=text)
        p.add_argument("target", metavar="MODULE:ATTR", help="the compiled (guarded) graph")
        p.add_argument("--thread", required=True, help="thread_id")
        p.add_argument("--sqlite", metavar="FILE", default=None,
                       help="use a SqliteSaver on FILE as the checkpointer")
        p.set_defaults(handler=handler)
    return parser


def _graph(args: argparse.Namespace) -> Any:
    module_name, _, attr = args.target.partition(":")
    if not module_name or not attr:
        raise ValueError("expected MODULE:ATTR, e.g. myapp.agent:graph")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        graph = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load {args.target}: {type(exc).__name__}") from None
    if args.sqlite is not None:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        if not Path(args.sqlite).is_file():
            raise ValueError(f"{args.sqlite}: no such file")
        saver = SqliteSaver(sqlite3.connect(args.sqlite, check_same_thread=False))
        graph = graph.copy({"checkpointer": saver})
    return graph


def _run(args: argparse.Namespace, out: TextIO, action: Any) -> int:
    try:
        graph = _graph(args)
        return int(action(graph, {"configurable": {"thread_id": args.thread}}, out))
    except ValueError as exc:
        print(f"liveguard: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _show(args: argparse.Namespace, out: TextIO) -> int:
    def action(graph: Any, config: Any, out: TextIO) -> int:
        out.write(json.dumps(thread_status(graph, config), sort_keys=True) + "\n")
        return EXIT_OK

    return _run(args, out, action)


def _clear(args: argparse.Namespace, out: TextIO) -> int:
    def action(graph: Any, config: Any, out: TextIO) -> int:
        cleared = clear(graph, config)
        out.write(f"cleared {cleared.code} at step {cleared.step}\n" if cleared else "not stopped\n")
        return EXIT_OK

    return _run(args, out, action)
