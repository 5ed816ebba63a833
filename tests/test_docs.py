"""The docs stay true: every relative link resolves, and docs/configuration.md names every
environment variable liveguard reads (``ENV_NAMES`` and a scan of the sources)."""

from __future__ import annotations

import re
from pathlib import Path

from liveguard.settings import ENV_NAMES

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_VAR = re.compile(r"\b(?:AGENT_EVAL|LIVEGUARD|LANGSMITH)_[A-Z_]*[A-Z]\b"
                  r"|\b(?:DEEPSEEK_API_KEY|OPENAI_API_KEY|LLM_KILL_SWITCH)\b")


def _tables(text: str) -> list[set[str]]:
    """The first-column names of each Markdown table of the page, table by table."""
    tables: list[set[str]] = []
    current: set[str] | None = None
    for line in text.splitlines():
        m = re.match(r"\| `([A-Z_]+)` \|", line)
        if m:
            if current is None:
                current = set()
                tables.append(current)
            current.add(m.group(1))
        elif not line.startswith("|"):
            current = None
    return tables


def test_every_relative_link_in_the_readme_and_docs_resolves() -> None:
    broken = []
    for page in DOCS:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_configuration_lists_env_names_and_every_variable_the_sources_name() -> None:
    tables = _tables((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"))
    assert len(tables) == 2, "one table of settings, one of build and test variables"
    settings, build = tables
    assert settings == set(ENV_NAMES)
    named: set[str] = set()
    for source in [*(ROOT / "backend" / "liveguard").rglob("*.py"), ROOT / "Makefile"]:
        named |= set(_VAR.findall(source.read_text(encoding="utf-8")))
    assert named - settings - build == set()
