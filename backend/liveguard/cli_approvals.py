"""``liveguard approvals``: list, show and decide the drafts held by the approval step.

::

    liveguard approvals list   [--checkpoint URL] [--format table|json]
    liveguard approvals show   THREAD [--checkpoint URL] [--format table|json]
    liveguard approvals approve THREAD --by NAME [--note TEXT] --graph MODULE:ATTR [--checkpoint URL]
    liveguard approvals reject  THREAD --by NAME [--note TEXT] --graph MODULE:ATTR [--checkpoint URL]
    liveguard approvals edit    THREAD --by NAME --draft-file F [--note TEXT] --graph MODULE:ATTR

``--checkpoint`` defaults to ``AGENT_EVAL_CHECKPOINT_URL``, else the embedded SQLite file
(:mod:`liveguard.checkpoints`). ``list`` and ``show`` read the checkpoints only; the
commands that decide resume the thread, so they need the graph: ``--graph MODULE:ATTR``
names a compiled graph or a zero-argument factory that returns one (it runs with the
``--checkpoint`` saver, whatever checkpointer it was compiled with). A thread that is
unknown or not waiting for approval, a malformed decision, or an interrupt another worker
already decided: exit 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson

from liveguard.approval import KIND, ApprovalConflict, ApprovalError, parse_decision
from liveguard.checkpoints import CheckpointURLError, open_saver

__all__ = ["Pending", "add_parser", "iter_pending", "pending_for"]

EXIT_OK = 0
EXIT_USAGE = 2
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
        row = self.payload.get("verdict") or {}
        return sorted({str(v.get("code")) for v in row.get("violations") or [] if isinstance(v, Mapping)})

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
            out["draft"] = self.payload.get("draft")
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
def add_parser(sub: Any) -> None:
    """Register ``approvals`` on the main parser's subcommands."""
    approvals = sub.add_parser("approvals", help="drafts held for a person: list, show, decide")
    cmds = approvals.add_subparsers(dest="approvals_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--checkpoint", metavar="URL", default=None,
                       help="sqlite:///PATH or postgresql://... (default: $AGENT_EVAL_CHECKPOINT_URL, "
                            "else sqlite:///.liveguard/checkpoints.sqlite)")

    listing = cmds.add_parser("list", help="threads waiting for approval")
    common(listing)
    listing.add_argument("--format", choices=("table", "json"), default="table")
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
        p.add_argument("--note", default=None)
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


def _list(args: argparse.Namespace, out: TextIO) -> int:
    try:
        with open_saver(args.checkpoint) as saver:
            rows = list(iter_pending(saver))
    except CheckpointURLError as exc:
        return _fail(str(exc))
    if args.format == "json":
        out.write(_dump([p.as_json() for p in rows]) + "\n")
        return EXIT_OK
    if not rows:
        out.write("no pending approvals\n")
        return EXIT_OK
    out.write(f"{'THREAD':<24} {'WHEN':<33} {'REASONS':<48} CODES\n")
    for p in rows:
        out.write(f"{p.thread_id:<24} {p.at:<33} {','.join(p.reasons) or '-':<48} "
                  f"{','.join(p.codes) or '-'}\n")
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
        with open_saver(args.checkpoint) as saver:
            found = _lookup(saver, args.thread)
    except CheckpointURLError as exc:
        return _fail(str(exc))
    if isinstance(found, str):
        return _fail(found)
    if args.format == "json":
        out.write(_dump(found.as_json(with_draft=True)) + "\n")
        return EXIT_OK
    row = found.payload.get("verdict") or {}
    out.write(f"thread:  {found.thread_id}\nwhen:    {found.at}\n")
    out.write(f"reasons: {', '.join(found.reasons) or '-'}\ncodes:   {', '.join(found.codes) or '-'}\n")
    out.write(f"passed:  {row.get('passed')}  score: {row.get('score')}\n")
    if "error" in found.payload:
        out.write(f"last resume rejected: {found.payload['error']}\n")
    out.write(f"draft:\n{found.payload.get('draft')}\n")
    return EXIT_OK


def _load_graph(spec: str) -> Any:
    from liveguard.loading import TargetError, call_factory, import_target

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


def _decide(args: argparse.Namespace, out: TextIO) -> int:
    from langgraph.types import Command

    answer: dict[str, Any] = {"action": args.action, "by": args.by}
    if args.note is not None:
        answer["note"] = args.note
    try:
        if args.action == "edit":
            try:
                answer["draft"] = Path(args.draft_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                return _fail(f"--draft-file {args.draft_file}: {type(exc).__name__}: cannot read UTF-8 text")
        decision = parse_decision(answer)
        graph = _load_graph(args.graph)
        with open_saver(args.checkpoint) as saver:
            found = _lookup(saver, args.thread)
            if isinstance(found, str):
                return _fail(found)
            app = graph.copy(update={"checkpointer": saver})
            config = {"configurable": {"thread_id": args.thread}, "recursion_limit": 200}
            app.invoke(Command(resume=dict(decision)), config)
            state = app.get_state(config)
            latest = saver.get_tuple({"configurable": {"thread_id": args.thread, "checkpoint_ns": ""}})
            after = _pending_of(latest)
    except (ApprovalError, CheckpointURLError) as exc:
        return _fail(str(exc))
    except ApprovalConflict as exc:
        return _fail(str(exc))
    result = {
        "thread_id": args.thread,
        "action": decision["action"],
        "by": decision["by"],
        "pending": after is not None,
        "next": list(state.next),
        "error": after.payload.get("error") if after is not None else None,
    }
    if args.format == "json":
        out.write(_dump(result) + "\n")
    else:
        status = "waiting for approval again" if after is not None else (
            f"next: {', '.join(state.next)}" if state.next else "finished")
        out.write(f"thread {args.thread}: {decision['action']} by {decision['by']}; {status}\n")
    return EXIT_OK
