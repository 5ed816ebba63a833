"""The curated surface: ``__all__`` is exactly the public names, and the core stays framework-free."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import types

import liveguard
from liveguard import errors

MAX_PUBLIC_NAMES = 25


def test_all_is_exactly_the_public_names() -> None:
    public = {name for name in vars(liveguard) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(liveguard, name)).__name__ == "module"}
    assert len(set(liveguard.__all__)) == len(liveguard.__all__)
    assert set(liveguard.__all__) == public - modules
    assert liveguard.__all__ == sorted(liveguard.__all__)


def test_the_surface_is_small() -> None:
    assert len(liveguard.__all__) <= MAX_PUBLIC_NAMES, sorted(liveguard.__all__)


def test_every_public_name_imports_in_a_fresh_interpreter() -> None:
    """``from liveguard import <name>`` works for each name of ``__all__`` in a fresh process, and
    each is the object its defining module holds under that name."""
    code = ("import importlib, liveguard\n"
            "for name in liveguard.__all__:\n"
            "    namespace = {}\n"
            "    exec(f'from liveguard import {name}', namespace)\n"
            "    obj = namespace[name]\n"
            "    home = importlib.import_module(obj.__module__)\n"
            "    assert getattr(home, obj.__name__) is obj, name\n"
            "    print(name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == liveguard.__all__


def test_no_submodule_is_shadowed_by_a_name_of_the_package() -> None:
    """``import liveguard.core.fingerprint`` gives the module: no function in ``__init__`` has a
    submodule's name (the package attribute is what ``import a.b as c`` binds)."""
    code = ("import types, liveguard.core.fingerprint as fp\n"
            "import liveguard\n"
            "assert isinstance(fp, types.ModuleType), type(fp)\n"
            "assert liveguard.core.fingerprint is fp\n"
            "print(fp.fingerprint({'a': 1}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"[0-9a-f]{32}", out.stdout.strip())
    submodules = {info.name for info in pkgutil.iter_modules(liveguard.__path__)}
    clashes = sorted(name for name in submodules & set(vars(liveguard))
                     if not isinstance(getattr(liveguard, name), types.ModuleType))
    assert clashes == []
    assert not submodules & set(liveguard.__all__)


def _all_modules() -> list[types.ModuleType]:
    out = [liveguard]
    for info in pkgutil.walk_packages(liveguard.__path__, "liveguard."):
        if info.name.endswith(".__main__"):
            continue  # a __main__ runs the CLI
        out.append(importlib.import_module(info.name))
    return out


PROTOCOL_NAMES = frozenset({"register", "run"})
"""The command modules of :mod:`liveguard.cli` each define these (one protocol, one meaning)."""


def test_no_public_name_means_two_things() -> None:
    """Across every module's ``__all__``, one name is one object (a re-export is the same object)."""
    meaning: dict[str, dict[int, list[str]]] = {}
    for module in _all_modules():
        for name in set(getattr(module, "__all__", ())) - PROTOCOL_NAMES:
            meaning.setdefault(name, {}).setdefault(id(getattr(module, name)), []).append(module.__name__)
    twice = {name: sorted(where for wheres in seen.values() for where in wheres)
             for name, seen in meaning.items() if len(seen) > 1}
    assert twice == {}


def _error_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in _all_modules():
        for name, obj in vars(module).items():
            if (isinstance(obj, type) and issubclass(obj, errors.LiveguardError)
                    and obj is not errors.LiveguardError
                    and not name.startswith("_") and obj.__module__.startswith("liveguard")):
                found[obj.__name__] = obj
    return found


def test_the_errors_module_lists_every_error_class() -> None:
    """Each public subclass of LiveguardError is in errors' docstring tree, under its own parent;
    the classes defined in errors.py are exactly its ``__all__`` classes."""
    doc = errors.__doc__ or ""
    tree = doc.split("::", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"^([ │]*)[├└]── (\w+)", tree, re.M)
    names = [name for _, name in listed]
    classes = _error_classes()
    assert sorted(names) == sorted(classes)
    stack: list[tuple[int, str]] = [(-1, "LiveguardError")]
    for indent, name in listed:  # the drawn parent is the class's base within liveguard
        depth = len(indent)
        while stack[-1][0] >= depth:
            stack.pop()
        assert issubclass(classes[name], classes.get(stack[-1][1], errors.LiveguardError)), name
        stack.append((depth, name))
    defined_here = set(re.findall(r"^class (\w+)\(", inspect.getsource(errors), re.M))
    exported = {name for name in errors.__all__ if isinstance(getattr(errors, name), type)}
    assert defined_here | {"LiveguardError"} == exported


def test_public_errors_name_their_public_path() -> None:
    """A traceback says ``liveguard.NoProgressError``; pickling finds the class there too."""
    import pickle

    from liveguard.core.model import Violation

    errors_in_all = [getattr(liveguard, n) for n in liveguard.__all__ if n.endswith("Error")]
    assert errors_in_all
    assert {cls.__module__ for cls in errors_in_all} == {"liveguard"}
    stop = liveguard.NoProgressError(Violation(code="no_progress_stall", severity="hard", step=3,
                                               node="a", count=2))
    assert f"{type(stop).__module__}.{type(stop).__qualname__}" == "liveguard.NoProgressError"
    read = pickle.loads(pickle.dumps(liveguard.TrajectoryReadError("f.jsonl:3", "bad")))
    assert (type(read), read.source, read.reason) == (liveguard.TrajectoryReadError, "f.jsonl:3", "bad")


def test_error_hierarchy_is_rooted() -> None:
    assert issubclass(errors.NoProgressError, errors.LivenessError)
    assert issubclass(errors.FingerprintError, ValueError)
    assert issubclass(errors.SnapshotError, ValueError)
    for name in ("FingerprintError", "PolicyError", "TrajectoryReadError", "SnapshotError",
                 "LivenessError"):
        assert issubclass(getattr(errors, name), errors.LiveguardError)


def test_public_entry_points_are_typed() -> None:
    """``build_eval_graph`` and ``approval_gate`` annotate every parameter and their return."""
    from liveguard.live.approval import approval_gate

    for func in (liveguard.build_eval_graph, approval_gate):
        tree = ast.parse(inspect.getsource(importlib.import_module(func.__module__)))
        node = next(n for n in ast.walk(tree)
                    if isinstance(n, ast.FunctionDef) and n.name == func.__name__)
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        args += [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
        untyped = [a.arg for a in args if a.annotation is None or ast.unparse(a.annotation) == "Any"]
        assert untyped == [], (func.__name__, untyped)
        assert node.returns is not None, func.__name__
        assert ast.unparse(node.returns) != "Any", func.__name__


def test_core_does_not_import_frameworks() -> None:
    """Importing the core (and running it) must not pull in langgraph, langchain, langsmith, openai."""
    code = (
        "import sys, liveguard, liveguard.cli\n"
        "from liveguard.testing import ping_pong\n"
        "liveguard.check_trajectory(ping_pong())\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langgraph', 'langchain', 'langchain_core', 'langsmith', 'openai'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
