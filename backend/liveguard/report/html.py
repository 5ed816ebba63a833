"""The report's HTML: one self-contained page (inline CSS and SVG, no script, no URL).

See :mod:`liveguard.report` for the page's contents and the diagram's encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata

from liveguard.core.allowset import END, START, AllowSet
from liveguard.core.model import Verdict
from liveguard.evaluate.gate import GateDecision
from liveguard.report.aggregate import GraphData, ReportRow, collect, failing_first, hop_of
from liveguard.report.aggregate import label as verdict_label
from liveguard.report.svg import esc as _e
from liveguard.report.svg import graph_svg, legend

__all__ = ["render_report"]

_DECISION_COLORS = {"PROMOTE": "#1a7f37", "HOLD": "#9a6700", "ROLLBACK": "#a40e26", "REFUSE": "#a40e26"}
_FAIL = "#a40e26"
_PASS = "#1a7f37"
_ERROR = "#6e7781"

_MAX_LISTED = 20  # run ids listed in the header before "and N more"


def render_report(
    runs: Sequence[ReportRow],
    decision: GateDecision | None,
    allow_sets: Mapping[str, AllowSet],
    *,
    title: str = "liveguard report",
    generated_at: datetime | None = None,
    policy: str | None = None,
    inputs: Sequence[str] | None = None,
) -> str:
    """The whole report as one self-contained HTML document (no scripts, no URLs).

    ``runs`` are :class:`~liveguard.report.ReportRun` values or any rows with the same
    fields (the CLI's ``RunRow``). The header names the time (``generated_at``, default
    now), the liveguard version, the ``policy`` preset, the judges' prompt version(s) and
    the ``inputs`` (default: the runs' source files). When ``decision`` has a ``missing``
    list (one line per piece of missing evidence), a banner lists it above everything.
    """
    runs = failing_first(runs)
    groups: dict[str | None, list[ReportRow]] = {}
    for run in runs:
        if run.graph is not None or run.verdict is not None:  # unreadable lines: the table only
            groups.setdefault(run.graph, []).append(run)
    with_set = sorted(g for g in groups if g is not None and g in allow_sets)
    without_set = sorted((g for g in groups if g is None or g not in allow_sets), key=lambda g: g or "")
    sections = [
        _graph_section(index, collect(name, allow_sets[name], groups[name]))
        for index, name in enumerate(with_set, start=1)
    ]
    sections += [_no_allowset_section(name, groups[name]) for name in without_set]
    body = [
        f"<header>{_missing_banner(decision)}<h1>{_e(title)}</h1>"
        f"{_meta(runs, generated_at, policy, inputs)}{_decision_block(decision, runs)}</header>",
        "<main>",
        '<section class="graphs"><h2>Graphs</h2>',
        legend() if with_set else "",
        *sections,
        "</section>" if sections else '<p class="muted">No runs.</p></section>',
        _runs_table(runs),
        _run_sections(runs, allow_sets),
        "</main>",
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + "\n</body>\n</html>\n"
    )


# -- the page -------------------------------------------------------------------------------------
_CSS = """
*{box-sizing:border-box}
body{margin:0 auto;max-width:1260px;padding:16px 20px 40px;color:#1f2328;background:#fff;
 font:14px/1.45 system-ui,-apple-system,"Segoe UI","DejaVu Sans",Arial,sans-serif}
h1{font-size:22px;margin:0 0 10px}
h2{font-size:18px;margin:26px 0 10px;padding-bottom:4px;border-bottom:1px solid #d0d7de}
h3{font-size:16px;margin:22px 0 8px}
code,.mono{font-size:12.5px;
 font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.muted{color:#59636e}
header{border-bottom:1px solid #d0d7de;padding-bottom:12px}
.decision{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}
.badge{display:inline-block;color:#fff;font-weight:700;font-size:22px;letter-spacing:.04em;
 padding:8px 18px;border-radius:8px}
.badge.none{background:#6e7781}
.stats{display:flex;gap:20px;flex-wrap:wrap;margin:0;padding:0;list-style:none}
.stats li{min-width:90px}.stats b{display:block;font-size:18px}
ul.reasons{margin:6px 0 0;padding-left:18px}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:4px 0 8px;padding:8px 10px;
 background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;font-size:12.5px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.graph-row{display:flex;gap:24px;align-items:flex-start}
.graph-row .diagram{flex:0 0 auto;min-width:440px;max-width:62%;overflow-x:auto}
.graph-row svg.graph{display:block;max-width:100%;height:auto}
.findings{flex:1 1 320px;min-width:280px;font-size:13px}
.findings h4{margin:10px 0 4px;font-size:13px}
.findings ul{margin:0;padding-left:18px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #d0d7de;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.run-id,td.judges{white-space:nowrap}
.verdict{font-weight:700}
.verdict.PASS{color:#1a7f37}.verdict.FAIL{color:#a40e26}.verdict.ERROR{color:#6e7781}
.v{display:inline-block;margin:0 8px 2px 0;white-space:nowrap}
.sev{font-size:11px;padding:0 4px;border-radius:3px;border:1px solid}
.sev.hard{color:#a40e26;border-color:#a40e26}.sev.soft{color:#59636e;border-color:#8c959f}
.missing{margin:0 0 12px;padding:10px 14px;border:2px solid #9a6700;border-radius:6px;background:#fff8c5}
.missing b{display:block;margin-bottom:4px}.missing ul{margin:0;padding-left:18px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 12px;font-size:12.5px}
dl.meta dt{color:#59636e}dl.meta dd{margin:0}
.run-section{border-top:1px solid #d0d7de;padding:6px 0 10px}
.run-section h3{margin:10px 0 6px}
ol.path{display:flex;flex-wrap:wrap;gap:4px;margin:6px 0;padding:0;list-style:none}
ol.path li{border:1px solid #d0d7de;border-radius:4px;padding:0 5px;font-size:12px;background:#f6f8fa}
ol.path li .i{color:#59636e;margin-right:3px}
ol.path li.marked{border:2px solid #a40e26;background:#fff0f0;font-weight:700}
ol.path li.gap{border:none;background:none;color:#59636e}
table.violations td{font-size:12.5px}
"""


def _decision_block(decision: GateDecision | None, runs: Sequence[ReportRow]) -> str:
    scored = [r for r in runs if r.verdict is not None]
    passed = sum(1 for r in scored if r.verdict is not None and r.verdict.passed)
    errors = len(runs) - len(scored)
    stats = [
        ("runs in report", str(len(runs))),
        ("passed", str(passed)),
        ("failed", str(len(scored) - passed)),
        ("unreadable", str(errors)),
    ]
    if decision is None:
        badge = '<span class="badge none" data-decision="none">NO DECISION</span>'
        reasons = '<p class="muted">No gate decision was computed for these runs.</p>'
    else:
        color = _DECISION_COLORS[decision.decision]
        badge = (
            f'<span class="badge {_e(decision.decision)}" data-decision="{_e(decision.decision)}" '
            f'style="background:{color}">{_e(decision.decision)}</span>'
        )
        rate = "—" if decision.pass_rate is None else f"{decision.pass_rate:.0%}"
        window = ("all runs" if decision.window is None
                  else f"last {decision.window}: {decision.runs} covered, {decision.left_out} left out")
        stats = [
            ("gate window", window),
            ("pass rate", f"{rate} (needs {decision.threshold:.0%})"),
            ("passed in window", f"{decision.passed}/{decision.runs}"),
            ("min runs", str(decision.min_runs)),
            *stats,
        ]
        if decision.window is not None:
            stats.append(("left out with hard findings", str(len(decision.left_out_hard_runs))))
        items = [f"<li>{_e(r)}</li>" for r in decision.reasons]
        if decision.rollback_runs:
            shown = decision.rollback_runs[:_MAX_LISTED]
            more = len(decision.rollback_runs) - len(shown)
            items.append(
                "<li>rollback runs: "
                + ", ".join(f"<code>{_e(r)}</code>" for r in shown)
                + (f" and {more} more (see the table)" if more else "")
                + "</li>"
            )
        reasons = f'<ul class="reasons">{"".join(items)}</ul>'
    stat_html = "".join(f"<li><b>{_e(v)}</b>{_e(k)}</li>" for k, v in stats)
    return (
        f'<div class="decision"><div>{badge}</div><div><ul class="stats">{stat_html}</ul>'
        f"{reasons}</div></div>"
    )


def _violations_html(verdict: Verdict) -> str:
    if not verdict.violations:
        return '<span class="muted">—</span>'
    return "".join(
        f'<span class="v"><code>{_e(v.code)}@{v.step}</code> <span class="muted">({_e(v.node)})</span> '
        f'<span class="sev {_e(v.severity)}">{_e(v.severity)}</span></span>'
        for v in verdict.violations
    )


def _runs_table(runs: Sequence[ReportRow]) -> str:
    rows: list[str] = []
    for run in runs:
        mark = verdict_label(run)
        head = (
            f'<tr class="run {mark}" data-run="{_e(run.run_id or "")}">'
            f"<td class=\"run-id\"><code>{_e(run.run_id or '—')}</code></td><td>{_e(run.graph or '—')}</td>"
            f'<td class="verdict {mark}">{mark}</td>'
        )
        verdict = run.verdict
        if verdict is None:
            rows.append(
                f'{head}<td colspan="3"><code>{_e(run.source)}</code>: {_e(run.error or "not scored")}'
                "</td></tr>"
            )
            continue
        score = "—" if verdict.composite is None else f"{verdict.composite:.2f}"
        if verdict.judge_error:
            judges = "judge error"
        elif verdict.judges_skipped:
            judges = f"skipped: {verdict.judges_skipped}"
        else:
            judges = "judged" if verdict.judged else "—"
        rows.append(
            f'{head}<td>{score}</td><td class="muted judges">{_e(judges)}</td>'
            f"<td>{_violations_html(verdict)}</td></tr>"
        )
    return (
        '<section class="runs"><h2>Runs</h2><table class="runs">'
        "<thead><tr><th>run</th><th>graph</th><th>verdict</th><th>score</th><th>judges</th>"
        "<th>violations <span class=\"muted\">code@step (node)</span></th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


Linker = Callable[[ReportRow], str]
"""A run's page, relative to the page that links to it (the directory report)."""


def _run_name(run: ReportRow, link: Linker | None) -> str:
    name = f"<code>{_e(run.run_id or run.source)}</code>"
    if link is None:
        return name
    return f'<a class="run-link" href="{_e(link(run))}" data-run="{_e(run.run_id or "")}">{name}</a>'


def _findings(data: GraphData, listed: int | None = None, link: Linker | None = None) -> str:
    """The graph's runs (the first ``listed``, failing first), illegal hops, loops, dead ends."""
    parts: list[str] = []
    shown = data.runs if listed is None else data.runs[:listed]
    chips = "".join(
        f"<li>{_run_name(r, link)} "
        f'<span class="verdict {verdict_label(r)}">{verdict_label(r)}</span>'
        + (f' <span class="muted">{_e(", ".join(r.verdict.hard_codes))}</span>'
           if r.verdict is not None and r.verdict.hard_codes else "")
        + "</li>"
        for r in shown
    )
    more = len(data.runs) - len(shown)
    tail = f'<p class="muted">and {more} more in the run list</p>' if more else ""
    parts.append(f"<h4>Runs ({len(data.runs)})</h4><ul>{chips}</ul>{tail}")
    if data.illegal_runs:
        items = "".join(
            f"<li><code>{_e(s)} → {_e(t)}</code> ×{data.edge_counts[(s, t)]} "
            f'<span class="muted">({_e(", ".join(ids if listed is None else ids[:listed]))}'
            f"{'' if listed is None or len(ids) <= listed else f', +{len(ids) - listed} more'})</span></li>"
            for (s, t), ids in sorted(data.illegal_runs.items())
        )
        parts.append(f"<h4>Illegal hops</h4><ul>{items}</ul>")
    if data.looping:
        items = "".join(
            f"<li><code>{_e(node)}</code> max {data.max_visits.get(node, 0)} visits/run: "
            + ", ".join(f"{_e(code)} ({n} run(s))" for code, n in sorted(codes.items()))
            + "</li>"
            for node, codes in sorted(data.looping.items())
        )
        parts.append(f"<h4>Looping nodes</h4><ul>{items}</ul>")
    if data.dead_ends:
        items = "".join(
            f"<li><code>{_e(node)}</code> ({n} run(s))</li>" for node, n in sorted(data.dead_ends.items())
        )
        parts.append(f"<h4>Dead ends</h4><ul>{items}</ul>")
    if data.allow is not None:
        legal = [(s, t) for s, targets in data.allow.transitions.items() for t in targets]
        unused = [hop for hop in legal if not data.edge_counts.get(hop)]
        if unused:
            items = ", ".join(f"<code>{_e(s)} → {_e(t)}</code>" for s, t in unused)
            parts.append(f'<h4>Allowed, never taken</h4><p class="muted">{items}</p>')
    return "".join(parts)


def _graph_section(index: int, data: GraphData, listed: int | None = None,
                   link: Linker | None = None) -> str:
    allow = data.allow
    assert allow is not None
    n_edges = sum(len(t) for t in allow.transitions.values())
    passed = sum(1 for r in data.runs if r.verdict is not None and r.verdict.passed)
    return (
        f'<section class="graph-section" id="graph-{index}" data-graph="{_e(data.name)}">'
        f"<h3>{_e(data.name)} <span class=\"muted\">— {len(data.runs)} run(s), {passed} passed; "
        f"allow-set: {len(allow.nodes)} nodes, {n_edges} edges</span></h3>"
        f'<div class="graph-row"><div class="diagram">{graph_svg(index, data)}</div>'
        f'<div class="findings">{_findings(data, listed, link)}</div></div></section>'
    )


def _no_allowset_section(name: str | None, runs: Sequence[ReportRow], listed: int | None = None,
                         link: Linker | None = None) -> str:
    data = collect(name or "", None, runs)
    label = name if name is not None else "(no graph)"
    visited = ", ".join(
        f"<code>{_e(node)}</code> ×{count}"
        for node, count in sorted(data.visits.items())
        if node not in (START, END)
    )
    return (
        f'<section class="graph-section no-allowset" data-graph="{_e(name or "")}">'
        f"<h3>{_e(label)} <span class=\"muted\">— {len(runs)} run(s); no allow-set: "
        "transitions not checked, no diagram</span></h3>"
        f'<div class="findings">{_findings(data, listed, link)}'
        + (f'<p class="muted">Visited nodes: {visited}</p>' if visited else "")
        + "</div></section>"
    )


# -- header: missing evidence, provenance ----------------------------------------------------------
def _missing_banner(decision: GateDecision | None) -> str:
    """One line per piece of missing evidence, when the decision carries them (``missing``)."""
    missing = [str(line) for line in (getattr(decision, "missing", None) or [])]
    if not missing:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in missing)
    return (
        f'<div class="missing" role="alert" data-missing="{len(missing)}"><b>Missing evidence: '
        f"this decision is not based on complete evidence</b><ul>{items}</ul></div>"
    )


def _version() -> str:
    try:
        return metadata.version("liveguard")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def _meta(runs: Sequence[ReportRow], generated_at: datetime | None, policy: str | None,
          inputs: Sequence[str] | None) -> str:
    when = (generated_at or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    prompts = sorted({r.verdict.prompt_version for r in runs if r.verdict is not None})
    sources = list(inputs) if inputs is not None else sorted(
        {r.source.rsplit(":", 1)[0] if r.source.rsplit(":", 1)[-1].isdigit() else r.source for r in runs}
    )
    shown = sources[:_MAX_LISTED]
    more = len(sources) - len(shown)
    rows = [
        ("generated", when.isoformat().replace("+00:00", "Z")),
        ("liveguard", _version()),
        ("policy", f"{policy} (a run's metadata.policy wins)" if policy
         else "default preset (a run's metadata.policy wins)"),
        ("prompt version", ", ".join(prompts) or "—"),
        ("inputs", ", ".join(shown) + (f" and {more} more" if more else "") or "—"),
    ]
    items = "".join(f'<dt>{_e(k)}</dt><dd data-meta="{_e(k)}">{_e(v)}</dd>' for k, v in rows)
    return f'<dl class="meta">{items}</dl>'


# -- one section per run ------------------------------------------------------------------------
_PATH_FULL = 120  # steps shown in full; longer paths keep their ends and the marked steps
_PATH_CONTEXT = 3
_PATH_ENDS = 15


def _shown_steps(length: int, marked: set[int]) -> list[int | None]:
    """Step indices to draw, ``None`` for an elided gap."""
    if length <= _PATH_FULL:
        return list(range(length))
    keep = set(range(min(_PATH_ENDS, length))) | set(range(max(0, length - _PATH_ENDS), length))
    for step in marked:
        keep.update(range(max(0, step - _PATH_CONTEXT), min(length, step + _PATH_CONTEXT + 1)))
    shown: list[int | None] = []
    last = -1
    for index in sorted(keep):
        if index != last + 1:
            shown.append(None)
        shown.append(index)
        last = index
    if last != length - 1:
        shown.append(None)
    return shown


def _detail(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_detail(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_detail(v) for v in value[:8]) + (", …" if len(value) > 8 else "") + "]"
    return str(value)


def _run_section(index: int, run: ReportRow, allow_sets: Mapping[str, AllowSet]) -> str:
    mark = verdict_label(run)
    verdict = run.verdict
    head = (
        f'<section class="run-section {mark}" id="run-{index}" data-run="{_e(run.run_id or "")}" '
        f'data-verdict="{mark}"><h3><code>{_e(run.run_id or run.source)}</code> '
        f'<span class="verdict {mark}">{mark}</span> <span class="muted">{_e(run.graph or "no graph")}'
        f" · {len(run.path)} step(s) · {_e(run.source)}</span></h3>"
    )
    if verdict is None:
        return f'{head}<p><code>{_e(run.source)}</code>: {_e(run.error or "not scored")}</p></section>'
    return f"{head}{_run_body(run, allow_sets)}</section>"


def _run_body(run: ReportRow, allow_sets: Mapping[str, AllowSet]) -> str:
    """A scored run's node path with the violation steps marked, and its violations."""
    verdict = run.verdict
    assert verdict is not None
    by_step: dict[int, list[str]] = {}
    for v in verdict.violations:
        by_step.setdefault(v.step, []).append(v.code)
    chips: list[str] = []
    for step in _shown_steps(len(run.path), set(by_step)):
        if step is None:
            chips.append('<li class="gap">…</li>')
            continue
        codes = by_step.get(step)
        title = f' title="{_e(", ".join(codes))}"' if codes else ""
        chips.append(
            f'<li class="step{" marked" if codes else ""}" data-step="{step}"{title}>'
            f'<span class="i">{step}</span>{_e(run.path[step])}</li>'
        )
    path = f'<ol class="path" data-steps="{len(run.path)}">{"".join(chips)}</ol>' if run.path else (
        '<p class="muted">No steps.</p>')
    rows = "".join(
        f'<tr data-code="{_e(v.code)}" data-step="{v.step}"><td><code>{_e(v.code)}</code></td>'
        f'<td><span class="sev {_e(v.severity)}">{_e(v.severity)}</span></td><td>{v.step}</td>'
        f"<td><code>{_e(v.node)}</code></td><td>{v.count}</td>"
        + (f"<td><code>{_e(' → '.join(hop_of(run, v)))}</code></td>" if v.code == "illegal_transition"
           else f'<td class="muted">{_e(_detail(v.detail))}</td>')
        + "</tr>"
        for v in verdict.violations
    )
    table = (
        '<table class="violations"><thead><tr><th>code</th><th>severity</th><th>step</th><th>node</th>'
        f"<th>count</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table>"
        if verdict.violations else '<p class="muted">No violations.</p>'
    )
    has_set = run.graph is not None and run.graph in allow_sets
    note = "" if has_set else '<p class="muted">No allow-set for this graph: transitions not checked.</p>'
    return f"{path}{table}{note}"


def _run_sections(runs: Sequence[ReportRow], allow_sets: Mapping[str, AllowSet]) -> str:
    if not runs:
        return ""
    sections = "".join(_run_section(i, run, allow_sets) for i, run in enumerate(runs, start=1))
    return (
        '<section class="run-details"><h2>Runs in detail <span class="muted">failing first; '
        "node path with the violation steps marked (codes, counts, step indices; never step text)"
        f"</span></h2>{sections}</section>"
    )
