"""A LangSmith run tree in one shape, whatever it came from: a ``langsmith`` Run, a tracer's
``RunTree``, a dict of a JSON export, or a flat list of runs naming their parents.

:func:`normalize` builds the :class:`Run` tree (children in execution order) and raises
:class:`OddRunError` naming the run on anything odd; :func:`forest` and :func:`build_tree`
put a flat list back together; :func:`nest_adopted` nests a root's flat-listed descendants.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import UTC, datetime
from typing import Any

from liveguard.core.messages import field
from liveguard.readers.updates import MAX_RUN_DEPTH, _to_json

__all__ = ["Forest", "OddRunError", "Run", "build_tree", "forest", "nest_adopted", "normalize", "run_id",
           "status_of", "timestamp"]


@dataclass
class Run:
    """A run in one normalized shape, whatever object it came from."""

    id: str
    name: str
    run_type: str
    extra: dict[str, Any]
    inputs: Any
    outputs: Any
    error: str | None
    status: str | None
    start: float
    dotted_order: str
    session_id: str | None
    children: list[Run] = dc_field(default_factory=list)

    @property
    def metadata(self) -> Mapping[str, Any]:
        md = self.extra.get("metadata")
        return md if isinstance(md, Mapping) else {}

    @property
    def node(self) -> str | None:
        node = self.metadata.get("langgraph_node")
        return node if isinstance(node, str) and node else None

    @property
    def step(self) -> int | None:
        step = self.metadata.get("langgraph_step")
        return step if isinstance(step, int) and not isinstance(step, bool) else None

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("langgraph_checkpoint_ns")
        return ns if isinstance(ns, str) and ns else None

    def sort_key(self) -> tuple[int, float, str]:
        step = self.step
        return (-1 if step is None else step, self.start, self.dotted_order)


def timestamp(value: Any) -> float:
    """Seconds since the epoch; ``inf`` (sorts last) when missing or unreadable."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return float("inf")
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        stamp: float = value.timestamp()
        return stamp
    return float("inf")


def run_id(obj: Any) -> str | None:
    ident = field(obj, "id")
    return str(ident) if ident is not None and str(ident) else None


def status_of(obj: Any, error: str | None) -> str | None:
    status = field(obj, "status")
    if isinstance(status, str) and status:
        return status
    if error:
        return "error"
    if field(obj, "end_time") is not None:
        return "success"
    return None


class OddRunError(ValueError):
    """A run that cannot be read; the message is the whole reason."""


def normalize(obj: Any, adopted: Mapping[str, list[Any]], depth: int, seen: set[str]) -> Run:
    """One run (and its subtree) in the :class:`Run` shape; raises ``OddRunError`` on odd data.

    Problems below the root name the run they are about (``run <id>: ...``).
    """
    if depth > MAX_RUN_DEPTH:
        raise OddRunError(f"run tree deeper than {MAX_RUN_DEPTH} levels (a cycle?)")
    if obj is None or isinstance(obj, str | int | float | bool | list):
        raise OddRunError(f"expected a run, got {type(obj).__name__}")
    ident = run_id(obj)
    if ident is None:
        raise OddRunError("a run has no id")
    if ident in seen:
        raise OddRunError(f"run {ident} appears twice in the tree (a cycle?)")
    seen.add(ident)
    where = f"run {ident}: " if depth else ""
    extra = _to_json(field(obj, "extra")) or {}
    if not isinstance(extra, dict):
        raise OddRunError(f"{where}extra is {type(extra).__name__}, not an object")
    error = field(obj, "error")
    error = None if error is None else str(error)
    name, run_type = field(obj, "name"), field(obj, "run_type")
    session = field(obj, "session_id")
    children_in = field(obj, "child_runs") or []
    if not isinstance(children_in, list | tuple):
        raise OddRunError(f"{where}child_runs is {type(children_in).__name__}, not a list")
    children = list(children_in) + list(adopted.get(ident, ()))
    run = Run(
        id=ident,
        name=name if isinstance(name, str) else "",
        run_type=run_type if isinstance(run_type, str) else "",
        extra=extra,
        inputs=_to_json(field(obj, "inputs")),
        outputs=_to_json(field(obj, "outputs")),
        error=error,
        status=status_of(obj, error),
        start=timestamp(field(obj, "start_time")),
        dotted_order=str(field(obj, "dotted_order") or ""),
        session_id=None if session is None else str(session),
    )
    known: set[str] = set()
    for child in children:
        child_id = run_id(child)
        if child_id is not None and child_id in known:
            continue  # nested and also listed flat: the same run
        if child_id is not None:
            known.add(child_id)
        run.children.append(normalize(child, adopted, depth + 1, seen))
    run.children.sort(key=Run.sort_key)
    return run


def build_tree(run: Any) -> tuple[Any, dict[str, list[Any]]]:
    """A run object, or the root of a flat list of runs that name their parents."""
    if not isinstance(run, list | tuple):
        return run, {}
    roots, adopted, problems = forest(run)
    if problems:
        index, reason = problems[0]
        raise OddRunError(f"runs[{index}]: {reason}")
    if len(roots) != 1:
        raise OddRunError(f"a flat run list needs exactly one root run, found {len(roots)}")
    return roots[0][1], adopted


Forest = tuple[list[tuple[int, Any]], dict[str, list[Any]], list[tuple[int, str]]]


def forest(items: Sequence[Any]) -> Forest:
    """Split runs into roots and (parent id → children) links; problems by list index."""
    problems: list[tuple[int, str]] = []
    ids: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            problems.append((index, f"expected a run object, got {type(item).__name__}"))
            continue
        ident = run_id(item)
        if ident is not None:
            ids.setdefault(ident, index)
    roots: list[tuple[int, Any]] = []
    adopted: dict[str, list[Any]] = {}
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        parent = item.get("parent_run_id")
        parent_id = None if parent is None else str(parent)
        if parent_id is not None and parent_id in ids and parent_id != run_id(item):
            adopted.setdefault(parent_id, []).append(item)
        else:
            roots.append((index, item))
    # Runs reachable from no root (their parent chain loops) are reported, not dropped.
    reachable: set[str] = set()
    stack = [item for _, item in roots]
    while stack:
        item = stack.pop()
        ident = run_id(item)
        if ident is None or ident in reachable:
            continue
        reachable.add(ident)
        stack += adopted.get(ident, [])
        nested = item.get("child_runs")
        stack += [c for c in nested if isinstance(c, Mapping)] if isinstance(nested, list) else []
    problems += [
        (index, f"run {run_id(item)} is not reachable from a root run (parent_run_id cycle)")
        for index, item in enumerate(items)
        if isinstance(item, Mapping) and run_id(item) not in reachable
    ]
    return roots, adopted, problems


def nest_adopted(item: Any, adopted: Mapping[str, list[Any]]) -> Any:
    """``item`` with its adopted (flat-listed) descendants nested, ready for conversion."""
    if not adopted:
        return item

    def nest(obj: Any, depth: int) -> Any:
        if depth > MAX_RUN_DEPTH or not isinstance(obj, Mapping):
            return obj
        ident = run_id(obj)
        nested = obj.get("child_runs")
        if nested is not None and not isinstance(nested, list):
            return obj  # reported by the conversion
        children = list(nested or [])
        known = {run_id(c) for c in children if isinstance(c, Mapping)}
        children += [c for c in adopted.get(ident or "", []) if run_id(c) not in known]
        return {**obj, "child_runs": [nest(c, depth + 1) for c in children]}

    return nest(item, 0)
