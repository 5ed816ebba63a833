"""Per-graph allow-sets: the known-good transitions of a target graph.

An allow-set lives in ``expected_paths/<graph>.yaml``::

    graph: campaign                 # matches the run's ``graph`` field
    description: optional text
    transitions:                    # node -> allowed next nodes, with __start__ / __end__
      __start__: [load_lead]
      load_lead: [compose_touch]
      check_reply: [check_reply, compose_touch, __end__]
    limits:                         # optional per-node visit ceilings (override both the
      check_reply: 10               # node_revisit_cycle and excessive_loop defaults)
    stall:                          # optional per-node stall ceilings (node pollers):
      check_reply: 8                # NodePolicy(stall=8), the 8th identical poll fires
    tools:                          # optional per-tool policy overrides (tool pollers)
      wait_job: {no_progress: 8}
    roles:                          # optional one-line role per node (semantic role_drift)
      check_reply: classifies the lead's reply as interested, not now or unsubscribe
    volatile: [relative_time, uuid] # optional: the volatile-text patterns masked in content
                                    # digests for this graph (replaces Policy.volatile;
                                    # names or re:<regex>; docs/detection.md)

Loading is all-or-nothing: malformed YAML, a file that is not valid UTF-8, a key given
twice in one mapping, unknown keys, a transition to an undeclared node, or a number
outside its documented range raise :class:`AllowSetError` naming the file, the line and
the key. Ranges: ``limits.<node>`` 1..:data:`MAX_LIMIT`; ``stall.<node>`` 2..:data:`MAX_COUNT`;
``tools.<tool>.no_progress``
2..:data:`MAX_COUNT`, ``nonretryable`` 1..:data:`MAX_COUNT`, ``window``
1..:data:`MAX_WINDOW`; every number an integer (``1e20`` or ``2.5`` is rejected).
The same module holds the static protocol checks
(``liveguard paths check``) and derivation from a compiled LangGraph graph
(``liveguard paths derive``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from liveguard.core.fingerprint import volatile_mask
from liveguard.core.policy import NodePolicy, Policy, ToolPolicy
from liveguard.errors import AllowSetError

__all__ = [
    "END",
    "START",
    "AllowSet",
    "AllowSetError",
    "Finding",
    "check_allowset",
    "derive_transitions",
    "load_allowset",
    "load_allowsets",
]

_MAX_ROLE = 300
START = "__start__"
END = "__end__"
MAX_LIMIT = 10_000
"""Largest per-node visit limit."""
MAX_COUNT = 1_000
"""Largest per-tool repeat count (``no_progress``, ``nonretryable``)."""
MAX_WINDOW = 10_000
"""Largest per-tool window (steps)."""
_TOOL_RANGES = {"no_progress": (2, MAX_COUNT), "nonretryable": (1, MAX_COUNT), "window": (1, MAX_WINDOW)}


class AllowSet(BaseModel):
    """A graph's allowed transitions, per-node visit limits and per-tool overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    graph: str = Field(min_length=1)
    description: str | None = None
    transitions: dict[str, list[str]]
    limits: dict[str, int] = Field(default_factory=dict)
    stall: dict[str, int] = Field(default_factory=dict)  # per-node stall ceilings (pollers)
    tools: dict[str, ToolPolicy] = Field(default_factory=dict)
    roles: dict[str, str] = Field(default_factory=dict)  # one line per node, for role_drift
    volatile: tuple[str, ...] | None = None  # the volatile-text patterns (None: the policy's)

    @property
    def nodes(self) -> frozenset[str]:
        """Declared nodes: every transition source and target except ``__start__``/``__end__``."""
        found = set(self.transitions)
        for targets in self.transitions.values():
            found.update(targets)
        return frozenset(found - {START, END})

    def allows(self, source: str, target: str) -> bool:
        return target in self.transitions.get(source, ())

    def apply(self, policy: Policy) -> Policy:
        """``policy`` with this set's limits, stall ceilings and tool overrides layered on top."""
        nodes = dict(policy.nodes)
        for node, limit in self.limits.items():
            base = nodes.get(node, NodePolicy())
            nodes[node] = base.model_copy(update={"max_revisits": limit, "max_visits": limit})
        for node, stall in self.stall.items():
            nodes[node] = nodes.get(node, NodePolicy()).model_copy(update={"stall": stall})
        tools = {**policy.tools, **self.tools}
        update: dict[str, Any] = {"nodes": nodes, "tools": tools}
        if self.volatile is not None:
            update["volatile"] = self.volatile
        return policy.model_copy(update=update)

    @classmethod
    def parse(cls, data: Any, source: str = "<memory>") -> AllowSet:
        """Validate already-parsed data (no line numbers)."""
        return _validate(data, source, None)


# -- loading ------------------------------------------------------------------------------------
def load_allowset(path: str | Path) -> AllowSet:
    """Load and validate one YAML file; raise :class:`AllowSetError` with file:line:key."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise AllowSetError(str(path), "", f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        lineno = raw.count(b"\n", 0, exc.start) + 1
        raise AllowSetError(f"{path}:{lineno}", "", f"not valid UTF-8 (byte offset {exc.start})") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _no_duplicate_keys(root, str(path))
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise AllowSetError(f"{path}{line}", "", f"malformed YAML: {problem}") from None
    return _validate(data, str(path), root)


def load_allowsets(directory: str | Path) -> dict[str, AllowSet]:
    """Every ``*.yaml`` / ``*.yml`` allow-set in a directory, keyed by graph name."""
    found: dict[str, AllowSet] = {}
    for path in sorted(Path(directory).glob("*.y*ml")):
        allow = load_allowset(path)
        if allow.graph in found:
            raise AllowSetError(str(path), "graph", f"graph {allow.graph!r} is defined twice")
        found[allow.graph] = allow
    return found


def _no_duplicate_keys(node: yaml.Node | None, source: str, path: str = "") -> None:
    """Reject a key given twice in one mapping (YAML would silently keep the last)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            dotted = f"{path}.{key}" if path else key
            if key in seen:
                raise AllowSetError(f"{source}:{key_node.start_mark.line + 1}", dotted,
                                    "duplicate key (given twice in one mapping)")
            seen.add(key)
            _no_duplicate_keys(value_node, source, dotted)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _no_duplicate_keys(item, source, f"{path}.{i}" if path else str(i))


def _strict_ints(data: Mapping[Any, Any]) -> tuple[tuple[str | int, ...], str] | None:
    """The first number that is not a plain integer (floats like 1e20 included)."""
    for section in ("limits", "stall", "tools"):
        entries = data.get(section)
        if not isinstance(entries, Mapping):
            continue
        for name, value in entries.items():
            items = value.items() if section == "tools" and isinstance(value, Mapping) else [(None, value)]
            for field, number in items:
                if isinstance(number, float) or (field in _TOOL_RANGES and isinstance(number, bool)):
                    loc: tuple[str | int, ...] = (section, str(name)) + ((str(field),) if field else ())
                    return loc, f"must be an integer, got {number!r}"
    return None


def _validate(data: Any, source: str, root: yaml.Node | None) -> AllowSet:
    def fail(loc: tuple[str | int, ...], reason: str) -> AllowSetError:
        key = ".".join(str(p) for p in loc)
        line = _line_of(root, loc)
        return AllowSetError(f"{source}:{line}" if line else source, key, reason)

    if not isinstance(data, Mapping):
        raise fail((), "expected a mapping with graph and transitions")
    not_int = _strict_ints(data)
    if not_int is not None:
        raise fail(*not_int)
    try:
        allow = AllowSet.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise fail(loc, reason) from None
    if START not in allow.transitions:
        raise fail(("transitions",), f"missing {START}")
    if END in allow.transitions:
        raise fail(("transitions", END), f"{END} cannot have outgoing transitions")
    declared = set(allow.transitions) | {END}
    for source_node, targets in allow.transitions.items():
        for i, target in enumerate(targets):
            if target == START:
                raise fail(("transitions", source_node, i), f"{START} cannot be a target")
            if target not in declared:
                raise fail(
                    ("transitions", source_node, i),
                    f"transition to undeclared node {target!r} (declare it as a key of transitions)",
                )
    for node, role in allow.roles.items():
        if node not in allow.nodes:
            raise fail(("roles", node), f"role for undeclared node {node!r}")
        if not role.strip() or "\n" in role.strip() or len(role) > _MAX_ROLE:
            raise fail(("roles", node), f"a role is one non-empty line of at most {_MAX_ROLE} characters")
    for node, limit in allow.limits.items():
        if node not in allow.nodes:
            raise fail(("limits", node), f"limit for undeclared node {node!r}")
        if not 1 <= limit <= MAX_LIMIT:
            raise fail(("limits", node), f"limit must be within 1..{MAX_LIMIT}, got {limit}")
    for node, stall in allow.stall.items():
        if node not in allow.nodes:
            raise fail(("stall", node), f"stall ceiling for undeclared node {node!r}")
        if not 2 <= stall <= MAX_COUNT:
            raise fail(("stall", node), f"stall must be within 2..{MAX_COUNT}, got {stall}")
    if allow.volatile is not None:
        for i, name in enumerate(allow.volatile):
            try:
                volatile_mask((name,))
            except ValueError as exc:
                raise fail(("volatile", i), str(exc)) from None
    for tool, override in allow.tools.items():
        for field, (low, high) in _TOOL_RANGES.items():
            value = getattr(override, field)
            if value is not None and not low <= value <= high:
                raise fail(("tools", tool, field), f"must be within {low}..{high}, got {value}")
    return allow


def _line_of(root: yaml.Node | None, loc: tuple[str | int, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (the key node for mapping entries)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


# -- static checks ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One result of a static check. Errors make ``paths check`` exit non-zero."""

    level: Literal["error", "warning"]
    code: str
    nodes: tuple[str, ...]
    message: str


def check_allowset(allow: AllowSet) -> list[Finding]:
    """Reachability, can-finish, livelock traps, and unbounded cycles."""
    graph = {node: list(allow.transitions.get(node, ())) for node in allow.nodes | {START}}
    reverse: dict[str, list[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            reverse.setdefault(target, []).append(source)
    reachable = _reach(graph, START)
    finishing = _reach(reverse, END)
    findings: list[Finding] = []
    unreachable = sorted(allow.nodes - reachable)
    if unreachable:
        findings.append(Finding("error", "unreachable", tuple(unreachable),
                                f"not reachable from {START}: {', '.join(unreachable)}"))
    stuck = sorted((allow.nodes | {START}) - finishing)
    if stuck:
        findings.append(Finding("error", "cannot_finish", tuple(stuck),
                                f"cannot reach {END}: {', '.join(stuck)}"))
    for component in _sccs(graph):
        members = sorted(component)
        cyclic = len(component) > 1 or members[0] in graph.get(members[0], ())
        if not cyclic:
            continue
        exits = {t for n in component for t in graph.get(n, ()) if t not in component}
        if not component & finishing:
            findings.append(Finding("error", "livelock_trap", tuple(members),
                                    f"livelock trap (cycle with no way out to {END}): "
                                    f"{', '.join(members)}; exits: {', '.join(sorted(exits)) or 'none'}"))
        elif not any(n in allow.limits for n in component):
            kind = "self-loop" if len(component) == 1 else "cycle"
            findings.append(Finding("warning", "unbounded_cycle", tuple(members),
                                    f"{kind} with no limit: {', '.join(members)}"))
    return findings


def _reach(graph: Mapping[str, Iterable[str]], start: str) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for nxt in graph.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _sccs(graph: Mapping[str, list[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iterative (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = [t for t in graph.get(node, ()) if t in graph]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                result.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result


# -- derivation from a compiled LangGraph graph ---------------------------------------------------
def derive_transitions(compiled: Any) -> tuple[dict[str, list[str]], list[str]]:
    """(transitions, warnings) read from ``compiled.get_graph()``.

    A conditional edge without a ``path_map`` or a ``Literal`` return annotation is
    invisible to ``get_graph()``; a node whose only visible exit is ``__end__`` is
    warned about, since its real exits may be missing.
    """
    drawable = compiled.get_graph()
    transitions: dict[str, set[str]] = {
        node_id: set() for node_id in drawable.nodes if node_id != END
    }
    for edge in drawable.edges:
        transitions.setdefault(edge.source, set()).add(edge.target)
    warnings = [
        f"node {node!r}: its only visible exit is {END}; a conditional edge without a path_map "
        "or Literal return annotation is invisible to get_graph()"
        for node, targets in sorted(transitions.items())
        if node != START and targets == {END}
    ]
    warnings += [
        f"node {node!r} has no visible exit" for node, targets in sorted(transitions.items())
        if not targets
    ]
    ordered = {START: sorted(transitions.pop(START, set()))}
    ordered.update({node: sorted(targets) for node, targets in sorted(transitions.items())})
    return ordered, warnings
