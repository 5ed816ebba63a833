"""Messages for input that does not fit a schema: they name keys and positions, never values.

A message is built from pydantic's error locations and types only (``include_input=False``):
the input never reaches it, so no step text, argument or result can appear in it, and it
needs no redaction afterwards. Every error is listed (``; ``-separated), none is summed up
as "+N more".

* Key names of the schema (``node``, ``summary``, ``steps``, ...) and list indices are shown
  as written: ``steps.0.node: missing (a required key)``.
* A key the schema does not have is the user's own text. It is shown as written when it
  is a near miss of a key the schema has at that place (a typo), with that key named:
  ``steps.0.sumary: unknown key (did you mean 'summary'?)``. Any other unknown key is shown
  only as a digest prefix (``#8778bba5``, :func:`liveguard.errors.safe_key`), with the
  keys the schema does have there.
* Anything else that can go wrong while reading a run is named by its exception type and
  where it was raised (:func:`withheld`): a message of a foreign exception may quote the run.
"""

from __future__ import annotations

import difflib
import traceback
import types
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from liveguard.core.model import Expected, Step, Trajectory
from liveguard.errors import SCHEMA_KEYS, safe_key

__all__ = ["describe", "withheld"]


_WHAT: dict[str, str] = {
    "missing": "missing (a required key)",
    "extra_forbidden": "unknown key",
    "string_type": "expected a string",
    "string_too_short": "expected a non-empty string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "none_required": "expected null",
    "greater_than": "too small",
    "greater_than_equal": "too small",
    "less_than": "too large",
    "less_than_equal": "too large",
    "too_short": "too few items",
    "too_long": "too many items",
    "literal_error": "not one of the allowed values",
    "enum": "not one of the allowed values",
}
_NEAR = 0.75
"""How alike an unknown key must be to a schema key to be taken for its typo (difflib ratio)."""


def describe(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Every error of ``exc`` as ``location: what``, joined by ``"; "``; no input value.

    ``model`` is the schema that was validated (it names the keys a typo is compared with);
    without it, the keys of liveguard's formats are used.
    """
    parts = []
    for err in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = tuple(err["loc"])
        kind = str(err["type"])
        what = _WHAT.get(kind, f"invalid value ({kind})")
        if kind == "extra_forbidden" and loc:
            known = _fields_at(model, loc[:-1])
            key = str(loc[-1])
            near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=_NEAR)
            if near:
                parts.append(f"{_location(loc[:-1], key)}: unknown key (did you mean {near[0]!r}?)")
            else:
                listed = ", ".join(sorted(known)) or "none"
                parts.append(f"{_location(loc[:-1], safe_key(key))}: unknown key, not shown (it is no "
                             f"near miss of a key; the keys here are: {listed})")
            continue
        parts.append(f"{_location(loc)}: {what}")
    return "; ".join(parts) if parts else "invalid"


def withheld(exc: BaseException) -> str:
    """``Type: message withheld (...)``: a foreign exception named by type and place only."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: message withheld (it may quote the run){where}"


def _location(loc: Sequence[Any], last: str | None = None) -> str:
    shown = [_part(part) for part in loc]
    if last is not None:
        shown.append(last)
    return ".".join(shown) if shown else "(the run)"


def _part(part: Any) -> str:
    if isinstance(part, int):
        return str(part)
    text = str(part)
    return text if text in _SCHEMA_WORDS else safe_key(text)


def _model_names(models: Iterable[type[BaseModel]]) -> set[str]:
    out: set[str] = set()
    for model in models:
        out |= set(model.model_fields)
    return out


def _fields_at(model: type[BaseModel] | None, loc: Sequence[Any]) -> set[str]:
    """The keys the schema has at ``loc`` (the model's, down its fields and list items)."""
    if model is None:
        return set(SCHEMA_KEYS)
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue  # a list item: the same element type
        found = _models_in(current)
        field = next((m.model_fields[str(part)] for m in found if str(part) in m.model_fields), None)
        if field is None:
            return set()
        current = field.annotation
    return _model_names(_models_in(current))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (``Step``, ``list[Step]``, ``Expected | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


_SCHEMA_WORDS = frozenset(SCHEMA_KEYS | _model_names((Trajectory, Step, Expected)))
