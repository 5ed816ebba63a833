"""The recorded judge: real LLM answers to the spin-check prompts, keyed by the prompt's digest.

``judge_cassette.jsonl`` holds one line per answered prompt::

    {"digest": "<sha256 of the prompt>", "answer": "<the model's raw text>",
     "answered_by": "<who or what answered>", "answered_at": "<ISO time>",
     "recorded_at": "<ISO time>", "prompt_version": "<judges PROMPT_VERSION>",
     "usage": {"prompt_tokens": n, "completion_tokens": n}}   # usage: when the answerer gave it

The digest is :func:`liveguard.evaluate.judges.prompt_digest`: sha256 of the request's messages as
compact sorted-key JSON, the data block's random delimiter token set aside. The model that
answers sees only the prompt (the messages of ``judge_prompts_<split>.jsonl``, written by
``run.py --export-prompts``): no label, no run id, no file name.

:class:`Replay` serves the cassette on 127.0.0.1 through the tests' local OpenAI-compatible
server (``tests/fake_openai.py``), so the real ``openai`` client and the real judge client
ask it; a prompt with no recorded answer is answered with an HTTP 400 and listed in
``missing`` (``run.py`` then fails loudly). :class:`Collect` serves the same prompts to
export them, answering nothing a figure could use (every answer is a 400).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASSETTE = HERE / "judge_cassette.jsonl"
PROVENANCE = ("answered_by", "answered_at", "recorded_at", "prompt_version")


def _fake() -> Any:
    name = "liveguard_fake_openai"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "fake_openai.py")
    if spec is None or spec.loader is None:
        raise SystemExit("cassette.py: cannot load tests/fake_openai.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _open(path: Path, mode: str) -> Any:
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return path.open(mode, encoding="utf-8")


def read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a JSONL file (``.gz`` read through); a bad line is an error
    naming the file and the line."""
    with _open(path, "r") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise SystemExit(f"{path}:{number}: not JSON ({exc})") from None
            if not isinstance(item, dict):
                raise SystemExit(f"{path}:{number}: not a JSON object")
            yield number, item


def load(path: Path = CASSETTE) -> dict[str, dict[str, Any]]:
    """The cassette's entries by digest (empty when the file does not exist)."""
    found: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return found
    for number, item in read_lines(path):
        digest, answer = item.get("digest"), item.get("answer")
        if not (isinstance(digest, str) and len(digest) == 64 and isinstance(answer, str)):
            raise SystemExit(f"{path}:{number}: needs a 64-hex \"digest\" and a text \"answer\"")
        missing = [key for key in PROVENANCE if not item.get(key)]
        if missing:
            raise SystemExit(f"{path}:{number}: no provenance ({', '.join(missing)})")
        found[digest] = item
    return found


def write(entries: Iterable[dict[str, Any]], path: Path = CASSETTE) -> None:
    """Write the cassette, sorted by digest (one line each: a small, stable diff)."""
    ordered = sorted(entries, key=lambda e: str(e["digest"]))
    lines = [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in ordered]
    tmp = path.with_name(path.name + ".tmp")
    with _open(tmp, "w") as handle:
        handle.write("".join(line + "\n" for line in lines))
    tmp.replace(path)


def shown_token(digest: str) -> str:
    """The delimiter token an exported prompt shows the model (derived from its digest, so an
    export is the same file every time; the digest sets any token aside)."""
    return hashlib.sha256(digest.encode()).hexdigest()[:24]


def estimate_tokens(chars: int) -> int:
    """Tokens of a text of ``chars`` characters when the answerer reported none (4 per token)."""
    return (chars + 3) // 4


class _Server:
    """The local OpenAI-compatible server with a responder keyed on the prompt's digest."""

    def __init__(self) -> None:
        fake = _fake()
        self._reply = fake.Reply
        self._lock = threading.Lock()
        self.requests = 0
        self.prompt_chars = 0
        self.server = fake.FakeOpenAI(responder=self._respond, keep_alive=True).start()

    @property
    def base_url(self) -> str:
        return str(self.server.base_url)

    def _respond(self, request: Any) -> Any:
        from liveguard.evaluate.judges import prompt_digest

        messages = request.messages
        digest = prompt_digest(messages)
        chars = sum(len(str(m.get("content", ""))) for m in messages)
        with self._lock:
            self.requests += 1
            self.prompt_chars += chars
            return self.answer(digest, messages)

    def answer(self, digest: str, messages: list[dict[str, Any]]) -> Any:
        raise NotImplementedError

    def refuse(self, why: str) -> Any:
        return self._reply.error(400, {"error": {"message": why, "type": "no_recorded_answer"}})

    def close(self) -> None:
        self.server.close()


class Replay(_Server):
    """Serves the cassette's answers verbatim; counts calls and tokens; lists unanswered prompts."""

    def __init__(self, entries: dict[str, dict[str, Any]]) -> None:
        self.entries = entries
        self.missing: dict[str, list[dict[str, Any]]] = {}
        self.used: set[str] = set()
        self.tokens = 0
        self.estimated = 0  # requests whose tokens were estimated (no usage recorded)
        super().__init__()

    def answer(self, digest: str, messages: list[dict[str, Any]]) -> Any:
        entry = self.entries.get(digest)
        if entry is None:
            self.missing.setdefault(digest, messages)
            return self.refuse(f"no recorded answer for prompt {digest}")
        self.used.add(digest)
        usage = entry.get("usage") or {}
        if isinstance(usage.get("prompt_tokens"), int):
            self.tokens += int(usage["prompt_tokens"]) + int(usage.get("completion_tokens") or 0)
        else:
            self.estimated += 1
            chars = sum(len(str(m.get("content", ""))) for m in messages) + len(entry["answer"])
            self.tokens += estimate_tokens(chars)
        return self._reply.text(entry["answer"])


class Collect(_Server):
    """Collects every prompt asked (by digest, first seen first); answers none of them."""

    def __init__(self) -> None:
        self.prompts: dict[str, list[dict[str, Any]]] = {}
        super().__init__()

    def answer(self, digest: str, messages: list[dict[str, Any]]) -> Any:
        self.prompts.setdefault(digest, messages)
        return self.refuse("collecting prompts only")


def exported(digest: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One line of a prompts file: the digest and the messages as the model is shown them
    (the delimiter token replaced by :func:`shown_token`; the digest is unchanged)."""
    from liveguard.evaluate.judges import prompt_digest

    shown = []
    token = shown_token(digest)
    for message in messages:
        item = dict(message)
        content = item.get("content")
        if item.get("role") == "user" and isinstance(content, str):
            lines = content.split("\n")
            first = next((ln for ln in lines if ln.startswith("BEGIN_RUN_DATA ")), None)
            if first is not None:
                old = first.removeprefix("BEGIN_RUN_DATA ")
                lines = [f"{ln.split(' ', 1)[0]} {token}"
                         if ln in (f"BEGIN_RUN_DATA {old}", f"END_RUN_DATA {old}") else ln for ln in lines]
                item["content"] = "\n".join(lines)
        shown.append(item)
    if prompt_digest(shown) != digest:
        raise SystemExit(f"cassette.py: prompt {digest}: the shown token changes its digest")
    return {"digest": digest, "messages": shown}
