"""The compiled Monitor (mypyc) is honest: CI tests it compiled, ``make test-pure`` tests the
same sources uncompiled, and a compiled module older than its source is reported."""

from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path

import pytest

import liveguard
from liveguard import _compiled


def test_every_listed_module_exists_and_is_imported_by_liveguard() -> None:
    assert liveguard.Monitor is not None
    for name in _compiled.COMPILED:
        importlib.import_module(name)
    assert set(_compiled.compiled_modules()) == set(_compiled.COMPILED)


@pytest.mark.skipif(os.environ.get("LIVEGUARD_EXPECT_PURE") != "1", reason="only under make test-pure")
def test_make_test_pure_runs_the_uncompiled_sources() -> None:
    """``make test-pure`` really tests the Python sources (nothing compiled was imported)."""
    native = {name: compiled for name, compiled in _compiled.compiled_modules().items() if compiled}
    assert native == {}
    assert all(str(sys.modules[n].__file__).endswith(".py") for n in _compiled.COMPILED)


@pytest.mark.skipif(os.environ.get("CI") != "true" or os.environ.get("LIVEGUARD_EXPECT_PURE") == "1",
                    reason="CI only: a local machine may lack a C compiler")
def test_ci_runs_the_compiled_modules() -> None:
    """Under CI=true ``make install`` must have compiled every listed module (a failed build
    fails ``make install``; this catches a build that silently left them out)."""
    pure = [name for name, compiled in _compiled.compiled_modules().items() if not compiled]
    assert pure == []


def test_a_compiled_module_older_than_its_source_is_stale(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The import-time warning's check, on a stand-in module: extension older than source."""
    ext = tmp_path / "monitor.cpython-311-x86_64-linux-gnu.so"
    src = tmp_path / "monitor.py"
    ext.write_bytes(b"")
    src.write_text("")
    os.utime(ext, (1_000, 1_000))
    os.utime(src, (2_000, 2_000))
    fake = types.ModuleType("liveguard.monitor")
    fake.__file__ = str(ext)
    monkeypatch.setitem(sys.modules, "liveguard.monitor", fake)
    assert "liveguard.monitor" in _compiled.stale_modules()
    os.utime(ext, (3_000, 3_000))  # rebuilt after the edit: not stale
    assert "liveguard.monitor" not in _compiled.stale_modules()
