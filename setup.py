"""Native parts, both optional: the package is complete in pure Python without them.

* ``liveguard._canon`` (C): the canonical-JSON fingerprint walker (``LIVEGUARD_NO_CANON=1``
  switches it off at run time).
* With ``LIVEGUARD_MYPYC=1`` (``make install`` sets it): the Monitor's hot modules compiled
  by mypyc from the very same typed sources (``liveguard._compiled.COMPILED``), so offline scoring and live
  guards run one rule code path, compiled. ``make test-pure`` runs the tests on the
  uncompiled sources too.
"""

import os
import runpy

from setuptools import Extension, setup

# The list lives in the package (standard library only), so the build and the run-time
# checks (``liveguard._compiled``) read one list.
COMPILED = runpy.run_path("backend/liveguard/_compiled.py")["COMPILED"]
SOURCES = ["backend/" + name.replace(".", "/") + ".py" for name in COMPILED]

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

    ext_modules += mypycify(["--config-file", "pyproject.toml", *SOURCES], opt_level="3")

setup(ext_modules=ext_modules)
