"""Lay the package out in layers, and point every reference at the new paths (issue 29, item 5).

::

    python scripts/relayout.py            # apply (git mv, rewrite), print what it did
    python scripts/relayout.py --check    # print what it would do, change nothing; exit 1 if anything

The layers, each importing only those before it (``tests/test_layers.py`` holds them):

    liveguard.errors, liveguard.settings      the ground: one error tree; the environment, read once
    liveguard.core      steps, messages, fingerprints, policy, rules, Monitor, allow-sets, codes,
                        the semantic layer's embedders, the OpenAI-compatible endpoint's config
    liveguard.readers   formats in
    liveguard.evaluate  eval graph, judges, verdict, aggregate, gate, engines (local and Ray),
                        batch scoring, LangSmith evaluators
    liveguard.live      the thread guard, guard() and the middleware, approval, HITL, notify,
                        checkpoints, threads
    liveguard.cli, liveguard.report, liveguard.integrations, liveguard (the face)

``liveguard.integrations.{langgraph,langchain,langsmith}`` stay the public paths of the framework
adapters (what the docs, the examples and LangChain users write); they become thin modules that
re-export the implementation's ``__all__``, generated here from it.

What it does, in order (each step is a no-op when already done, so a second run changes nothing):

1. ``git mv`` every entry of :data:`MOVES` whose old path exists and whose new one does not
   (whole directories where possible, so files other branches add inside them move too); an
   entry whose old path is gone is skipped (``_canon.c`` deleted by another branch, say).
2. Writes the new layer packages' ``__init__.py`` and the thin public modules.
3. Rewrites references in the project's text files (:data:`ROOTS`): Python imports
   (``from liveguard.x import``, ``import liveguard.x``, ``from liveguard import x`` for a moved
   submodule, relative imports are resolved first), dotted names in strings, comments and docs
   (``"liveguard.x.y"``), and source paths (``backend/liveguard/x.py``), longest old path first.
   Logger names and the interrupt kind ``"liveguard.approval"`` (quoted, exact) are not module
   references and stay. Identifiers in :data:`RENAMES` are renamed.
4. Writes ``docs/api.md``: the public surface, module by module, from each public module's
   ``__all__``.
5. Reports any top-level module of the package that no layer claims (a new file another branch
   added at the top): move it by hand, or add it to :data:`MOVES`.

Standard library only; run from the repository root (or anywhere: it finds the root from its
own path).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "backend" / "liveguard"

MOVES: list[tuple[str, str]] = [
    # core: the ground every layer stands on (order matters: a file leaves a directory first)
    ("_twin.py", "core/_twin.py"),
    ("_compiled.py", "core/_compiled.py"),
    ("_canon.c", "core/_canon.c"),
    ("_canon.pyi", "core/_canon.pyi"),
    ("codes.py", "core/codes.py"),
    ("evidence.py", "core/evidence.py"),
    ("model.py", "core/model.py"),
    ("messages.py", "core/messages.py"),
    ("fingerprint.py", "core/fingerprint.py"),
    ("policy.py", "core/policy.py"),
    ("allowset.py", "core/allowset.py"),
    ("_matcher.py", "core/_matcher.py"),
    ("stop_text.py", "core/stop_text.py"),
    ("schema_errors.py", "core/schema_errors.py"),
    ("monitor.py", "core/_monitor.py"),
    ("rules", "core/rules"),
    ("semantic/spin.py", "evaluate/spin.py"),  # the periodic judge: it asks the judges
    ("semantic", "core/semantic"),
    ("judges/_config.py", "core/_endpoint.py"),
    # evaluate
    ("eval_graph.py", "evaluate/eval_graph.py"),
    ("aggregation.py", "evaluate/_aggregation.py"),
    ("verdict.py", "evaluate/verdict.py"),
    ("gate.py", "evaluate/gate.py"),
    ("results.py", "evaluate/results.py"),
    ("rows.py", "evaluate/rows.py"),
    ("scoring.py", "evaluate/scoring.py"),
    ("judges", "evaluate/judges"),
    ("engine", "evaluate/engine"),
    ("integrations/ray.py", "evaluate/engine/ray.py"),
    ("integrations/langsmith.py", "evaluate/_langsmith.py"),
    # live
    ("thread_guard.py", "live/thread_guard.py"),
    ("threads.py", "live/threads.py"),
    ("checkpoints.py", "live/checkpoints.py"),
    ("hitl.py", "live/hitl.py"),
    ("notify.py", "live/notify.py"),
    ("approval", "live/approval"),
    ("integrations/langgraph", "live/_langgraph"),
    ("integrations/langchain.py", "live/_langchain.py"),
    ("integrations/ledger.py", "live/_ledger.py"),
    # the face
    ("terminal.py", "cli/terminal.py"),
    ("loading.py", "cli/_loading.py"),
]
"""Old path → new path, relative to ``backend/liveguard``."""

PUBLIC_FACADES: dict[str, str] = {
    "integrations/langgraph.py": "liveguard.live._langgraph",
    "integrations/langchain.py": "liveguard.live._langchain",
    "integrations/langsmith.py": "liveguard.evaluate._langsmith",
}
"""The framework adapters' public paths (kept): a thin module re-exporting the implementation."""

FACADE_MARK = "# Generated by scripts/relayout.py: the public path; the implementation is"

LAYER_PACKAGES: dict[str, str] = {
    "core": (
        "The ground: steps, messages, canonical fingerprints, policy, rules, the Monitor, allow-sets,\n"
        "violation codes, the semantic layer's embedders.\n\n"
        "Imports nothing above it (``tests/test_layers.py``): no reader, no evaluation, no live guard,\n"
        "no framework at import time."
    ),
    "evaluate": (
        "Evaluation: the eval graph, the judges, the verdict and its aggregate, the release gate, the\n"
        "scoring engines (local processes and Ray, the same scoring functions), LangSmith evaluators.\n\n"
        "Imports only :mod:`liveguard.core` and :mod:`liveguard.readers` below it."
    ),
    "live": (
        "Live runs: the thread guard (the one live core), ``guard()`` and the middleware as its\n"
        "drivers, the approval step, human-in-the-loop requests and decisions, notifications,\n"
        "checkpointers and thread records.\n\n"
        "Imports only the layers below it; the public paths of the framework adapters are\n"
        ":mod:`liveguard.integrations.langgraph` and :mod:`liveguard.integrations.langchain`."
    ),
}

RENAMES: dict[str, str] = {
    "DecisionError": "InvalidDecision",  # liveguard.hitl: a value, not an exception
}

PROTECTED_LITERALS = frozenset({
    "liveguard.approval", "liveguard.hitl", "liveguard.notify", "liveguard.judges",
})
"""Logger names and the approval interrupt's ``kind``: quoted exactly, or after one of
:data:`PROTECTED_CONTEXT` on their line, they are not module paths."""

PROTECTED_CONTEXT = ("logger", "logged", "getlogger", "caplog", "kind")

ROOTS: list[str] = [
    "backend", "tests", "benchmarks", "scripts", "examples", "graphs", "docs",
    "README.md", "Makefile", "pyproject.toml", "setup.py", ".ci",
]
"""Where references are rewritten (CHANGELOG.md and the results archive are history: left)."""

SKIP = {"scripts/relayout.py", "benchmarks/RESULTS-archive.md", "CHANGELOG.md"}
TEXT_SUFFIXES = {".py", ".pyi", ".md", ".toml", ".txt", ".json", ".cfg", ".ini", ".yml", ".yaml",
                 ".c", ".sh", ""}
USER_FACING = ("docs/", "README.md", "examples/", "graphs/")
"""Files that keep the public facades' paths (elsewhere a private name goes to the implementation)."""

API_DOC = ROOT / "docs" / "api.md"


# ----------------------------------------------------------------------------- the mapping

def _dotted(path: str) -> str:
    p = path[:-3] if path.endswith(".py") else path[:-4] if path.endswith(".pyi") else path
    return "liveguard." + p.replace("/", ".") if not p.endswith(".c") else ""


def module_map() -> dict[str, str]:
    """Old dotted module → new dotted module (``.py`` files and packages only)."""
    out: dict[str, str] = {}
    for old, new in MOVES:
        if old.endswith((".c",)):
            continue
        a, b = _dotted(old), _dotted(new)
        if a and b:
            out[a] = b
    return out


def path_map() -> dict[str, str]:
    return dict(MOVES)


def facade_modules() -> dict[str, str]:
    """Public facade dotted path → implementation dotted path."""
    return {_dotted(path): impl for path, impl in PUBLIC_FACADES.items()}


# ----------------------------------------------------------------------------- git

def _git(*args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def _tracked(path: Path) -> bool:
    return bool(_git("ls-files", "--", str(path.relative_to(ROOT)), check=False).strip())


def move_files(apply: bool, log: list[str]) -> None:
    for old, new in MOVES:
        src, dst = PKG / old, PKG / new
        if not src.exists() or (src.is_file() and _is_facade(src)):
            continue
        if src.is_dir() and not (src / "__init__.py").exists() and not _tracked(src):
            continue  # an emptied directory (caches only): cleaned up below
        if dst.exists():
            raise SystemExit(f"relayout: both {src.relative_to(ROOT)} and {dst.relative_to(ROOT)} "
                             "exist: merge them by hand, then run again")
        log.append(f"git mv backend/liveguard/{old} backend/liveguard/{new}")
        if apply:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if _tracked(src):
                _git("mv", str(src.relative_to(ROOT)), str(dst.relative_to(ROOT)))
            else:
                shutil.move(str(src), str(dst))
            _drop_leftovers(src)


def _drop_leftovers(src: Path) -> None:
    """A moved directory leaves its untracked caches behind: remove them, and the empty folder
    (an empty ``integrations/langgraph/`` would shadow nothing, but reads as a package)."""
    if src.is_dir():
        for cache in src.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        for d in sorted((p for p in src.rglob("*") if p.is_dir()), reverse=True):
            if not any(d.iterdir()):
                d.rmdir()
        if not any(src.iterdir()):
            src.rmdir()
    cache = src.parent / "__pycache__"
    if cache.is_dir():
        for stale in cache.glob(src.stem + ".*"):
            stale.unlink()


def _is_facade(path: Path) -> bool:
    return path.is_file() and FACADE_MARK in path.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- generated files

def _write(path: Path, text: str, apply: bool, log: list[str]) -> None:
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old == text:
        return
    log.append(f"{'write' if old is None else 'rewrite'} {path.relative_to(ROOT)}")
    if apply:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if old is None:
            _git("add", "--", str(path.relative_to(ROOT)))


def _module_file(dotted: str) -> Path | None:
    if dotted == "liveguard":
        return PKG / "__init__.py"
    rel = Path(*dotted.split(".")[1:])
    for candidate in (PKG / rel / "__init__.py", PKG / rel.with_suffix(".py")):
        if candidate.exists():
            return candidate
    return None


def module_all(dotted: str) -> list[str] | None:
    """``__all__`` of a module, read from its source (never imported)."""
    path = _module_file(dotted)
    if path is None:
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            if isinstance(value, ast.List | ast.Tuple):
                return [e.value for e in value.elts if isinstance(e, ast.Constant)]
    return None


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's isort order (and RUF022's): CONSTANTS, then Classes, then the rest."""
    if name.isupper() and len(name) > 1:
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)


def write_packages(apply: bool, log: list[str]) -> None:
    for name, doc in LAYER_PACKAGES.items():
        init = PKG / name / "__init__.py"
        if not (PKG / name).is_dir() and not apply:
            log.append(f"write backend/liveguard/{name}/__init__.py")
            continue
        if init.exists():
            continue  # written once; later edits are the package's own
        _write(init, f'"""{doc}\n"""\n\n__all__: list[str] = []\n', apply, log)
    for path, impl in PUBLIC_FACADES.items():
        names = module_all(impl)
        target = PKG / path
        if names is None:
            if not apply:
                log.append(f"write backend/liveguard/{path} (re-exporting {impl})")
            continue
        public = _dotted(path)
        lines = [f'"""The public path of {impl.rsplit(".", 1)[1].lstrip("_")}\'s integration:'
                 f" :mod:`{public}`.", "",
                 f"The names are :mod:`{impl}`'s ``__all__``; import them from here.", '"""', "",
                 f"{FACADE_MARK} {impl}.", ""]
        if names:
            lines.append(f"from {impl} import (")
            lines.extend(f"    {n}," for n in sorted(names, key=_isort_key))
            lines.append(")")
            lines.append("")
        lines.append("__all__ = [")
        lines.extend(f'    "{n}",' for n in sorted(names, key=_isort_key))
        lines.append("]")
        _write(target, "\n".join(lines) + "\n", apply, log)


# ----------------------------------------------------------------------------- rewriting

def _files() -> list[Path]:
    found: list[Path] = []
    for root in ROOTS:
        base = ROOT / root
        if base.is_file():
            found.append(base)
        elif base.is_dir():
            for p in sorted(base.rglob("*")):
                if (p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts
                        and not any(part.startswith(".") and part not in (".ci",)
                                    for part in p.relative_to(ROOT).parts)):
                    found.append(p)
    return [p for p in found if str(p.relative_to(ROOT)) not in SKIP]


class Rewriter:
    def __init__(self) -> None:
        self.modules = module_map()
        self.facades = facade_modules()
        self.facade_all = {pub: set(module_all(impl) or ()) for pub, impl in self.facades.items()}
        self.paths = path_map()
        olds = sorted((o for o in self.modules if o not in self.facades), key=len, reverse=True)
        names = "|".join(re.escape(o[len("liveguard."):]) for o in olds)
        self._dotted = re.compile(rf"(?<![\w.])liveguard\.(?:{names})(?![\w])")
        fac = "|".join(re.escape(f[len("liveguard."):]) for f in sorted(self.facades, key=len, reverse=True))
        self._private_facade = re.compile(rf"(?<![\w.])liveguard\.(?:{fac})\.(?=_\w)")
        paths = "|".join(re.escape(o) for o in sorted(self.paths, key=len, reverse=True))
        self._path = re.compile(rf"(?<=liveguard/)(?:{paths})(?![\w])(?!\.\w)")
        self._renames = (re.compile(r"\b(" + "|".join(map(re.escape, RENAMES)) + r")\b")
                         if RENAMES else None)

    # --- dotted names anywhere in the text
    def _new_module(self, old: str) -> str:
        return self.modules[old]

    def dotted(self, text: str) -> str:
        def repl(m: re.Match[str]) -> str:
            name = m.group(0)
            start, end = m.start(), m.end()
            before = text[start - 1] if start else ""
            after = text[end] if end < len(text) else ""
            if name in PROTECTED_LITERALS and before in "\"'" and after == before:
                return name  # a logger name or the approval kind, quoted exactly
            line_start = text.rfind("\n", 0, start) + 1
            context = text[line_start:start].lower()
            if name in PROTECTED_LITERALS and after != "." and any(w in context for w in PROTECTED_CONTEXT):
                return name  # `kind` | `liveguard.approval`; logged (`liveguard.notify`: ...)
            return self._new_module(name)

        text = self._dotted.sub(repl, text)

        def private(m: re.Match[str]) -> str:
            public = m.group(0)[:-1]
            return self.facades[public] + "."

        return self._private_facade.sub(private, text)

    def paths_in(self, text: str) -> str:
        def repl(m: re.Match[str]) -> str:
            return self.paths[m.group(0)]

        return self._path.sub(repl, text)

    # --- Python: `from P import sub`, relative imports, imports of a facade's private names
    def python(self, text: str, rel: str) -> str:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            print(f"relayout: warning: {rel} does not parse; only its dotted names are rewritten")
            return text
        lines = text.split("\n")
        edits: list[tuple[int, int, list[str]]] = []
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                print(f"relayout: warning: {rel}:{node.lineno}: a relative import, left as is")
                continue
            base = node.module or ""
            if not (base == "liveguard" or base.startswith("liveguard.")):
                continue
            new = self._import_from(node, base, rel)
            if new is not None:
                edits.append((node.lineno - 1, node.end_lineno or node.lineno, new))
        for start, end, new in sorted(edits, reverse=True):
            indent = re.match(r"\s*", lines[start]).group(0)  # type: ignore[union-attr]
            lines[start:end] = [indent + line if i else indent + line.lstrip()
                                for i, line in enumerate(new)]
        return "\n".join(lines)

    def _import_from(self, node: ast.ImportFrom, base: str, rel: str) -> list[str] | None:
        user_facing = rel.startswith(USER_FACING)
        # a facade's names that are not public go to the implementation (code only); the
        # package itself always imports the implementation (a facade is the face: a layer up)
        if base in self.facades and not user_facing:
            inside = rel.startswith("backend/liveguard/")
            if inside or any(a.name not in self.facade_all[base] for a in node.names):
                return self._render(self.facades[base], node.names)
            return None
        if base in self.facades or (base not in self.modules and base != "liveguard" and not any(
                f"{base}.{a.name}" in self.modules and f"{base}.{a.name}" not in self.facades
                for a in node.names)):
            return None
        groups: dict[str, list[ast.alias]] = {}
        changed = False
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in self.modules and sub not in self.facades:
                parent, _, leaf = self._moved(sub).rpartition(".")
                asname = alias.asname or (alias.name if leaf != alias.name else None)
                renamed = ast.alias(name=leaf, asname=asname)
                groups.setdefault(parent, []).append(renamed)
                changed = True
            else:
                groups.setdefault(self._moved(base), []).append(alias)
        if not changed:
            return None
        out: list[str] = []
        for parent, aliases in groups.items():
            out.extend(self._render(parent, aliases))
        return out

    def _moved(self, dotted: str) -> str:
        for old in sorted(self.modules, key=len, reverse=True):
            if dotted == old or dotted.startswith(old + "."):
                return self.modules[old] + dotted[len(old):]
        return dotted

    @staticmethod
    def _render(module: str, aliases: list[ast.alias]) -> list[str]:
        parts = [a.name + (f" as {a.asname}" if a.asname and a.asname != a.name else "")
                 for a in aliases]
        one = f"from {module} import {', '.join(parts)}"
        if len(one) <= 100:
            return [one]
        return [f"from {module} import (", *(f"    {p}," for p in parts), ")"]

    def renames(self, text: str) -> str:
        if self._renames is None:
            return text
        return self._renames.sub(lambda m: RENAMES[m.group(1)], text)

    def rewrite(self, path: Path) -> str:
        rel = str(path.relative_to(ROOT))
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py" and not _is_facade(path):
            text = self.python(text, rel)
        if not _is_facade(path):
            text = self.dotted(text)
        text = self.paths_in(text)
        return self.renames(text)


def _ruff() -> str | None:
    for candidate in (ROOT / ".venv" / "bin" / "ruff", Path(sys.executable).parent / "ruff"):
        if candidate.exists():
            return str(candidate)
    return shutil.which("ruff")


def sort_imports(paths: list[Path], log: list[str]) -> None:
    """Imports re-sorted in the rewritten Python files (ruff's isort and ``__all__`` order), when
    ruff is there; otherwise say so (``ruff check --select I001,RUF022 --fix`` does it later)."""
    if not paths:
        return
    ruff = _ruff()
    if ruff is None:
        log.append("ruff not found: run `ruff check --select I001,RUF022 --fix` on the rewritten files")
        return
    subprocess.run([ruff, "check", "--quiet", "--select", "I001,RUF022", "--fix", "--exit-zero",
                    *map(str, paths)], cwd=ROOT, check=False, capture_output=True)


def rewrite_files(apply: bool, log: list[str]) -> None:
    rewriter = Rewriter()
    changed_py: list[Path] = []
    for path in _files():
        try:
            before = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        after = rewriter.rewrite(path)
        if after != before:
            changed = sum(a != b for a, b in zip(before.split("\n"), after.split("\n"), strict=False))
            log.append(f"rewrite {path.relative_to(ROOT)} ({changed} lines)")
            if apply:
                path.write_text(after, encoding="utf-8")
                if path.suffix == ".py":
                    changed_py.append(path)
    if apply:
        sort_imports(changed_py, log)


# ----------------------------------------------------------------------------- docs/api.md

def public_modules() -> list[str]:
    """The modules the docs send users into: the root, the facades, and every module a page of
    docs/, the README or an example names (``liveguard.x.y`` or ``from liveguard.x import``)."""
    named: set[str] = {"liveguard", "liveguard.errors", "liveguard.settings", *facade_modules()}
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md",
             *sorted((ROOT / "examples").glob("*.py"))]
    for page in pages:
        if page == API_DOC or not page.exists():
            continue
        for ref in re.findall(r"(?<![\w.])liveguard(?:\.[A-Za-z_]\w*)+", page.read_text(encoding="utf-8")):
            parts = ref.split(".")
            while parts and _module_file(".".join(parts)) is None:
                parts.pop()
            if len(parts) > 1:
                named.add(".".join(parts))
    return sorted(m for m in named if _module_file(m) is not None and not any(
        p.startswith("_") for p in m.split(".")))


def api_doc() -> str:
    out = [
        "# The public API",
        "",
        "What the docs send you into, module by module: each module's `__all__`. Anything else is",
        "private and may change in any release. The package's layers (each imports only those",
        "before it): `liveguard.core` ← `liveguard.readers` ← `liveguard.evaluate` ← `liveguard.live`",
        "← `liveguard.cli`, `liveguard.report`, `liveguard.integrations`. The framework adapters'",
        "public paths are `liveguard.integrations.langgraph`, `liveguard.integrations.langchain`",
        "and `liveguard.integrations.langsmith`.",
        "",
        "This page is written by `scripts/relayout.py`; `tests/test_layers.py` keeps it equal to",
        "the modules' `__all__`.",
        "",
    ]
    for module in public_modules():
        names = module_all(module)
        out.append(f"## `{module}`")
        out.append("")
        out.append(", ".join(f"`{n}`" for n in sorted(names)) if names
                   else "(no names of its own: a package of modules)")
        out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------- unclaimed modules

CLAIMED_TOP = {"__init__.py", "errors.py", "settings.py", "testing.py", "py.typed", "__pycache__",
               "core", "readers", "evaluate", "live", "cli", "report", "integrations"}


def unclaimed() -> list[str]:
    return sorted(p.name for p in PKG.iterdir() if p.name not in CLAIMED_TOP
                  and p.name not in {old.split("/")[0] for old, _ in MOVES})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="print what would change; change nothing")
    args = parser.parse_args(argv)
    apply = not args.check
    log: list[str] = []
    move_files(apply, log)
    write_packages(apply, log)
    if apply:
        write_packages(apply, log)  # the facades read the moved implementation's __all__
    rewrite_files(apply, log)
    if apply or (PKG / "core").is_dir():
        _write(API_DOC, api_doc(), apply, log)
    for line in dict.fromkeys(log):
        print(line)
    left = unclaimed()
    if left:
        print("relayout: no layer claims these top-level entries of backend/liveguard (move them, "
              "or add them to MOVES): " + ", ".join(left))
    print(f"relayout: {len(dict.fromkeys(log))} change(s){'' if apply else ' (--check: none made)'}")
    return 1 if (args.check and log) or left else 0


if __name__ == "__main__":
    sys.exit(main())
