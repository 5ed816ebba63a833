"""The modules ``make install`` compiles with mypyc, and a guard against stale builds.

mypyc compiles these typed modules (the Monitor, its rules, the message shapes, the
verdict rule, the aggregate node's core and the scoring floor: the per-step and per-run hot
path of offline scoring and live guards) from the very same sources, so there is one rule
code path, compiled or not. Left out: the eval graph's nodes (LangGraph inspects their
signatures) and ``fingerprint`` (its hot path is the C accelerator, which calls back into
it). Python imports an extension module in preference to the ``.py`` beside it, so a
compiled module older than its source would run old code: importing liveguard warns about
it, and ``make install`` rebuilds. Without a C compiler, or with ``LIVEGUARD_MYPYC`` unset
when building, everything runs as Python.

Standard library only: ``setup.py`` reads :data:`COMPILED` from this file.
"""

from __future__ import annotations

import os
import sys

COMPILED: tuple[str, ...] = (
    "liveguard.aggregation",
    "liveguard.engine.floor",
    "liveguard.messages",
    "liveguard.monitor",
    "liveguard.rules.base",
    "liveguard.rules.build",
    "liveguard.rules.content",
    "liveguard.rules.defects",
    "liveguard.rules.injection",
    "liveguard.rules.limits",
    "liveguard.rules.revisits",
    "liveguard.rules.tools",
    "liveguard.rules.transitions",
    "liveguard.verdict",
)
"""Modules compiled by mypyc when ``make install`` (``LIVEGUARD_MYPYC=1``) builds them."""


def compiled_modules() -> dict[str, bool]:
    """For each of :data:`COMPILED` that is imported: True when it runs compiled."""
    out: dict[str, bool] = {}
    for name in COMPILED:
        module = sys.modules.get(name)
        if module is not None:
            out[name] = not str(getattr(module, "__file__", "") or "").endswith(".py")
    return out


def stale_modules() -> list[str]:
    """Imported compiled modules whose ``.py`` source is newer than the extension."""
    stale: list[str] = []
    for name, native in compiled_modules().items():
        if not native:
            continue
        path = str(sys.modules[name].__file__)
        source = os.path.join(os.path.dirname(path), name.rsplit(".", 1)[1] + ".py")
        try:
            if os.stat(source).st_mtime > os.stat(path).st_mtime:
                stale.append(name)
        except OSError:
            continue
    return stale
