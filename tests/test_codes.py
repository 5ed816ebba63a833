"""One registry of violation codes (issue 20, item 2): every code the sources emit is in it,
and the sets the library uses are derived from it, equal to what they were."""

from __future__ import annotations

import ast
from pathlib import Path

import liveguard
from liveguard.core.codes import (
    CODES,
    LIVENESS_CODES,
    LOOP_CODES,
    LOOP_GUARD_CODES,
    TRANSITION_CODES,
    codes_of,
)
from liveguard.core.model import LIVENESS_CODES as MODEL_LIVENESS
from liveguard.core.rules.build import LOOP_GUARD_CODES as BUILD_LOOP_GUARD
from liveguard.core.rules.build import TRANSITION_CODES as BUILD_TRANSITIONS
from liveguard.report.aggregate import LOOP_CODES as REPORT_LOOP

ROOT = Path(liveguard.__file__).resolve().parent
LOOP_GUARD = {"node_revisit_cycle", "no_progress_stall", "repeated_content", "content_cycle",
              "tool_no_progress"}


def emitted() -> dict[str, set[str]]:
    """Code → severities, for every ``Violation(code=..., severity=...)`` and rule ``code = ...``
    written as literals in the sources (constants such as ``CODE`` resolved in their module)."""
    found: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        consts = {t.id: n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)
                  for t in ([n.target] if isinstance(n, ast.AnnAssign) else n.targets)
                  if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
                  and isinstance(n.value.value, str)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Violation":
                kw = {k.arg: k.value for k in node.keywords}
                code, severity = kw.get("code"), kw.get("severity")
                name = (code.value if isinstance(code, ast.Constant)
                        else consts.get(code.id) if isinstance(code, ast.Name) else None)
                if isinstance(name, str):
                    sev = severity.value if isinstance(severity, ast.Constant) else "computed"
                    found.setdefault(name, set()).add(str(sev))
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    names = [getattr(t, "id", None) for t in getattr(stmt, "targets", [])]
                    if names == ["code"] and isinstance(getattr(stmt, "value", None), ast.Constant):
                        found.setdefault(stmt.value.value, set())
    return found


def test_every_emitted_code_is_registered_with_its_severity() -> None:
    found = emitted()
    assert {"node_revisit_cycle", "evaluator_injection_suspected", "guard_error", "dead_end"} <= set(found)
    assert set(found) - set(CODES) == set()
    for code, severities in found.items():
        registered = CODES[code].severity
        allowed = {"hard", "soft", "computed"} if registered == "hard_or_soft" else {registered, "computed"}
        assert severities <= allowed, (code, severities, registered)


def test_the_derived_sets_are_the_ones_in_use_and_unchanged() -> None:
    assert LIVENESS_CODES == MODEL_LIVENESS == {*LOOP_GUARD, "illegal_transition", "excessive_loop",
                                                "semantic_repeat", "tool_same_error"}
    assert LOOP_GUARD_CODES == BUILD_LOOP_GUARD == LOOP_GUARD
    assert TRANSITION_CODES == BUILD_TRANSITIONS == {"illegal_transition", "excessive_loop", "dead_end"}
    assert LOOP_CODES == REPORT_LOOP == {*LOOP_GUARD, "excessive_loop"}
    assert codes_of(family="semantic", liveness=True) == {"semantic_repeat", "tool_same_error"}
    assert all(CODES[c].severity != "soft" for c in LIVENESS_CODES)  # a soft code never rolls back
