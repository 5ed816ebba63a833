"""Volatile masking on real text (issue 21, item 1): ``_canon.mask`` before and after.

For each corpus, every payload the Monitor digests (tool steps ``(tool, args, result, error)``,
model requests their tool calls, messages their output: captured from a real ``Monitor`` over
each run) is made canonical once with ``_canon.dumps``; then ``_canon.mask(data, kinds)`` for the
default volatile kinds is timed over all of them, with ``time.process_time``, best of
``--rounds`` rounds, for two builds in one process, alternating:

* ``base``: ``backend/liveguard/_canon.c`` of ``--base`` (a git ref, default ``main``), compiled
  here with the interpreter's compiler and ``-O2`` (as ``setup.py`` does) as a module of its own
  name (``_canon_base``) in a scratch directory;
* ``this``: the ``liveguard._canon`` this interpreter imports (this checkout's build).

Both builds' outputs are compared on every payload (a mismatch is an error). Corpora:
``miniswe`` and ``whowhen_hc`` (``benchmarks/detection/data``), and the generated scale corpus
(``benchmarks/scale_corpus.py``, ``--scale-runs`` runs; 0 leaves it out).

With ``--isas``, this build is also timed with each version of its block scan this CPU runs
(``_canon._mask_isas()``: AVX-512BW, AVX2, SSE2, the portable one), next to the call alone.
With ``--score N``, the whole ``score --no-judges`` path (``iter_scored``, ``--jobs 1``, in a
child process each, ``base`` and ``this`` alternating, best of N, process time) on each
detection corpus, the child's ``liveguard._canon`` being each build: what the two builds change
end to end (the Monitor runs as this interpreter imports it: pure Python in a checkout without
the mypyc build).

Usage: ``PYTHONPATH=backend python benchmarks/mask_speed.py [--rounds 7] [--base main]
[--scale-runs 300] [--corpus miniswe --corpus whowhen_hc] [--isas] [--score 3]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
DATA = HERE / "detection" / "data"
ROOT = HERE.parent


def build_base(ref: str, out: Path) -> ModuleType:
    """``_canon.c`` of git ``ref`` compiled as the module ``_canon_base`` in ``out``."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:backend/liveguard/_canon.c"],
        check=True, capture_output=True,
    ).stdout
    c_file = out / "_canon_base.c"
    c_file.write_bytes(source)
    so = out / ("_canon_base" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    cflags = (sysconfig.get_config_var("CFLAGS") or "").split()
    subprocess.run(
        [*cc, *cflags, "-O2", "-fPIC", "-shared", f"-I{sysconfig.get_paths()['include']}",
         "-DPyInit__canon=PyInit__canon_base", str(c_file), "-o", str(so)],
        check=True,
    )
    spec = importlib.util.spec_from_file_location("_canon_base", so)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def payloads(runs: Iterable[Any]) -> list[bytes]:
    """The canonical bytes (unmasked) of every payload a Monitor digests over ``runs``."""
    from liveguard import _canon
    from liveguard.fingerprint import MAX_DEPTH, MESSAGE_VOLATILE_KEYS, _convert, _maybe_json
    from liveguard.model import Trajectory
    from liveguard.monitor import Monitor

    out: list[bytes] = []
    for raw in runs:
        run = Trajectory.model_validate(raw)
        monitor = Monitor()
        real = monitor._canonical
        assert real is not None, "the C accelerator is not built"
        ignore = monitor.policy.ignore_keys

        def record(payload: Any, real: Callable[[Any], bytes] = real, ignore: Any = ignore) -> bytes:
            out.append(_canon.dumps(payload, ignore, MESSAGE_VOLATILE_KEYS, _convert, _maybe_json, MAX_DEPTH))
            return real(payload)

        monitor._canonical = record
        monitor.observe_all(run.steps)
    return out


def _lines(path: Path) -> Iterable[Any]:
    with path.open("rb") as f:
        for line in f:
            yield orjson.loads(line)


def _time(mask: Callable[[bytes, bytes], bytes], data: list[bytes], kinds: bytes) -> float:
    start = time.process_time()
    for item in data:
        mask(item, kinds)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--base", default="main", help="git ref of the baseline _canon.c")
    parser.add_argument("--corpus", action="append", help="a name under benchmarks/detection/data")
    parser.add_argument("--scale-runs", type=int, default=300)
    parser.add_argument(
        "--isas", action="store_true", help="also time this build with each block-scan version"
    )
    parser.add_argument("--score", type=int, default=0, help="also time score --no-judges, best of N")
    args = parser.parse_args(argv)

    from liveguard import _canon
    from liveguard.fingerprint import DEFAULT_VOLATILE, Fingerprinter

    kinds = Fingerprinter(volatile=DEFAULT_VOLATILE)._mask.native_kinds  # type: ignore[union-attr]
    assert kinds is not None
    corpora: list[tuple[str, list[bytes]]] = []
    for name in args.corpus or ["miniswe", "whowhen_hc"]:
        corpora.append((name, payloads(_lines(DATA / f"{name}.jsonl"))))
    if args.scale_runs:
        sys.path.insert(0, str(HERE))
        from scale_corpus import iter_runs

        corpora.append((f"scale({args.scale_runs} runs)", payloads(iter_runs(args.scale_runs))))

    with tempfile.TemporaryDirectory(prefix="mask_base_") as tmp:
        base = build_base(args.base, Path(tmp))
        print(f"base: _canon.c of {args.base}; this: {_canon.__file__}; kinds {list(kinds)}; "
              f"best of {args.rounds} rounds, process time, alternating")
        print(f"{'corpus':<20} {'payloads':>8} {'MB':>6} {'masked':>7} {'base ms':>8} {'this ms':>8} "
              f"{'ratio':>6}")
        for name, data in corpora:
            changed = 0
            for item in data:
                got = _canon.mask(item, kinds)
                if got != base.mask(item, kinds):
                    raise SystemExit(f"{name}: the builds disagree on a payload of {len(item)} bytes")
                changed += got != item
            best = {"base": float("inf"), "this": float("inf")}
            for r in range(args.rounds):
                order = [("base", base.mask), ("this", _canon.mask)]
                for label, fn in order if r % 2 == 0 else order[::-1]:
                    best[label] = min(best[label], _time(fn, data, kinds))
            size = sum(map(len, data)) / 1e6
            print(f"{name:<20} {len(data):>8} {size:>6.1f} {changed:>7} {best['base'] * 1e3:>8.1f} "
                  f"{best['this'] * 1e3:>8.1f} {best['base'] / best['this']:>5.2f}x")
        if args.isas:
            _isas(corpora, kinds, args.rounds)
        if args.score:
            so = next(Path(tmp).glob("_canon_base*.so"))
            _score(args.corpus or ["miniswe", "whowhen_hc"], so, args.score)
    return 0


_SCORE_CHILD = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location(sys.argv[1].rsplit("/", 1)[-1].split(".")[0], sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules["liveguard._canon"] = module  # both builds loaded the same way
from liveguard import fingerprint
from liveguard.readers.inputs import iter_records
from liveguard.scoring import iter_scored
from liveguard.settings import Settings
assert fingerprint._native is module
settings = Settings.from_env({})
start = time.process_time()
for row in iter_scored(iter_records([sys.argv[2]]), judges=False, jobs=1, verdicts=False, settings=settings):
    row.json_bytes()
print(time.process_time() - start)
"""


def _score(names: list[str], base_so: Path, rounds: int) -> None:
    """``score --no-judges`` with each build, in alternating child processes (ms, best of ``rounds``)."""
    from liveguard import _canon

    this_so = _canon.__file__
    print(f"score --no-judges (iter_scored, --jobs 1), child processes, best of {rounds} (ms)")
    print(f"{'corpus':<20} {'base':>9} {'this':>9} {'saved':>9}")
    for name in names:
        best = {"base": float("inf"), "this": float("inf")}
        for r in range(rounds):
            order = [("base", str(base_so)), ("this", str(this_so))]
            for label, so in order if r % 2 == 0 else order[::-1]:
                out = subprocess.run(
                    [sys.executable, "-c", _SCORE_CHILD, so, str(DATA / f"{name}.jsonl")],
                    check=True, capture_output=True, text=True,
                )
                best[label] = min(best[label], float(out.stdout.strip().splitlines()[-1]))
        print(f"{name:<20} {best['base'] * 1e3:>9.1f} {best['this'] * 1e3:>9.1f} "
              f"{(best['base'] - best['this']) * 1e3:>9.1f}")


def _isas(corpora: list[tuple[str, list[bytes]]], kinds: bytes, rounds: int) -> None:
    """This build with each version of its block scan (``_canon._mask_isas``), and the call alone
    (``mask`` with no kinds returns its input at once): ms, best of ``rounds``."""
    from liveguard import _canon

    isas = _canon._mask_isas()
    print("this build by block-scan version (ms); 'call': mask(data, b'') (the call alone)")
    print(f"{'corpus':<20} " + " ".join(f"{isa:>9}" for isa in (*isas, "call")))
    used = _canon._mask_isa()
    try:
        for name, data in corpora:
            best = dict.fromkeys((*isas, "call"), float("inf"))
            for _ in range(rounds):
                for isa in isas:
                    _canon._mask_isa(isa)
                    best[isa] = min(best[isa], _time(_canon.mask, data, kinds))
                best["call"] = min(best["call"], _time(_canon.mask, data, b""))
            print(f"{name:<20} " + " ".join(f"{best[k] * 1e3:>9.1f}" for k in (*isas, "call")))
    finally:
        _canon._mask_isa(used)


if __name__ == "__main__":
    raise SystemExit(main())
