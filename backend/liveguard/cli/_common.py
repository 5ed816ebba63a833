"""What the scoring commands share: exit codes, usage errors, allow-sets, the scoring stream.

``score``, ``gate`` and ``report`` read their inputs and score them the same way
(:func:`iter_rows`); their option groups are defined once here (:func:`add_inputs`,
:func:`add_window`, :func:`add_engine`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from liveguard.core.allowset import AllowSet, load_allowsets
from liveguard.core.model import Trajectory
from liveguard.core.policy import PRESETS, Policy
from liveguard.errors import LiveguardError, TrajectoryReadError
from liveguard.evaluate.engine.scorer import default_jobs
from liveguard.evaluate.gate import GATE_PASS_RATE
from liveguard.evaluate.rows import RunRow
from liveguard.evaluate.scoring import Record, iter_scored, score_paths
from liveguard.readers.inputs import iter_records
from liveguard.settings import Settings

__all__ = [
    "DEFAULT_PATHS",
    "EXIT_BUG",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "Progress",
    "UsageError",
    "add_engine",
    "add_inputs",
    "add_window",
    "all_rows",
    "cannot_write",
    "iter_rows",
    "langsmith_client",
    "load_allow_sets",
    "output_path",
    "positive_int",
    "write_output",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BUG = 70  # EX_SOFTWARE: an internal error, never confused with --strict's 1
DEFAULT_PATHS = "expected_paths"


class UsageError(Exception):
    """Bad input or usage: one line on stderr, exit 2."""


def output_path(path: str | Path, flag: str) -> Path:
    """An output file named on the command line, checked before any work: exit 2 (one line) when it
    names a directory or lies below a file. Missing folders are created when it is written
    (:func:`write_output`); what only the write can tell (permissions, a read-only or full disk)
    is :func:`cannot_write`'s, at the write."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag} {target}: is a directory; name a file")
    for folder in target.parents:  # the nearest one that exists must be a folder
        if folder.exists():
            if not folder.is_dir():
                raise UsageError(f"{flag} {target}: {folder} is not a directory")
            break
    return target


def write_output(target: Path, data: bytes, flag: str) -> None:
    """Write ``data`` to ``target`` (creating its folders); a failure is exit 2 with one line."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as exc:
        raise cannot_write(flag, target, exc) from None


def cannot_write(flag: str, path: str | Path, exc: OSError) -> UsageError:
    """The one-line usage error (exit 2) for an output that could not be written."""
    why = exc.strerror or type(exc).__name__
    where = f" ({exc.filename})" if exc.filename is not None and str(exc.filename) != str(path) else ""
    return UsageError(f"{flag} {path}: cannot write: {why}{where}")


def load_allow_sets(args: argparse.Namespace) -> dict[str, AllowSet]:
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


def iter_rows(args: argparse.Namespace) -> Iterator[RunRow]:
    """Read and score every run named on the command line, streamed in input order."""
    settings: Settings = args.settings
    # Validates the environment once, up front: a bad override is a usage error.
    default = settings.policy(PRESETS["workflow"]())
    explicit = settings.policy(PRESETS[args.policy]()) if args.policy else None
    from liveguard.evaluate.judges import JudgeConfig

    JudgeConfig.from_settings(settings)
    _semantic_ready(default, explicit)
    allow_sets = load_allow_sets(args)
    args.allow_sets = allow_sets  # the report draws them
    for line in env_notes(args):
        print(f"liveguard: {line}", file=sys.stderr)
    for p in args.paths:
        if not Path(p).exists() and "://" not in str(p):
            raise UsageError(f"{p}: no such file or directory")
    progress = Progress.on_terminal(args.command)
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
        # several workers read their runs' lines themselves: the parent only finds them
        records: Iterator[Record] = iter_records(args.paths, by_reference=(args.jobs or default_jobs()) > 1)
        if project:
            args.langsmith_items = [(f"langsmith:{project}", item) for item in langsmith_items(project)]
            records = itertools.chain(records, args.langsmith_items)
        rows = iter_scored(records, **common)
    try:
        yield from rows
    except ConnectionError as exc:  # the Ray engine: a cluster that cannot be reached or joined
        if not isinstance(exc, LiveguardError):
            raise
        raise UsageError(str(exc)) from None
    finally:
        if progress is not None:
            progress.close()


def _semantic_ready(*policies: Policy | None) -> None:
    """``--semantic`` without its extra or model: one usage error naming the one command to run,
    before any run is read (not an error row per run)."""
    from liveguard.core.semantic.base import semantic_missing

    for policy in policies:
        if policy is not None and policy.semantic:
            lacking = semantic_missing(policy.semantic_embedder)
            if lacking:
                raise UsageError(f"--semantic: {lacking}")


def all_rows(args: argparse.Namespace) -> list[RunRow]:
    """Every row (shared by gate/report)."""
    return list(iter_rows(args))


def env_notes(args: argparse.Namespace) -> list[str]:
    """Rule families and judges switched off by the environment or the command line."""
    settings: Settings = args.settings
    notes = [f"rule family off: {code.split(':', 1)[1]} (environment flag)"
             for code in settings.rule_families_off()]
    if not args.judges:
        notes.append("judges: off (--no-judges): structural only")
    else:
        from liveguard.evaluate.judges import JudgeConfig

        hint = JudgeConfig.from_settings(settings).skip_hint()
        if hint:
            notes.append(f"judges: not run ({hint}); unjudged runs do not pass")
    return notes


def langsmith_client() -> Any:
    """The LangSmith client from the environment (LANGSMITH_ENDPOINT, LANGSMITH_API_KEY)."""
    import logging

    import langsmith

    # The client logs its own retries and warnings; the CLI reports a failure in one line.
    logging.getLogger("langsmith").setLevel(logging.CRITICAL)
    return langsmith.Client()


def langsmith_items(project: str) -> list[Trajectory | TrajectoryReadError]:
    import langsmith.utils
    import requests

    from liveguard.evaluate._langsmith import list_project_trajectories

    try:
        return list(list_project_trajectories(langsmith_client(), project))
    except (langsmith.utils.LangSmithError, requests.RequestException, OSError) as exc:
        kind = ("unauthorised" if isinstance(exc, langsmith.utils.LangSmithAuthError)
                else "not found" if isinstance(exc, langsmith.utils.LangSmithNotFoundError)
                else "unreachable")
        raise UsageError(f"LangSmith {kind}: cannot list project {project!r} "
                         f"({type(exc).__name__})") from None


class Progress:
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
    def on_terminal(cls, command: str) -> Progress | None:
        return cls(f"liveguard {command}: scoring") if sys.stderr.isatty() else None

    def __call__(self, done: int) -> None:
        self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        self._bar.close()


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_inputs(p: argparse.ArgumentParser, required: bool = True) -> None:
    """PATH... and the options that say how runs are scored."""
    p.add_argument("paths", nargs="+" if required else "*", metavar="PATH",
                   help="a JSONL file, a LangSmith JSON export, a Parquet bulk export, or a directory "
                        "of them (read recursively: *.jsonl, *.json, *.parquet at any depth)")
    p.add_argument("--paths", dest="paths_dir", metavar="DIR", default=None,
                   help="directory of allow-set YAML files (matched to runs by graph name; "
                        f"default ./{DEFAULT_PATHS}/ when it exists)")
    p.add_argument("--policy", choices=sorted(PRESETS), default=None,
                   help="policy preset for every run, over the run's metadata.policy "
                        "(default: metadata.policy, else workflow)")
    p.add_argument("--judges", action=argparse.BooleanOptionalAction, default=True,
                   help="call the LLM judges; --no-judges is a structural-only evaluation "
                        "(a structurally clean run passes, and the output says so)")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="worker processes (default: the number of cores)")
    p.add_argument("--semantic", action="store_true",
                   help="turn the semantic layer on (semantic_repeat, role_drift, spin checks; "
                        "needs liveguard[semantic]); same as AGENT_EVAL_SEMANTIC=1")
    p.add_argument("--embedder", choices=("local", "static", "openai"), default=None,
                   help="the semantic layer's embedder, with its own threshold: local (MiniLM, "
                        "the default), static (static token vectors distilled from it: faster, "
                        "less accurate; docs/semantic.md) or openai; same as "
                        "AGENT_EVAL_SEMANTIC_EMBEDDER")


def add_window(p: argparse.ArgumentParser) -> None:
    """The gate's window, minimum and pass rate."""
    p.add_argument("--window", type=positive_int, default=None, metavar="N",
                   help="decide over the last N runs only (default: every run given); runs "
                        "left out with hard findings hold the decision")
    p.add_argument("--min-runs", type=int, default=10, metavar="N",
                   help="runs needed to PROMOTE (default: %(default)s); fewer is a HOLD, exit 3")
    p.add_argument("--pass-rate", type=float, default=GATE_PASS_RATE,
                   help="share of runs in the window that must pass to PROMOTE")


def add_engine(p: argparse.ArgumentParser) -> None:
    """Where the scoring runs: this machine or a Ray cluster."""
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: this machine's cores; ray: a Ray cluster (extra liveguard[ray])")
    p.add_argument("--ray-address", metavar="ADDRESS", default=None,
                   help="Ray cluster to join (default: RAY_ADDRESS, else a local one)")
