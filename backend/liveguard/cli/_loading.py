"""Loading a user's ``MODULE:ATTR`` target (a compiled graph, or a factory returning one).

The CLI commands that take one (``paths derive``, ``threads``, ``approvals --graph``) load it
here. The user's code may fail in any way while it is imported or called; that is an input
fault, not a bug in liveguard, so it becomes :class:`TargetError` (exit 2, one line naming
the target and the exception type), never the "internal error" exit 70.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from liveguard.cli.terminal import visible
from liveguard.errors import TargetError

__all__ = ["TargetError", "call_factory", "import_target"]


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return visible(f"{type(exc).__name__}: {first}"[:300] if first else type(exc).__name__)


def import_target(spec: str, *, label: str, example: str = "myapp.agent:graph") -> Any:
    """``ATTR`` of module ``MODULE`` (imported with the current directory on ``sys.path``, like
    ``python -m``). Raise :class:`TargetError` naming ``label`` when it cannot."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise TargetError(f"{label}: expected MODULE:ATTR, e.g. {example}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # the user's module: any failure is theirs
        raise TargetError(f"{label}: cannot load {visible(module_name)}: {_why(exc)}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise TargetError(
            f"{label}: cannot load: module {visible(module_name)} has no {visible(attr)!r}"
        ) from None


def call_factory(factory: Callable[[], Any], *, label: str) -> Any:
    """``factory()``; any exception it raises becomes :class:`TargetError` naming ``label``."""
    try:
        return factory()
    except TypeError as exc:
        raise TargetError(f"{label}: a factory must take no arguments ({_why(exc)})") from None
    except (Exception, SystemExit) as exc:
        raise TargetError(f"{label}: the factory raised {_why(exc)}") from None
