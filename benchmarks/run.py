"""liveguard's cost benchmark: ``make bench`` (``.venv/bin/python benchmarks/run.py``).

Measures each pair side by side in one process, on the corpus of ``corpus.py``:

1. **Digest**: ``liveguard.core.fingerprint`` against the reference recipe
   ``hashlib.sha256(json.dumps(payload, sort_keys=True).encode())``, per payload
   class. Target: at least 3x faster (ratio = reference time / our time).
2. **Hash choice**: ``blake2b(digest_size=16)`` against ``xxh3_128`` (and sha256) over
   the canonical bytes liveguard produces for the same payloads.
3. **Monitor**: the full ``Monitor`` (every rule) against a reference no-progress
   guard (the digest above plus ``deque.count`` over a window of 6), per step.
   Target: no slower per step than the reference's single rule (ratio >= 1).
4. **Scale**: steps/second over a 100,000-step run, and the Monitor's memory
   (tracemalloc) after 1k and 100k steps, to show it is bounded.

Timings are interleaved: each repeat runs every contender once, in an order that
rotates between repeats, with the garbage collector paused during a timed pass (as
``timeit`` does); the figure kept is the median over repeats. It is a report, never
a test: it exits 0 whether targets are met or missed.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from itertools import cycle, islice
from typing import Any

import xxhash

from corpus import CLASSES, Corpus, build_corpus
from liveguard import Monitor, Policy, Step
from liveguard.core.fingerprint import Fingerprinter, canonical_bytes, fingerprint

FP_MODULE = importlib.import_module("liveguard.core.fingerprint")
DIGEST_TARGET = 3.0
MONITOR_TARGET = 1.0
SCALE_STEPS = 100_000
SMALL_STEPS = 1_000
SCALE_ROUNDS = 3

Digest = Callable[[Any], object]


# -- the reference recipes ------------------------------------------------------------------
def reference_digest(payload: Any) -> str:
    """The issue's reference recipe (hex digest, like ours)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def reference_guard(steps: Iterable[Step]) -> int:
    """The reference no-progress guard: one digest per step, ``deque.count`` over 6."""
    window: deque[str] = deque(maxlen=6)
    hits = 0
    for s in steps:
        d = hashlib.sha256(
            json.dumps(
                {
                    "node": s.node,
                    "tool": s.tool,
                    "args": s.args,
                    "result": s.result,
                    "summary": s.summary,
                    "output": s.output,
                },
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()
        window.append(d)
        if window.count(d) >= 3:
            hits += 1
    return hits


def monitor_run(policy: Policy, steps: Iterable[Step]) -> int:
    """A fresh Monitor observing every step, then finishing; returns the violation count."""
    monitor = Monitor(policy)
    hits = 0
    for s in steps:
        found = monitor.observe(s)
        if found:
            hits += len(found)
    return hits + len(monitor.finish())


# -- timing helpers -------------------------------------------------------------------------
def _timed(fn: Callable[[], object]) -> int:
    """Nanoseconds for one call of ``fn``, with the garbage collector paused."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        fn()
        return time.perf_counter_ns() - start
    finally:
        if enabled:
            gc.enable()


def interleaved(contenders: Mapping[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median ns per contender; each repeat runs all of them, in a rotating order."""
    names = list(contenders)
    for name in names:  # warm-up: lazy imports, caches
        contenders[name]()
    samples: dict[str, list[int]] = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            samples[name].append(_timed(contenders[name]))
    return {n: statistics.median(v) for n, v in samples.items()}


def each(fn: Digest, items: Sequence[Any]) -> Callable[[], None]:
    """A pass of ``fn`` over every item."""

    def run() -> None:
        for item in items:
            fn(item)

    return run


# -- environment ----------------------------------------------------------------------------
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, Any]:
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "command": "make bench  (.venv/bin/python benchmarks/run.py)",
        "nproc": len(affinity(0)) if affinity else os.cpu_count(),
        "cpu": cpu_model(),
        "platform": platform.platform(),
        "loadavg_1m_at_start": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": {d: version(d) for d in ("liveguard", "orjson", "xxhash", "google-re2", "pydantic")},
    }


# -- corpus checks --------------------------------------------------------------------------
def has_non_nfc(obj: Any) -> bool:
    """True when some string (value or key) of ``obj`` is not in NFC."""
    if isinstance(obj, str):
        return not unicodedata.is_normalized("NFC", obj)
    if isinstance(obj, Mapping):
        return any(has_non_nfc(k) or has_non_nfc(v) for k, v in obj.items())
    if isinstance(obj, list | tuple):
        return any(has_non_nfc(v) for v in obj)
    return False


def equivalences() -> tuple[int, int, int]:
    """Pairs that mean the same (section 1): how many each digest equalises."""
    call = {"id": "call_A1", "type": "function"}
    pairs: list[tuple[Any, Any]] = [
        ({"query": "SELECT 1", "limit": 10}, {"limit": 10, "query": "SELECT 1"}),  # key order
        (
            {**call, "function": {"name": "q", "arguments": '{"query": "x", "limit": 10}'}},
            {**call, "function": {"name": "q", "arguments": '{"limit":10,"query":"x"}'}},
        ),  # JSON whitespace and key order inside arguments
        ({"customer": "Zoë Müller"}, {"customer": "Zoe\u0308 Mu\u0308ller"}),  # NFC vs NFD
        ({"limit": 10, "total": 129}, {"limit": 10.0, "total": 129.0}),  # 1 == 1.0
        ({"discount": 0.0}, {"discount": -0.0}),
        (
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
            {"role": "tool", "tool_call_id": "call_2", "content": "[]"},
        ),  # volatile ids
        ({"rows": 3, "request_id": "a1", "duration_ms": 4}, {"rows": 3, "request_id": "b2"}),
    ]
    ours = sum(fingerprint(a) == fingerprint(b) for a, b in pairs)
    ref = sum(reference_digest(a) == reference_digest(b) for a, b in pairs)
    return len(pairs), ours, ref


# -- benchmarks -----------------------------------------------------------------------------
def digest_bench(corpus: Corpus, repeats: int) -> dict[str, Any]:
    """Median ns per pass for each class, and for payloads with / without non-NFC text."""
    def contenders(items: Sequence[Any]) -> dict[str, Callable[[], None]]:
        return {
            "ref": each(reference_digest, items),
            "ours": each(fingerprint, items),
            "canon": each(canonical_bytes, items),
        }

    def measure(items: Sequence[Any]) -> dict[str, float]:
        return interleaved(contenders(items), repeats) | {"n": len(items)}

    classes = {cls: measure(corpus.payloads[cls]) for cls in CLASSES}
    total = {k: sum(r[k] for r in classes.values()) for k in next(iter(classes.values()))}
    everything = [p for cls in CLASSES for p in corpus.payloads[cls]]
    split = {
        "NFC text only": measure([p for p in everything if not has_non_nfc(p)]),
        "some NFD text": measure([p for p in everything if has_non_nfc(p)]),
    }
    return {"classes": classes, "total": total, "split": split}


def fallback_bench(corpus: Corpus, repeats: int) -> dict[str, Any]:
    """The pure-Python path without the extension: the walker (the definition) vs the fast path."""
    fp = Fingerprinter()
    everything = [p for cls in CLASSES for p in corpus.payloads[cls]]
    identical = sum(fp.python_bytes(p) == fp.reference_bytes(p) for p in everything)
    times = interleaved(
        {"walker": each(fp.reference_bytes, everything), "fast": each(fp.python_bytes, everything)},
        repeats,
    )
    return {"identical": identical, "n": len(everything), **times}


def print_fallback(f: dict[str, Any]) -> None:
    n = f["n"]
    print(
        f"\npure-Python canonical bytes (no extension), all {n} payloads, us/payload:"
        f"\n  walker {_us(f['walker'], n):.2f}   pre-pass + orjson {_us(f['fast'], n):.2f}"
        f"   speed-up {f['walker'] / f['fast']:.2f}x   byte-identical {f['identical']}/{n}"
    )


def hash_bench(corpus: Corpus, repeats: int) -> dict[str, float]:
    """ns per blob for each hash over liveguard's canonical bytes of the corpus."""
    blobs = [canonical_bytes(p) for cls in CLASSES for p in corpus.payloads[cls]]
    med = interleaved(
        {
            "sha256": each(lambda b: hashlib.sha256(b).hexdigest(), blobs),
            "blake2b-128": each(lambda b: hashlib.blake2b(b, digest_size=16).hexdigest(), blobs),
            "xxh3_128": each(lambda b: xxhash.xxh3_128(b).hexdigest(), blobs),
            "xxh3_128_hexdigest": each(xxhash.xxh3_128_hexdigest, blobs),
        },
        repeats,
    )
    return {k: v / len(blobs) for k, v in med.items()} | {
        "n": len(blobs),
        "mean_bytes": sum(map(len, blobs)) / len(blobs),
    }


def monitor_bench(steps: list[Step], repeats: int) -> dict[str, Any]:
    """Median ns per step: reference guard, Monitor(tool_agent), Monitor(workflow)."""
    tool_agent, workflow = Policy.tool_agent(), Policy.workflow()
    hits = {
        "ref": reference_guard(steps),
        "tool_agent": monitor_run(tool_agent, steps),
        "workflow": monitor_run(workflow, steps),
    }
    med = interleaved(
        {
            "ref": lambda: reference_guard(steps),
            "tool_agent": lambda: monitor_run(tool_agent, steps),
            "workflow": lambda: monitor_run(workflow, steps),
        },
        repeats,
    )
    return {"per_step_ns": {k: v / len(steps) for k, v in med.items()}, "hits": hits}


def scale_bench(steps: list[Step]) -> dict[str, Any]:
    """Throughput over SCALE_STEPS steps, and tracemalloc after SMALL_STEPS vs SCALE_STEPS."""
    policy = Policy.tool_agent()

    def stream(n: int) -> Iterable[Step]:
        return islice(cycle(steps), n)

    runs: dict[str, Callable[[], object]] = {
        "tool_agent": lambda: monitor_run(policy, stream(SCALE_STEPS)),
        "ref": lambda: reference_guard(stream(SCALE_STEPS)),
    }
    times: dict[str, list[int]] = {name: [] for name in runs}
    for r in range(SCALE_ROUNDS):  # alternate the order; gc left on, as a long run would be
        for name in list(runs)[:: 1 if r % 2 == 0 else -1]:
            start = time.perf_counter_ns()
            runs[name]()
            times[name].append(time.perf_counter_ns() - start)
    out: dict[str, Any] = {"steps": SCALE_STEPS, "rounds": SCALE_ROUNDS}
    for name, ns in times.items():
        out[f"{name}_steps_per_s"] = SCALE_STEPS / (statistics.median(ns) / 1e9)

    memory: dict[int, dict[str, int]] = {}
    for n in (SMALL_STEPS, SCALE_STEPS):
        gc.collect()
        tracemalloc.start()
        monitor = Monitor(policy)
        for s in stream(n):
            monitor.observe(s)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        memory[n] = {"retained": current, "peak": peak, "seen": monitor.steps_seen}
        del monitor
    out["memory"] = memory
    return out


# -- report ---------------------------------------------------------------------------------
def _us(ns: float, n: float) -> float:
    return ns / n / 1e3


def _kib(n: float) -> str:
    return f"{n / 1024:,.1f} KiB"


def print_digest(corpus: Corpus, d: dict[str, Any], repeats: int, label: str) -> None:
    print(f"\n[1] per-message digest, µs per payload, median of {repeats} interleaved repeats")
    print(f"    ({label}; canon = canonical_bytes only, i.e. without hashing)")
    head = f"  {'class':<22}{'n':>5}{'JSON B':>8}{'ref':>8}{'ours':>8}{'ref/ours':>10}{'canon':>8}"
    print(head)
    rows = [(cls, d["classes"][cls], f"{corpus.mean_json_bytes(cls):.0f}") for cls in CLASSES]
    rows += [("TOTAL", d["total"], "")]
    rows += [(name, r, "") for name, r in d["split"].items()]
    for i, (name, r, size) in enumerate(rows):
        if i in (len(CLASSES), len(CLASSES) + 1):
            print("  " + "-" * (len(head) - 2))
        n = r["n"]
        line = (
            f"  {name:<22}{int(n):>5}{size:>8}{_us(r['ref'], n):>8.2f}{_us(r['ours'], n):>8.2f}"
            f"{r['ref'] / r['ours']:>9.2f}x{_us(r['canon'], n):>8.2f}"
        )
        print(line)


def print_hash(h: dict[str, float], ours_per_payload: float) -> None:
    print(
        f"\n[2] hash over liveguard canonical bytes: {h['n']:.0f} blobs, "
        f"mean {h['mean_bytes']:.0f} B; ns per blob"
    )
    for name in ("sha256", "blake2b-128", "xxh3_128", "xxh3_128_hexdigest"):
        print(
            f"  {name:<20}{h[name]:>7.0f} ns {h['blake2b-128'] / h[name]:>7.2f}x vs blake2b"
            f"{h[name] / ours_per_payload:>8.1%} of one fingerprint()"
        )


def print_monitor(m: dict[str, Any], n_steps: int) -> None:
    ps = m["per_step_ns"]
    print(f"\n[3] per-step cost on {n_steps} steps, fresh Monitor per pass")
    print(f"  {'contender':<36}{'µs/step':>9}{'ref/ours':>10}{'violations':>12}")
    for title, key in (
        ("reference guard (sha256 + count/6)", "ref"),
        ("Monitor(Policy.tool_agent())", "tool_agent"),
        ("Monitor(Policy.workflow())", "workflow"),
    ):
        print(f"  {title:<36}{ps[key] / 1e3:>9.2f}{ps['ref'] / ps[key]:>9.2f}x{m['hits'][key]:>12}")


def print_scale(s: dict[str, Any]) -> None:
    print(
        f"\n[4] scale: {SCALE_STEPS:,} steps (the corpus run, repeated), Policy.tool_agent(), "
        f"median of {SCALE_ROUNDS} runs"
    )
    print(
        f"  Monitor {s['tool_agent_steps_per_s']:,.0f} steps/s; "
        f"reference guard {s['ref_steps_per_s']:,.0f} steps/s"
    )
    for n, v in s["memory"].items():
        print(
            f"  tracemalloc after {n:>7,} steps: retained {_kib(v['retained']):>10}, "
            f"peak {_kib(v['peak']):>10}"
        )


def live_section(repeats: int) -> int:
    """The live guards' cost per step and their thread record (``benchmarks/live.py``)."""
    from live import live_bench, print_live

    print_live(live_bench(repeats))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="liveguard cost benchmark (a report).")
    parser.add_argument("--repeats", type=int, default=15, help="timed repeats per contender")
    parser.add_argument("--episodes", type=int, default=120, help="corpus size (episodes)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON here")
    parser.add_argument("--live", action="store_true", help="only the live guards' section")
    args = parser.parse_args(argv)
    if args.live:
        return live_section(args.repeats)
    began = time.perf_counter()

    env = environment()
    label = "pure Python (orjson, xxhash, google-re2)"
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
    print("liveguard benchmark")
    print(
        f"  machine : {env['nproc']} CPU(s), {env['cpu']}; {env['platform']}; "
        f"load {env['loadavg_1m_at_start']}"
    )
    print(f"  python  : {env['python']}; {packages}")
    print(f"  digest  : {label}")

    corpus = build_corpus(episodes=args.episodes)
    kinds = Counter(
        "tool" if s.tool else "model" if s.output is not None else "summary" for s in corpus.steps
    )
    print(
        f"\ncorpus  : seed {corpus.seed}, {corpus.episodes} episodes, {corpus.size} payloads, "
        f"{len(corpus.steps)} steps ({', '.join(f'{v} {k}' for k, v in kinds.items())})"
    )
    n_pairs, ours_eq, ref_eq = equivalences()
    print(
        f"checks  : section-1 equivalent pairs equalised: liveguard {ours_eq}/{n_pairs}, "
        f"reference {ref_eq}/{n_pairs}"
    )
    d = digest_bench(corpus, args.repeats)
    print_digest(corpus, d, args.repeats, label)
    fb = fallback_bench(corpus, args.repeats)
    print_fallback(fb)
    h = hash_bench(corpus, args.repeats)
    print_hash(h, d["total"]["ours"] / d["total"]["n"])
    m = monitor_bench(corpus.steps, max(3, args.repeats // 2))
    print_monitor(m, len(corpus.steps))
    s = scale_bench(corpus.steps)
    print_scale(s)

    ps, mem = m["per_step_ns"], s["memory"]
    digest_ratio = d["total"]["ref"] / d["total"]["ours"]
    checks = (
        (f"digest >= {DIGEST_TARGET:g}x reference", digest_ratio >= DIGEST_TARGET,
         f"{digest_ratio:.2f}x"),
        ("Monitor(tool_agent) per step <= reference guard",
         ps["ref"] / ps["tool_agent"] >= MONITOR_TARGET, f"{ps['ref'] / ps['tool_agent']:.2f}x"),
        ("Monitor(workflow) per step <= reference guard",
         ps["ref"] / ps["workflow"] >= MONITOR_TARGET, f"{ps['ref'] / ps['workflow']:.2f}x"),
        ("Monitor memory bounded (100k vs 1k steps)",
         mem[SCALE_STEPS]["retained"] <= 2 * mem[SMALL_STEPS]["retained"] + 64 * 1024,
         f"{_kib(mem[SCALE_STEPS]['retained'])} vs {_kib(mem[SMALL_STEPS]['retained'])}"),
    )  # fmt: skip
    print(f"\nsummary ({label})")
    for title, ok, figure in checks:
        print(f"  {'PASS' if ok else 'MISS'}  {title:<50} {figure}")
    live_section(max(5, args.repeats // 3))
    elapsed = time.perf_counter() - began
    print(f"\nelapsed {elapsed:.1f} s")

    if args.json:
        figures = {
            "environment": env,
            "corpus": {
                "seed": corpus.seed,
                "episodes": corpus.episodes,
                "payloads": {cls: len(corpus.payloads[cls]) for cls in CLASSES},
                "steps": dict(kinds),
            },
            "digest_ns_per_pass": d,
            "pure_fallback_ns_per_pass": fb,
            "hash_ns_per_blob": h,
            "monitor": m,
            "scale": s,
            "checks": {title: ok for title, ok, _ in checks},
            "elapsed_s": elapsed,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2, default=str)
    importlib.import_module("semantic").main([])  # the semantic layer's report (benchmarks/semantic.py)
    return 0


if __name__ == "__main__":
    sys.exit(main())
