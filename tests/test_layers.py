"""The package's layers, and the public surface the docs name.

Layers, each importing only those before it (sideways within a layer is allowed)::

    1  liveguard.core.*, liveguard.errors,   steps, messages, fingerprints, policy, rules, Monitor,
       liveguard.settings                    allow-sets, codes, embedders; the one error tree; the
                                             environment, read once
    2  liveguard.readers.*                   formats in
    3  liveguard.evaluate.*                  eval graph, judges, verdict, gate, engines (Ray too)
    4  liveguard.live.*                      thread guard, guard(), middleware, approval, HITL, notify
    5  liveguard, liveguard.cli.*, liveguard.report.*, liveguard.integrations.*, liveguard.testing
                                             the face

Imports are read from the sources (the AST) of every module: at the top, inside functions
(a lazy import runs as surely as a top one), and under ``if TYPE_CHECKING:`` (a type that
comes from above is a dependency on it too). Only imports of liveguard's own modules are
layered; frameworks are imported lazily and are not liveguard's layers.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import liveguard

PKG = Path(liveguard.__file__).resolve().parent
REPO = PKG.parent.parent
API_DOC = REPO / "docs" / "api.md"

LAYERS: dict[str, int] = {
    "liveguard.errors": 1,
    "liveguard.settings": 1,
    "liveguard.core": 1,
    "liveguard.readers": 2,
    "liveguard.evaluate": 3,
    "liveguard.live": 4,
    "liveguard.cli": 5,
    "liveguard.report": 5,
    "liveguard.integrations": 5,
    "liveguard.testing": 5,
    "liveguard": 5,
}
"""The layer of each top-level entry (and of everything inside a package)."""

NAMES = {1: "core", 2: "readers", 3: "evaluate", 4: "live", 5: "face"}


def layer_of(module: str) -> int | None:
    """The layer of a module; None for a top-level module no layer claims (the root's own layer
    is the root's, not its modules')."""
    if module == "liveguard":
        return LAYERS[module]
    while module != "liveguard":
        if module in LAYERS:
            return LAYERS[module]
        module = module.rpartition(".")[0]
    return None


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` for every liveguard module ``name``'s source imports, at any depth."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names
                         if alias.name.split(".")[0] == "liveguard")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            if base.split(".")[0] != "liveguard":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if sub in known else base))
    return found


def violations(graph: dict[str, list[tuple[int, str]]]) -> list[str]:
    out: list[str] = []
    for name, edges in sorted(graph.items()):
        mine = layer_of(name)
        if mine is None:
            out.append(f"{name}: no layer claims it (core/, readers/, evaluate/, live/ or the face)")
            continue
        for line, target in edges:
            theirs = layer_of(target)
            if theirs is None or theirs > mine:
                where = "no layer" if theirs is None else NAMES[theirs]
                out.append(f"{name}:{line} ({NAMES[mine]}) imports {target} ({where}): up a layer")
    return out


def the_graph() -> dict[str, list[tuple[int, str]]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_walk_sees_lazy_and_type_checking_imports() -> None:
    """So that an empty list of violations means something."""
    graph = the_graph()
    assert len(graph) > 80
    assert sum(len(edges) for edges in graph.values()) > 300
    cli = {target for _, target in graph["liveguard.cli"]}  # cli imports its commands lazily
    assert any(target.startswith("liveguard.cli.") for target in cli)


def test_an_import_up_a_layer_is_found() -> None:
    """The check itself: an upward import, a lazy one, the package root, an unclaimed module."""
    graph = {
        "liveguard.core.semantic.remote": [(21, "liveguard.evaluate.judges")],
        "liveguard.live.approval._send": [(10, "liveguard")],
        "liveguard.readers.inputs": [(29, "liveguard.evaluate.engine.scorer")],
        "liveguard.settings": [(37, "liveguard.evaluate.judges")],
        "liveguard.evaluate.gate": [(3, "liveguard.core.model"), (4, "liveguard.readers.jsonl")],
        "liveguard.loose_module": [],
    }
    found = violations(graph)
    assert len(found) == 5, found
    assert all("up a layer" in line or "no layer claims" in line for line in found)
    assert not any(line.startswith("liveguard.evaluate.gate") for line in found)


def test_every_import_goes_down_or_sideways() -> None:
    found = violations(the_graph())
    assert found == [], "imports that run up a layer:\n" + "\n".join(found)


@pytest.mark.parametrize(("module", "forbidden"), [
    ("liveguard.core.semantic.remote", "liveguard.evaluate"),
    ("liveguard.live.approval", "liveguard"),
    ("liveguard.readers.inputs", "liveguard.evaluate"),
    ("liveguard.settings", "liveguard.evaluate"),
])
def test_the_named_boundaries(module: str, forbidden: str) -> None:
    """The three the issue names, and settings building no judge config."""
    known = modules()
    names = [name for name in known if name == module or name.startswith(module + ".")]
    assert names
    bad = [(name, line, target) for name in names
           for line, target in imports_of(name, known[name], known)
           if target == forbidden or (forbidden != "liveguard" and target.startswith(forbidden + "."))]
    assert bad == []


# ----------------------------------------------------------------------------- the public surface

def api_doc() -> dict[str, set[str]]:
    """docs/api.md: ``## `module``` headings, each followed by its names in backticks."""
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in API_DOC.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"## `([\w.]+)`", line)
        if heading:
            current = heading.group(1)
            sections[current] = set()
        elif current is not None and line.startswith("`"):
            sections[current] |= set(re.findall(r"`(\w+)`", line))
    return sections


def _pages() -> list[Path]:
    return [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md",
            *sorted((REPO / "examples").glob("*.py"))]


LOGGERS_AND_KINDS = frozenset({
    "liveguard.guard", "liveguard.liveness", "liveguard.eval", "liveguard.approval",
    "liveguard.notify", "liveguard.hitl", "liveguard.judges",
})
"""Dotted names the docs use that are logger names or interrupt kinds, not import paths."""


def test_the_public_surface_is_what_the_docs_name() -> None:
    """docs/api.md lists, for the root and every public module, exactly its ``__all__``."""
    sections = api_doc()
    assert "liveguard" in sections
    for facade in ("langgraph", "langchain", "langsmith"):
        assert f"liveguard.integrations.{facade}" in sections
    for name, listed in sections.items():
        module = importlib.import_module(name)
        assert listed == set(getattr(module, "__all__", ())), name
        assert not any(part.startswith("_") for part in name.split(".")), name


def test_the_docs_send_users_only_into_public_modules() -> None:
    """Every ``liveguard.x.y`` a page names is a public module of docs/api.md or a name of one."""
    sections = api_doc()
    known = set(modules())
    wrong: list[str] = []
    for page in _pages():
        if page == API_DOC:
            continue
        text = page.read_text(encoding="utf-8")
        for ref in set(re.findall(r"(?<![\w.])liveguard(?:\.[A-Za-z_]\w*)+", text)):
            if ref in LOGGERS_AND_KINDS:
                continue
            parts = ref.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            module = ".".join(parts)
            rest = ref.split(".")[len(parts):]
            if module not in sections:
                wrong.append(f"{page.name}: {ref} (module {module} is not public)")
            elif rest and rest[0] not in sections[module] and f"{module}.{rest[0]}" not in sections:
                wrong.append(f"{page.name}: {ref} ({rest[0]} is not in {module}.__all__)")
    assert wrong == []


def test_the_framework_adapters_keep_their_public_paths() -> None:
    """What LangChain users write (and the docs show) imports the implementation's objects."""
    from liveguard.integrations.langchain import LivenessMiddleware
    from liveguard.integrations.langgraph import guard
    from liveguard.integrations.langsmith import create_liveness_evaluator
    from liveguard.live import _langchain, _langgraph

    assert LivenessMiddleware is _langchain.LivenessMiddleware
    assert guard is _langgraph.guard
    assert create_liveness_evaluator.__module__ == "liveguard.evaluate._langsmith"
