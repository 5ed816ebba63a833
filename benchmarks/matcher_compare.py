"""The multi-pattern matchers compared on the real corpora (docs/matcher.md): which one liveguard uses.

Two jobs, on every payload and step of ``benchmarks/detection/data/{miniswe,whowhen_hc}.jsonl``
(each corpus read by a real Monitor, so the payloads are exactly the ones it digests):

* **volatile masks**: the canonical bytes of every payload the Monitor digests, masked by the
  default volatile patterns (``liveguard.core.fingerprint.VOLATILE_PATTERNS``). The definition is each
  pattern's ``re.sub`` in turn; a matcher is a pre-filter telling which patterns may match (then
  only those run). Every candidate's output is checked byte for byte against the definition.
* **word presence**: which of the step-text rule's gate words (``injection._JSON_WORDS``, 175
  words, lower-cased text) each field holds (the field's JSON: what the rule scans first).
  Every candidate's answer is checked against ``word in text`` for each word.

Candidates: ``re`` alone (the definition, and the cheap per-pattern guards liveguard used
before), google-re2 (``re2.Set``), hyperscan, pyahocorasick and ahocorasick-rs, each skipped when
not installed. A regex matcher (RE2, hyperscan) takes the patterns themselves (lookarounds
dropped, ``\\s`` widened: a superset, see ``liveguard.core._matcher.prefilter_source``); an
Aho-Corasick matcher takes literals, so for the masks it gets the literal part of each pattern
(``ago``, the ``elapsed`` words, ``d:dd`` times, ``id`` and its keys) and the rest stays cheap
Python tests (a ``-`` count for uuids, a 32-hex-digit run).

Times are process CPU, best of ``--rounds`` rounds, the candidates interleaved in one process.

Usage: ``PYTHONPATH=backend python benchmarks/matcher_compare.py [--rounds 5] [--corpus miniswe ...]``
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
DATA = HERE / "detection" / "data"


def capture(path: Path) -> tuple[list[bytes], list[bytes]]:
    """(every payload's canonical bytes, unmasked; every step field's text as the rule scans it)."""
    from liveguard.core._monitor import Monitor
    from liveguard.core.fingerprint import Fingerprinter
    from liveguard.core.model import Trajectory
    from liveguard.core.rules import injection

    payloads: list[bytes] = []
    fields: list[bytes] = []
    plain = Fingerprinter()

    def record(payload: Any) -> bytes:
        payloads.append(plain.python_bytes(payload))
        return b"\0" * 16

    with path.open("rb") as f:
        for line in f:
            run = Trajectory.model_validate(orjson.loads(line))
            monitor = Monitor()
            monitor._digest = record  # type: ignore[method-assign]
            for step in run.steps:
                monitor._observation(step, 0)
                for value in injection._fields(step):
                    if value is None:
                        continue
                    raw = (value[: injection.MAX_SCAN_CHARS].encode("utf-8", "replace")
                           if isinstance(value, str) else orjson.dumps(value))
                    fields.append(raw.lower())
    return payloads, fields


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# -- volatile masks ---------------------------------------------------------------------------
def mask_candidates() -> dict[str, Callable[[bytes], bytes]]:  # noqa: PLR0915 - one block per matcher
    from liveguard.core._matcher import prefilter_source
    from liveguard.core.fingerprint import DEFAULT_VOLATILE, VOLATILE_PATTERNS

    sources = [VOLATILE_PATTERNS[name] for name in DEFAULT_VOLATILE]
    patterns = [re.compile(source.encode()) for source in sources]

    def definition(data: bytes) -> bytes:
        for pattern in patterns:
            data = pattern.sub(b"\x00~", data)
        return data

    def prefiltered(may: Callable[[bytes], set[int]]) -> Callable[[bytes], bytes]:
        def mask(data: bytes) -> bytes:
            ids = may(data)
            for n, pattern in enumerate(patterns):
                if n in ids:
                    masked = pattern.sub(b"\x00~", data)
                    if masked != data:  # a mask can make a later pattern match: ask again
                        data = masked
                        ids = may(data)
            return data
        return mask

    out: dict[str, Callable[[bytes], bytes]] = {"re (definition)": definition}

    re2 = _optional("re2")
    if re2 is not None:
        options = re2.Options()
        options.log_errors = False
        options.encoding = re2.Options.Encoding.LATIN1
        rset = re2.Set.SearchSet(options)
        for source in sources:
            rset.Add(prefilter_source(source))
        rset.Compile()
        out["google-re2 (Set)"] = prefiltered(lambda data: set(rset.Match(data) or ()))

    hyperscan = _optional("hyperscan")
    if hyperscan is not None:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY
        db.compile(expressions=[s.encode() for s in sources], ids=list(range(len(sources))),
                   elements=len(sources), flags=[flags] * len(sources))

        def hs_ids(data: bytes) -> set[int]:
            found: set[int] = set()
            db.scan(data, match_event_handler=lambda i, *_: found.add(i))
            return found

        out["hyperscan"] = prefiltered(hs_ids)

    # Aho-Corasick: literals only; what no literal captures stays a Python test
    digits = "0123456789"
    groups = {
        "clock": [f"{a}:{b}{c}" for a in digits for b in digits for c in digits],
        "ago": ["ago"],
        "elapsed": ["took", "elapsed", "duration", "latency", "runtime", "time taken", "wall time",
                    *(f"in{w}{d}" for w in " \t\n\r\x0b\x0c" for d in digits)],
        "id": ["id"],
        "key": ["req", "trace", "span", "correlation", "session", "run_id", "run id", "run-id", "runid"],
    }
    words = [w for ws in groups.values() for w in ws]
    group_of = [g for g, ws in groups.items() for _ in ws]
    hex_map = bytes(0x68 if chr(c) in "0123456789abcdefABCDEF" else 0x20 for c in range(256))

    def needed(present: set[str], data: bytes) -> set[int]:
        ids = set()
        if "clock" in present:
            ids |= {0, 1}
        if "ago" in present:
            ids.add(2)
        if "elapsed" in present:
            ids.add(3)
        if data.count(b"-") >= 4:
            ids.add(4)
        if "id" in present and "key" in present:
            ids.add(5)
        if len(data) >= 32 and b"h" * 32 in data.translate(hex_map):
            ids.add(6)
        return ids

    pyahocorasick = _optional("ahocorasick")
    if pyahocorasick is not None:
        automaton = pyahocorasick.Automaton()
        for n, word in enumerate(words):
            automaton.add_word(word, n)
        automaton.make_automaton()
        out["pyahocorasick"] = prefiltered(lambda data: needed(
            {group_of[n] for _, n in automaton.iter(data.lower().decode("latin-1"))}, data))

    ahocorasick_rs = _optional("ahocorasick_rs")
    if ahocorasick_rs is not None:
        rs = ahocorasick_rs.BytesAhoCorasick([w.encode() for w in words])
        out["ahocorasick-rs"] = prefiltered(lambda data: needed(
            {group_of[n] for n, _, _ in rs.find_matches_as_indexes(data.lower(), overlapping=True)}, data))
    return out


# -- word presence ----------------------------------------------------------------------------
def word_candidates() -> dict[str, Callable[[bytes], int]]:
    from liveguard.core.rules import injection

    words = injection._JSON_WORDS
    encoded = [w.encode() for w in words]

    def definition(data: bytes) -> int:
        mask = 0
        for bit, word in enumerate(encoded):
            if word in data:
                mask |= 1 << bit
        return mask

    out: dict[str, Callable[[bytes], int]] = {"bytes `in`, word by word (definition)": definition}

    def bits(found: Iterable[int]) -> int:
        mask = 0
        for i in found:
            mask |= 1 << i
        return mask

    re2 = _optional("re2")
    if re2 is not None:
        options = re2.Options()
        options.log_errors = False
        rset = re2.Set.SearchSet(options)
        for word in words:
            rset.Add(re2.escape(word))
        rset.Compile()
        out["google-re2 (Set)"] = lambda data: bits(rset.Match(data) or ())

    hyperscan = _optional("hyperscan")
    if hyperscan is not None:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[re.escape(w).encode() for w in words], ids=list(range(len(words))),
                   elements=len(words), flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(words))

        def hs(data: bytes) -> int:
            found: list[int] = []
            db.scan(data, match_event_handler=lambda i, *_: found.append(i))
            return bits(found)

        out["hyperscan"] = hs

    pyahocorasick = _optional("ahocorasick")
    if pyahocorasick is not None:
        automaton = pyahocorasick.Automaton()
        for n, word in enumerate(words):
            automaton.add_word(word, n)
        automaton.make_automaton()
        out["pyahocorasick"] = lambda data: bits(
            {n for _, n in automaton.iter(data.decode("latin-1"))})

    ahocorasick_rs = _optional("ahocorasick_rs")
    if ahocorasick_rs is not None:
        rs = ahocorasick_rs.BytesAhoCorasick(encoded)
        out["ahocorasick-rs"] = lambda data: bits(
            {n for n, _, _ in rs.find_matches_as_indexes(data, overlapping=True)})
    return out


def _best(fn: Callable[[Any], Any], items: list[Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for item in items:
            fn(item)
        best = min(best, time.process_time() - start)
    return best


def compare(title: str, items: list[Any], candidates: dict[str, Callable[[Any], Any]], rounds: int) -> None:
    reference = next(iter(candidates.values()))
    want = [reference(item) for item in items]
    size = sum(map(len, items)) / 1e6
    print(f"  {title}: {len(items):,} items, {size:.1f} MB")
    times: dict[str, float] = dict.fromkeys(candidates, float("inf"))
    for r in range(rounds):  # interleaved: one round of each candidate in turn
        order = list(candidates.items())
        for name, fn in order if r % 2 == 0 else order[::-1]:
            times[name] = min(times[name], _best(fn, items, 1))
    base = times[next(iter(candidates))]
    for name, fn in candidates.items():
        wrong = sum(fn(item) != w for item, w in zip(items, want, strict=True))
        print(f"    {name:42s} {times[name] * 1e3:8.1f} ms {times[name] * 1e6 / len(items):7.2f} µs/item "
              f"{base / times[name]:6.1f}x   differ: {wrong}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus", action="append", help="a name under benchmarks/detection/data")
    args = parser.parse_args(argv)
    versions = {}
    for dist in ("google-re2", "hyperscan", "pyahocorasick", "ahocorasick-rs"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    print(f"matchers: {versions}; load {os.getloadavg()[0]:.2f}; process CPU, best of {args.rounds}")
    masks, words = mask_candidates(), word_candidates()
    for name in args.corpus or ["miniswe", "whowhen_hc"]:
        payloads, fields = capture(DATA / f"{name}.jsonl")
        print(f"[{name}]")
        compare("volatile masks (canonical bytes of each payload)", payloads, masks, args.rounds)
        compare("gate words (each step field, lower-cased)", fields, words, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
