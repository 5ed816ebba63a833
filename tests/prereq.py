"""Optional prerequisites of the test suite: skipped loudly on a laptop, fatal under ``CI=true``.

A missing browser or PostgreSQL server must never make the suite silently weaker in CI
(``make install`` installs both as root), while a fresh machine without them still runs
everything else.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def missing(what: str, hint: str, *, module: bool = False) -> None:
    """Fail under CI=true, else skip (the test, or the whole ``module``) saying what to install."""
    message = f"{what} is missing: {hint}"
    if in_ci():
        pytest.fail(f"{message} (CI=true: a missing prerequisite fails, it never skips)", pytrace=False)
    pytest.skip(f"SKIPPED, NOT TESTED: {message}", allow_module_level=module)


def find_chromium() -> Path | None:
    """``LIVEGUARD_CHROMIUM`` if set, else the first of chromium / chromium-browser / google-chrome."""
    explicit = os.environ.get("LIVEGUARD_CHROMIUM")
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def require_chromium() -> Path:
    browser = find_chromium()
    if browser is None:
        where = os.environ.get("LIVEGUARD_CHROMIUM")
        missing(
            f"headless Chromium ({'LIVEGUARD_CHROMIUM=' + where if where else ', '.join(BROWSERS)})",
            "`make install` installs Debian's chromium when run as root; otherwise run "
            "`sudo apt-get update && sudo apt-get install -y chromium` "
            "or point LIVEGUARD_CHROMIUM at a Chrome/Chromium binary",
        )
    assert browser is not None
    return browser
