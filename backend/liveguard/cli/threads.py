"""``liveguard threads``: look at and clear the liveness state of a thread.

::

    liveguard threads show  MODULE:ATTR --thread ID [--checkpoint URL]
    liveguard threads clear MODULE:ATTR --thread ID [--checkpoint URL]

``MODULE:ATTR`` names the compiled graph (``guard(...)`` or a ``create_agent`` graph with
``LivenessMiddleware``). ``--checkpoint URL`` (``sqlite:///PATH`` or ``postgresql://...``,
as ``liveguard approvals`` takes it) opens that saver as the graph's checkpointer;
otherwise the graph's own is used. ``--sqlite FILE`` is kept as an alias of
``--checkpoint sqlite:///FILE``. Reading never creates: a SQLite file that does not exist
is an error. ``show`` prints JSON (codes, counts and digests only); ``clear`` prints the
code of the stop it cleared, or ``not stopped``.

Exit status: 0 done; 2 bad input or environment, with one line on stderr (an unknown
thread, a factory instead of a compiled graph, a module that fails to import, a file that
is not a checkpoint database, an unreachable database).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from liveguard.cli._common import EXIT_OK, EXIT_USAGE
from liveguard.live.checkpoints import CheckpointURLError
from liveguard.live.threads import UnknownThreadError, clear, thread_status

__all__ = ["register"]



class _InputError(Exception):
    """Bad input or environment: one line, exit 2."""


def register(sub: Any) -> None:
    """Add ``threads`` (show, clear) to the CLI's subcommands."""
    threads = sub.add_parser("threads", help="show or clear a thread's liveness state")
    commands = threads.add_subparsers(dest="threads_command", required=True)
    for name, handler, text in (
        ("show", _show, "print the thread's saved liveness state (JSON)"),
        ("clear", _clear, "clear a stopped thread so it can run again"),
    ):
        p = commands.add_parser(name, help=text)
        p.add_argument("target", metavar="MODULE:ATTR", help="the compiled (guarded) graph")
        p.add_argument("--thread", required=True, help="thread_id")
        where = p.add_mutually_exclusive_group()
        where.add_argument("--checkpoint", metavar="URL", default=None,
                           help="the checkpointer: sqlite:///PATH or postgresql://... "
                                "(default: the graph's own)")
        where.add_argument("--sqlite", metavar="FILE", default=None,
                           help="alias of --checkpoint sqlite:///FILE")
        p.set_defaults(handler=handler)


def _graph(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise _InputError("expected MODULE:ATTR, e.g. myapp.agent:graph")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        graph = getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # the user's module failing to import is their input's fault
        raise _InputError(f"cannot load {target}: {type(exc).__name__}") from None
    if not callable(getattr(graph, "get_state", None)) or not hasattr(graph, "checkpointer"):
        kind = "a callable (a factory?)" if callable(graph) else type(graph).__name__
        raise _InputError(f"{target} is {kind}, not a compiled graph; name the graph itself")
    return graph


def _url(args: argparse.Namespace) -> str | None:
    if args.sqlite is not None:
        return f"sqlite:///{args.sqlite}"
    return str(args.checkpoint) if args.checkpoint is not None else None


@contextmanager
def _saver(url: str) -> Iterator[Any]:
    """A saver on an existing checkpoint database (never created here)."""
    if url.startswith("sqlite:///"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = Path(url[len("sqlite:///"):])
        if not path.is_file():
            raise _InputError(f"{path}: no such checkpoint file")
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM checkpoints").fetchone()
        except sqlite3.Error:
            conn.close()
            raise _InputError(f"{path}: not a LangGraph checkpoint database") from None
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
        return
    if url.startswith(("postgresql://", "postgres://")):
        from langgraph.checkpoint.postgres import PostgresSaver

        try:
            manager = PostgresSaver.from_conn_string(url)
            saver = manager.__enter__()
        except Exception as exc:  # psycopg's OperationalError, a malformed URL
            raise _InputError(f"cannot open the PostgreSQL checkpointer: {type(exc).__name__}") from None
        try:
            yield saver
        finally:
            manager.__exit__(None, None, None)
        return
    scheme = url.split(":", 1)[0]
    raise _InputError(f"checkpoint URL scheme {scheme!r} is not supported; "
                      "use sqlite:///PATH or postgresql://...")


def _run(args: argparse.Namespace, action: Any) -> int:
    config = {"configurable": {"thread_id": args.thread}}
    try:
        graph = _graph(args.target)
        url = _url(args)
        if url is None:
            return int(action(graph, config))
        with _saver(url) as saver:
            return int(action(graph.copy({"checkpointer": saver}), config))
    except (_InputError, UnknownThreadError, CheckpointURLError, ValueError) as exc:
        print(f"liveguard: {exc}", file=sys.stderr)
    except sqlite3.Error as exc:
        print(f"liveguard: the checkpoint database cannot be read: {type(exc).__name__}",
              file=sys.stderr)
    except Exception as exc:
        if type(exc).__module__.split(".")[0] != "psycopg":
            raise
        print(f"liveguard: the checkpoint database cannot be read: {type(exc).__name__}",
              file=sys.stderr)
    return EXIT_USAGE


def _show(args: argparse.Namespace, out: TextIO) -> int:
    def action(graph: Any, config: Any) -> int:
        out.write(json.dumps(thread_status(graph, config), sort_keys=True) + "\n")
        return EXIT_OK

    return _run(args, action)


def _clear(args: argparse.Namespace, out: TextIO) -> int:
    def action(graph: Any, config: Any) -> int:
        cleared = clear(graph, config)
        out.write(f"cleared {cleared.code} at step {cleared.step}\n" if cleared else "not stopped\n")
        return EXIT_OK

    return _run(args, action)
