"""Import real LLM answers to the spin-check prompts into the recorded judge's cassette.

    PYTHONPATH=backend .venv/bin/python benchmarks/detection/record.py ANSWERS.jsonl \
        --by "<who or what answered: model, provider, settings>" [--at ISO-TIME] \
        [--prompts judge_prompts_dev.jsonl judge_prompts_test.jsonl ...] [--replace] [--cassette FILE]

``ANSWERS.jsonl``: one line per answered prompt, ``{"digest": "<the prompt's digest>",
"answer": "<the model's raw text>"}``, optionally ``"usage": {"prompt_tokens": n,
"completion_tokens": n}`` (the answerer's own count), ``"answered_by"`` and ``"answered_at"``
(a line's own provenance, over ``--by`` / ``--at``). The prompts come from ``run.py --split
<half> --export-prompts FILE``; the model must see only their messages (no label, no run id).

Each answer is stored verbatim (fences and all: the judge client reads them as it would
read the model) with its provenance: who answered (``--by``), when (``--at``, default now),
when it was recorded, and the prompt version. With ``--prompts``, an answer to a prompt that
is in none of those files is refused (a stale or mistyped digest). An answer that differs
from the one recorded for its digest is refused unless ``--replace``. Nothing is scripted:
this only copies answers a model gave.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import cassette  # noqa: E402  (benchmarks/detection/cassette.py, beside this file)

_HEX64 = re.compile(r"\A[0-9a-f]{64}\Z")


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def known_digests(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        for number, item in cassette.read_lines(path):
            digest = item.get("digest")
            if not isinstance(digest, str) or not _HEX64.match(digest):
                raise SystemExit(f"{path}:{number}: no 64-hex \"digest\"")
            found.add(digest)
    return found


def record(answers: Path, *, by: str, at: str | None, prompts: list[Path], replace: bool,
           path: Path) -> dict[str, int]:
    """Merge ``answers`` into the cassette at ``path``; counts of what happened."""
    from liveguard.evaluate.judges import PROMPT_VERSION, parse_answer

    if not by.strip():
        raise SystemExit("record.py: --by must name who or what answered")
    known = known_digests(prompts) if prompts else None
    entries = cassette.load(path)
    counts = {"added": 0, "unchanged": 0, "replaced": 0, "unusable": 0}
    recorded_at = _now()
    for number, item in cassette.read_lines(answers):
        where = f"{answers}:{number}"
        digest, answer = item.get("digest"), item.get("answer")
        if not isinstance(digest, str) or not _HEX64.match(digest):
            raise SystemExit(f"{where}: \"digest\" must be 64 lower-case hex characters")
        if not isinstance(answer, str):
            raise SystemExit(f"{where}: \"answer\" must be the model's raw text")
        if known is not None and digest not in known:
            raise SystemExit(f"{where}: prompt {digest} is in none of the --prompts files")
        usage: Any = item.get("usage")
        if usage is not None and not (isinstance(usage, dict)
                                      and all(isinstance(v, int) and v >= 0 for v in usage.values())):
            raise SystemExit(f"{where}: \"usage\" must map token counts to non-negative integers")
        entry: dict[str, Any] = {
            "digest": digest, "answer": answer,
            "answered_by": str(item.get("answered_by") or by),
            "answered_at": str(item.get("answered_at") or at or recorded_at),
            "recorded_at": recorded_at, "prompt_version": PROMPT_VERSION,
        }
        if usage is not None:
            entry["usage"] = usage
        old = entries.get(digest)
        if old is not None and old["answer"] == answer:
            counts["unchanged"] += 1
            continue
        if old is not None and not replace:
            raise SystemExit(f"{where}: prompt {digest} already has another recorded answer "
                             f"(by {old['answered_by']}, {old['answered_at']}); --replace to overwrite")
        counts["replaced" if old is not None else "added"] += 1
        if isinstance(parse_answer(answer), str):
            counts["unusable"] += 1
        entries[digest] = entry
    cassette.write(entries.values(), path)
    counts["total"] = len(entries)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("answers", type=Path,
                        help="JSONL: {digest, answer[, usage, answered_by, answered_at]}")
    parser.add_argument("--by", required=True, help="who or what answered (model, provider, settings)")
    parser.add_argument("--at", default=None, help="when the answers were given (ISO time; default now)")
    parser.add_argument("--prompts", type=Path, nargs="*", default=[],
                        help="the exported prompt files: refuse answers to any other prompt")
    parser.add_argument("--replace", action="store_true", help="overwrite a different recorded answer")
    parser.add_argument("--cassette", type=Path, default=cassette.CASSETTE)
    args = parser.parse_args(argv)
    counts = record(args.answers, by=args.by, at=args.at, prompts=args.prompts, replace=args.replace,
                    path=args.cassette)
    print(f"{args.cassette}: {counts['added']} added, {counts['replaced']} replaced, "
          f"{counts['unchanged']} unchanged ({counts['total']} recorded answers); "
          f"{counts['unusable']} of the new answers are not the answer's JSON (replayed as they are: "
          "missing evidence, never a finding)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
