"""No import cycle among liveguard's modules, function-level imports included.

The graph is read from the sources (the AST), not from ``sys.modules``: an import inside a
function counts as much as one at the top, and ``from . import x`` / ``from .a import b``
are resolved to the module they name (``from pkg import sub`` is an edge to ``pkg.sub``
when ``sub`` is a submodule, else to ``pkg``). Imports under ``if TYPE_CHECKING:`` are left
out: they never run. The package a module sits in is not an edge by itself (Python runs a
parent's ``__init__`` first, but a parent that re-exports its children is the usual shape).
"""

from __future__ import annotations

import ast
from pathlib import Path

import liveguard

ROOT = Path(liveguard.__file__).resolve().parent


def _module_names() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> list[ast.stmt]:
    """Every import statement that can run: any depth, ``if TYPE_CHECKING:`` bodies skipped."""
    found: list[ast.stmt] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            assert isinstance(node, ast.ImportFrom)
            if node.level:
                base_parts = package.split(".")
                if node.level > 1:
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts)
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in modules else base)
        for target in targets:
            # `import liveguard.a.b` binds `liveguard` but runs liveguard.a.b: the edge is to it
            if target in modules and target != name:
                out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _module_names()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def visit(root: str) -> None:  # iterative Tarjan: no recursion limit on deep graphs
        nonlocal counter
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One concrete cycle per strongly connected component."""
    return [_cycle_path(graph, set(component)) for component in components(graph)]


def _cycle_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One concrete cycle through the component's first module (breadth-first, shortest)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier: list[str] = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if nxt not in parents:
                    parents[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return sorted(component)  # unreachable for a strongly connected component


def test_the_graph_is_read_from_every_module() -> None:
    """The walk sees function-level and relative imports (so an empty cycle list means something)."""
    graph = import_graph()
    assert "liveguard.cli" in graph
    assert "liveguard.core._monitor" in graph
    # cli imports its commands' modules inside functions: those edges must be there
    assert any(target.startswith("liveguard.") for target in graph["liveguard.cli"])
    assert sum(len(targets) for targets in graph.values()) > 100


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    graph = import_graph()
    lines: list[str] = []
    for component in components(graph):
        lines.append("cycle: " + " -> ".join(_cycle_path(graph, set(component))))
        lines.extend(f"    {name} imports {', '.join(sorted(graph[name] & set(component)))}"
                     for name in component)
    assert not lines, "import cycles:\n" + "\n".join(lines)
