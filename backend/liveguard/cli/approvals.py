"""``liveguard approvals``: list, show and decide the drafts held by the approval step.

::

    liveguard approvals list   [--checkpoint URL] [--format table|json] [--scan]
    liveguard approvals show   THREAD [--checkpoint URL] [--format table|json]
    liveguard approvals approve THREAD --by NAME [--interrupt ID] [--note TEXT] --graph MODULE:ATTR
    liveguard approvals reject  THREAD --by NAME [--message TEXT] [--interrupt ID] [--note TEXT] --graph ...
    liveguard approvals edit    THREAD --by NAME --draft-file F [--interrupt ID] [--note TEXT] --graph ...

``--checkpoint`` defaults to ``AGENT_EVAL_CHECKPOINT_URL``, else the embedded SQLite file
(:mod:`liveguard.live.checkpoints`). ``list`` and ``show`` only read, and never create a file,
a directory or a table. ``list`` reads the pending-approval index the approval step keeps
in the same database (``liveguard_approvals_pending``, minus the interrupts a claim has
decided); ``--scan`` reads every thread's latest checkpoint instead (the checkpoints are
authoritative; the index is written before the interrupt is stored, so it may name a
thread whose interrupt never got stored, never the other way round). The commands that
decide resume the thread, so they need the graph: ``--graph MODULE:ATTR`` names a
compiled graph or a zero-argument factory that returns one (it runs with the
``--checkpoint`` saver, whatever checkpointer it was compiled with). A decision is pinned
to the interrupt the command found (``--interrupt ID``: to that one, refused when it is no
longer the pending one): it never lands on a later draft. A thread that is unknown or not
waiting for approval, a stale interrupt id, a malformed decision, an interrupt another
worker already decided, a database that cannot be reached, opened or written: exit 2 with
one line on stderr.

The held draft is a LangChain ``HITLRequest`` (see :mod:`liveguard.live.hitl`); ``show`` prints
its description and allowed decisions. A decision is sent as the same ``HITLResponse`` a
review UI sends, ``{"decisions": [{"type": "approve" | "edit" | "reject", ...}], "by": NAME,
"note": TEXT}`` (edit: ``edited_action.args.draft`` is the file's text; reject: ``message``),
and always names who decided.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson

from liveguard.cli._common import EXIT_OK, EXIT_USAGE
from liveguard.live import hitl
from liveguard.live.approval import KIND, ApprovalConflict, ApprovalError, parse_decision, pinned
from liveguard.live.checkpoints import (
    DEFAULT_CHECKPOINT_URL,
    CheckpointOpenError,
    CheckpointURLError,
    checkpoint_url,
    has_checkpoints,
    iter_index,
    open_saver,
    pause_point,
)

__all__ = ["Pending", "iter_pending", "pending_for", "register"]

_INTERRUPT = "__interrupt__"


@dataclass(frozen=True)
class Pending:
    """One thread waiting for a person: the latest checkpoint holds an approval interrupt."""

    thread_id: str
    at: str
    payload: Mapping[str, Any]
    interrupt_id: str

    @property
    def reasons(self) -> list[str]:
        return [str(r) for r in self.payload.get("reasons") or []]

    @property
    def codes(self) -> list[str]:
        return [str(c) for c in self.payload.get("codes") or []]

    def _action(self) -> Mapping[str, Any]:
        actions = self.payload.get("action_requests")
        first = actions[0] if isinstance(actions, list) and actions else None
        return first if isinstance(first, Mapping) else {}

    @property
    def draft(self) -> Any:
        args = self._action().get("args")
        return args.get("draft") if isinstance(args, Mapping) else None

    @property
    def description(self) -> str:
        return str(self._action().get("description") or "")

    @property
    def allowed_decisions(self) -> list[str]:
        configs = self.payload.get("review_configs")
        first = configs[0] if isinstance(configs, list) and configs else None
        allowed = first.get("allowed_decisions") if isinstance(first, Mapping) else None
        return [str(a) for a in allowed] if isinstance(allowed, list) else []

    def as_json(self, *, with_draft: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "thread_id": self.thread_id,
            "at": self.at,
            "interrupt_id": self.interrupt_id,
            "reasons": self.reasons,
            "codes": self.codes,
        }
        if "error" in self.payload:
            out["error"] = self.payload["error"]
        if with_draft:
            out["description"] = self.description
            out["allowed_decisions"] = self.allowed_decisions
            out["draft"] = self.draft
            out["verdict"] = self.payload.get("verdict")
        return out


def _pending_of(tup: Any) -> Pending | None:
    for _task, channel, value in tup.pending_writes or ():
        if channel != _INTERRUPT:
            continue
        for item in value if isinstance(value, list | tuple) else [value]:
            payload = getattr(item, "value", None)
            if isinstance(payload, Mapping) and payload.get("kind") == KIND:
                conf = tup.config.get("configurable", {})
                return Pending(str(conf.get("thread_id")), str(tup.checkpoint.get("ts", "")), payload,
                               str(getattr(item, "id", "")))
    return None


def iter_pending(saver: Any) -> Iterator[Pending]:
    """Every thread whose latest root checkpoint waits on an approval interrupt (newest first)."""
    seen: set[str] = set()
    for tup in saver.list(None):
        conf = tup.config.get("configurable", {})
        thread = str(conf.get("thread_id"))
        if conf.get("checkpoint_ns", "") != "" or thread in seen:
            continue
        seen.add(thread)
        pending = _pending_of(tup)
        if pending is not None:
            yield pending


def pending_for(saver: Any, thread_id: str) -> Pending | bool | None:
    """The thread's pending approval; None when it is not waiting; False when it is unknown."""
    tup = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if tup is None:
        return False
    return _pending_of(tup)


# -- commands ----------------------------------------------------------------------------------
def register(sub: Any) -> None:
    """Add ``approvals`` (list, show, approve, reject, edit) to the CLI's subcommands."""
    approvals = sub.add_parser("approvals", help="drafts held for a person: list, show, decide")
    cmds = approvals.add_subparsers(dest="approvals_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--checkpoint", metavar="URL", default=None,
                       help="sqlite:///PATH or postgresql://... (default: $AGENT_EVAL_CHECKPOINT_URL, "
                            "else sqlite:///.liveguard/checkpoints.sqlite)")

    listing = cmds.add_parser("list", help="threads waiting for approval")
    common(listing)
    listing.add_argument("--format", choices=("table", "json"), default="table")
    listing.add_argument("--scan", action="store_true",
                         help="read every thread's latest checkpoint instead of the pending index")
    listing.set_defaults(handler=_list)

    show = cmds.add_parser("show", help="one pending approval: draft, verdict, reasons")
    show.add_argument("thread", metavar="THREAD")
    common(show)
    show.add_argument("--format", choices=("table", "json"), default="table")
    show.set_defaults(handler=_show)

    for action, text in (("approve", "send the draft"), ("reject", "send nothing (revise or end)"),
                         ("edit", "replace the draft, then send")):
        p = cmds.add_parser(action, help=text)
        p.add_argument("thread", metavar="THREAD")
        common(p)
        p.add_argument("--by", required=True, help="who decides (kept in the audit record)")
        p.add_argument("--interrupt", metavar="ID", default=None,
                       help="the interrupt this decision is for (from list/show); refused when stale")
        p.add_argument("--note", default=None)
        if action == "reject":
            p.add_argument("--message", default=None, help="why not (kept in the audit record)")
        p.add_argument("--graph", required=True, metavar="MODULE:ATTR",
                       help="the compiled graph, or a zero-argument factory returning it")
        p.add_argument("--format", choices=("table", "json"), default="table")
        if action == "edit":
            p.add_argument("--draft-file", required=True, metavar="F", help="the new draft (UTF-8 text)")
        p.set_defaults(handler=_decide, action=action)


def _fail(message: str) -> int:
    print(f"liveguard: {message}", file=sys.stderr)
    return EXIT_USAGE


def _dump(value: Any) -> str:
    return orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS).decode()


def _env_error(exc: BaseException) -> str:
    """One line for a database fault met after opening (corrupt page, read-only file, lost server)."""
    text = " ".join(str(exc).split())[:300]
    name = type(exc).__name__
    return f"checkpoint database: {name}: {text}" if text else f"checkpoint database: {name}"


def _db_errors() -> tuple[type[BaseException], ...]:
    import sqlite3

    errors: list[type[BaseException]] = [sqlite3.Error]
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return tuple(errors)
    return (*errors, psycopg.Error)


def _missing_default(url: str | None) -> bool:
    """The embedded default file does not exist yet: nothing was ever held (not an error)."""
    resolved = checkpoint_url(url)
    return resolved == DEFAULT_CHECKPOINT_URL and not Path(resolved[len("sqlite:///"):]).exists()


def _index_rows(saver: Any, scan: bool) -> Iterator[dict[str, Any]]:
    if not scan:
        try:
            yield from iter_index(saver)
            return
        except LookupError:  # no index in this database (an older liveguard wrote it): scan
            pass
    if not has_checkpoints(saver):  # a database nothing was ever checkpointed to
        return
    for p in iter_pending(saver):
        yield p.as_json()


def _list(args: argparse.Namespace, out: TextIO) -> int:
    if _missing_default(args.checkpoint):
        out.write("[]\n" if args.format == "json" else "no pending approvals\n")
        return EXIT_OK
    try:
        with open_saver(args.checkpoint, create=False) as saver:
            return _write_list(_index_rows(saver, args.scan), args.format, out)
    except (CheckpointURLError, CheckpointOpenError) as exc:
        return _fail(str(exc))
    except _db_errors() as exc:
        return _fail(_env_error(exc))


def _write_list(rows: Iterator[dict[str, Any]], fmt: str, out: TextIO) -> int:
    """Rows are written as they come: memory stays flat in the number of threads."""
    first = True
    for row in rows:
        if fmt == "json":
            out.write(("[" if first else ",") + _dump(row))
        else:
            if first:
                out.write(f"{'THREAD':<24} {'INTERRUPT':<32} {'WHEN':<33} {'REASONS':<48} CODES\n")
            out.write(f"{row['thread_id']:<24} {row['interrupt_id']:<32} {row['at']:<33} "
                      f"{','.join(row['reasons']) or '-':<48} {','.join(row['codes']) or '-'}\n")
        first = False
    if fmt == "json":
        out.write("[]\n" if first else "]\n")
    elif first:
        out.write("no pending approvals\n")
    return EXIT_OK


def _lookup(saver: Any, thread: str) -> Pending | str:
    found = pending_for(saver, thread)
    if found is False:
        return f"thread {thread}: unknown (no checkpoint in this saver)"
    if found is None or found is True:
        return f"thread {thread}: not waiting for approval"
    return found


def _show(args: argparse.Namespace, out: TextIO) -> int:
    try:
        with open_saver(args.checkpoint, create=False) as saver:
            found = _lookup(saver, args.thread)
    except (CheckpointURLError, CheckpointOpenError) as exc:
        return _fail(str(exc))
    except _db_errors() as exc:
        return _fail(_env_error(exc))
    if isinstance(found, str):
        return _fail(found)
    if args.format == "json":
        out.write(_dump(found.as_json(with_draft=True)) + "\n")
        return EXIT_OK
    row = found.payload.get("verdict") or {}
    out.write(f"thread:  {found.thread_id}\ninterrupt: {found.interrupt_id}\nwhen:    {found.at}\n")
    out.write(f"reasons: {', '.join(found.reasons) or '-'}\ncodes:   {', '.join(found.codes) or '-'}\n")
    out.write(f"passed:  {row.get('passed')}  score: {row.get('score')}\n")
    out.write(f"allowed decisions: {', '.join(found.allowed_decisions) or '-'}\n")
    if "error" in found.payload:
        out.write(f"last resume rejected: {found.payload['error']}\n")
    out.write(f"description:\n{found.description}\n")
    out.write(f"draft:\n{found.draft}\n")
    return EXIT_OK


def _load_graph(spec: str) -> Any:
    from liveguard.cli._loading import TargetError, call_factory, import_target

    label = f"--graph {spec}"
    try:  # the user's module or factory raising is an input fault (exit 2), not exit 70
        target = import_target(spec, label=label, example="graphs.campaign:build_graph")
        if not hasattr(target, "invoke") and callable(target):
            target = call_factory(target, label=label)
    except TargetError as exc:
        raise ApprovalError(str(exc)) from None
    if not hasattr(target, "invoke") or not hasattr(target, "copy"):
        raise ApprovalError(f"--graph {spec}: not a compiled graph or a factory returning one")
    return target


def _answer(args: argparse.Namespace) -> dict[str, Any]:
    """The ``HITLResponse`` this command sends: one decision, ``by`` and ``note`` beside it."""
    decision: dict[str, Any] = {"type": args.action}
    if args.action == "edit":
        decision["edited_action"] = {"name": hitl.APPROVAL_ACTION, "args": {"draft": args.draft}}
    elif args.action == "reject" and args.message is not None:
        decision["message"] = args.message
    answer: dict[str, Any] = {"decisions": [decision], "by": args.by}
    if args.note is not None:
        answer["note"] = args.note
    return answer


def _decide(args: argparse.Namespace, out: TextIO) -> int:
    from langgraph.errors import UnknownInterruptError

    try:
        args.draft = None
        if args.action == "edit":
            try:
                args.draft = Path(args.draft_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                return _fail(f"--draft-file {args.draft_file}: {type(exc).__name__}: cannot read UTF-8 text")
        # Checked before anything is loaded: the shape every approval request has.
        parse_decision(_answer(args), hitl.approval_request(None, reasons=[]), require_by=True)
        graph = _load_graph(args.graph)
        with open_saver(args.checkpoint, must_exist=True) as saver:
            found = _lookup(saver, args.thread)
            if isinstance(found, str):
                return _fail(found)
            if args.interrupt is not None and args.interrupt != found.interrupt_id:
                return _fail(f"thread {args.thread}: interrupt {args.interrupt} is not pending "
                             f"(the thread waits on {found.interrupt_id}); nothing decided")
            answer = _answer(args)
            decision = parse_decision(answer, found.payload, require_by=True)  # this request's rules
            pause_point("cli_looked_up")
            app = graph.copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": args.thread}, "recursion_limit": 200}
            command, strict = pinned(config, found.interrupt_id, answer)
            try:
                app.invoke(command, strict)
            except UnknownInterruptError:
                return _fail(f"thread {args.thread}: interrupt {found.interrupt_id} is no longer pending "
                             "(decided meanwhile); nothing decided")
            state = app.get_state(config)
            latest = saver.get_tuple({"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}})
            after = _pending_of(latest)
    except (ApprovalError, CheckpointURLError, CheckpointOpenError, ApprovalConflict) as exc:
        return _fail(str(exc))
    except _db_errors() as exc:
        return _fail(_env_error(exc))
    result = {
        "thread_id": args.thread,
        "action": decision.type,
        "by": decision.by,
        "pending": after is not None,
        "next": list(state.next),
        "error": after.payload.get("error") if after is not None else None,
    }
    if args.format == "json":
        out.write(_dump(result) + "\n")
    else:
        status = "waiting for approval again" if after is not None else (
            f"next: {', '.join(state.next)}" if state.next else "finished")
        out.write(f"thread {args.thread}: {decision.type} by {decision.by}; {status}\n")
    return EXIT_OK
