"""The README stays true: its example runs and stops where it says, its commands exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from liveguard import NoProgressError

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_quick_example_raises_at_the_third_identical_call() -> None:
    example = re.findall(r"```python\n(.*?)```", README, flags=re.S)[0]  # the quick example
    with pytest.raises(NoProgressError) as info:
        exec(compile(example, "README.md", "exec"), {})
    assert (info.value.violation.code, info.value.violation.step) == ("tool_no_progress", 2)


def test_documented_make_targets_exist() -> None:
    """make itself resolves each documented target (``-n``: printed, nothing run)."""
    targets = re.findall(r"^make (\w+)", README, flags=re.M)
    assert targets
    for target in [*targets, "no-such-target"]:
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, check=False)
        assert (done.returncode == 0) is (target != "no-such-target"), (target, done.stderr)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make install" in ci
    assert "make test" in ci


def test_readme_never_derives_over_a_checked_in_allow_set() -> None:
    """`paths derive -o expected_paths/...` would drop limits and description and break make test."""
    for line in re.findall(r"^liveguard paths derive .*$", README, flags=re.M):
        assert not re.search(r"(-o|--output)\s+expected_paths/", line), line
    assert "--check expected_paths/" in README


def test_ci_runs_the_readme_commands_and_install_compiles_nothing(tmp_path: Path) -> None:
    """Run .ci/run with a recording ``make`` first on PATH: it asks for exactly the README's
    set-up and test commands, and installs nothing itself; then ask make what ``install`` would
    run (``make -n``): the browser and no compiler (no setup.py, no build_ext, no mypyc)."""
    stub = tmp_path / "bin"
    stub.mkdir()
    log = tmp_path / "make.log"
    (stub / "make").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (stub / "make").chmod(0o755)
    env = {"PATH": f"{stub}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert log.read_text().split("\n")[:-1] == ["install", "test", "test-latest", "test-newcomer"]
    install = subprocess.run(["make", "-n", "install"], cwd=ROOT, capture_output=True, text=True,
                             check=False, timeout=60)
    assert install.returncode == 0, install.stderr
    assert "apt-get update" in install.stdout
    assert "apt-get install" in install.stdout
    assert not any(word in install.stdout for word in ("setup.py", "build_ext", "mypyc", "LIVEGUARD_MYPYC"))
    assert not (ROOT / "setup.py").exists()
    assert not list((ROOT / "backend").rglob("*.c"))


def test_openevals_evaluator_example_runs() -> None:
    """The evaluators' example: a message list in openevals' convention, looping on one query."""
    [example] = [b for b in re.findall(r"```python\n(.*?)```", README, flags=re.S)
                 if "create_liveness_evaluator" in b]
    scope: dict[str, object] = {}
    exec(compile(example, "README.md", "exec"), scope)
    assert scope["result"]["score"] == 0  # type: ignore[index]
