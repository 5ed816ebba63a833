"""Native parts, both optional: the package is complete in pure Python without them.

* ``liveguard._canon`` (C): the canonical-JSON fingerprint walker (``LIVEGUARD_NO_CANON=1``
  switches it off at run time).
* With ``LIVEGUARD_MYPYC=1`` (``make install`` sets it): the Monitor's hot modules compiled
  by mypyc from the very same typed sources (:data:`COMPILED`), so offline scoring and live
  guards run one rule code path, compiled. ``make test-pure`` runs the tests on the
  uncompiled sources too.
"""

import os

from setuptools import Extension, setup

COMPILED = [
    "backend/liveguard/monitor.py",
    "backend/liveguard/messages.py",
    "backend/liveguard/rules/base.py",
    "backend/liveguard/rules/build.py",
    "backend/liveguard/rules/content.py",
    "backend/liveguard/rules/defects.py",
    "backend/liveguard/rules/injection.py",
    "backend/liveguard/rules/limits.py",
    "backend/liveguard/rules/revisits.py",
    "backend/liveguard/rules/tools.py",
    "backend/liveguard/rules/transitions.py",
]
"""Modules mypyc compiles (the same list is in the Makefile's ``COMPILED``)."""

ext_modules = [
    Extension(
        "liveguard._canon",
        ["backend/liveguard/_canon.c"],
        optional=True,
        extra_compile_args=["-O2"],
    )
]
if os.environ.get("LIVEGUARD_MYPYC") == "1":
    from mypyc.build import mypycify

    ext_modules += mypycify(["--config-file", "pyproject.toml", *COMPILED], opt_level="3")

setup(ext_modules=ext_modules)
