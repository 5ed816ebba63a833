"""The static HTML report: gate decision, verdicts, and allow-set diagrams with observed paths.

``render_report(runs, decision, allow_sets)`` returns one self-contained HTML document:
inline CSS, inline SVG computed here, no JavaScript and no external reference of any
kind (a Content-Security-Policy of ``default-src 'none'`` makes sure of it), so it opens
from a file with no network access.

Privacy: the report shows node names, violation codes, counts and step indices only.
It never sees step text; every value from the input is HTML-escaped.

Diagram encoding (classes are stable; tests and styles rely on them):

* ``g.node`` — one per node, ``data-node``; extra classes ``terminal`` (``__start__`` /
  ``__end__``), ``visited``, ``looping`` (a loop/stall code fired on it in some run:
  orange fill), ``unknown`` (observed but not in the allow-set: red fill),
  ``dead-end`` (a run finished there without an edge to ``__end__``: purple outline).
* ``g.edge`` — one per (from, to) pair, ``data-from`` / ``data-to`` / ``data-count``;
  ``legal`` (in the allow-set, grey), ``legal traversed`` (taken by some run: blue,
  thicker with the count, labelled ``×N``), ``illegal`` (taken but not allowed: red,
  dashed). Layout is layered by BFS depth from ``__start__``; ``__end__`` sits at the
  bottom; back-edges run in lanes on the left, forward skips in lanes on the right,
  self-loops sit on a node's top-right corner.

A run's observed path is ``__start__`` → its steps' nodes → ``__end__``; the last hop is
drawn only when the allow-set lets the last node finish (the Monitor's own notion of a
finished run: anything else is a ``dead_end``).
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from liveguard.allowset import END, START, AllowSet
from liveguard.gate import GateDecision
from liveguard.model import Verdict

__all__ = ["COLORS", "LOOP_CODES", "ReportRun", "render_report"]

LOOP_CODES = frozenset(
    {
        "node_revisit_cycle",
        "excessive_loop",
        "no_progress_stall",
        "repeated_content",
        "content_cycle",
        "tool_no_progress",
    }
)
"""Codes that mark the node they fired on as looping in the diagram."""

COLORS: Mapping[str, str] = {
    "legal": "#afb8c1",  # allowed edge, not taken
    "traversed": "#1f6feb",  # allowed edge, taken
    "illegal": "#e5141e",  # edge taken but not allowed; unknown nodes
    "looping": "#ff8c00",  # node a loop/stall rule fired on
    "visited": "#dbeafe",  # visited node fill
    "unvisited": "#f6f8fa",
    "node_stroke": "#57606a",
    "terminal": "#24292f",
    "dead_end": "#8250df",
    "text": "#1f2328",
}
"""The diagram's palette. The page itself uses none of these for anything else."""

_DECISION_COLORS = {"PROMOTE": "#1a7f37", "HOLD": "#9a6700", "ROLLBACK": "#a40e26",
                    "REFUSE": "#a40e26"}
_FAIL = "#a40e26"
_PASS = "#1a7f37"
_ERROR = "#6e7781"

# Geometry (px). Node labels are monospace so widths can be estimated without a browser.
_NAME_CH = 7.9  # 13px monospace
_SUB_CH = 6.7  # 11px monospace
_NODE_H = 42.0
_TERM_H = 26.0
_LAYER_GAP = 88.0
_NODE_GAP = 36.0
_LANE_GAP = 22.0
_LANE_MARGIN = 26.0
_MARGIN = 18.0
_ARROW = 9.0
_MAX_LISTED = 20  # run ids listed in the header before "and N more"

Side = Literal["left", "right"]


@dataclass(frozen=True)
class ReportRun:
    """One row of the report: a scored run, or an input error (``verdict`` None)."""

    run_id: str | None
    graph: str | None
    source: str  # file or file:line
    verdict: Verdict | None  # None when the run could not be read/scored
    path: tuple[str, ...]  # the observed node sequence (Step.node in order)
    error: str | None = None


def render_report(
    runs: Sequence[ReportRun],
    decision: GateDecision | None,
    allow_sets: Mapping[str, AllowSet],
    *,
    title: str = "liveguard report",
) -> str:
    """The whole report as one self-contained HTML document (no scripts, no URLs)."""
    groups: dict[str | None, list[ReportRun]] = {}
    for run in runs:
        if run.graph is not None or run.verdict is not None:  # unreadable lines: the table only
            groups.setdefault(run.graph, []).append(run)
    with_set = sorted(g for g in groups if g is not None and g in allow_sets)
    without_set = sorted((g for g in groups if g is None or g not in allow_sets), key=lambda g: g or "")
    sections = [
        _graph_section(index, _collect(name, allow_sets[name], groups[name]))
        for index, name in enumerate(with_set, start=1)
    ]
    sections += [_no_allowset_section(name, groups[name]) for name in without_set]
    body = [
        f"<header><h1>{_e(title)}</h1>{_decision_block(decision, runs)}</header>",
        "<main>",
        '<section class="graphs"><h2>Graphs</h2>',
        _legend() if with_set else "",
        *sections,
        "</section>" if sections else '<p class="muted">No runs.</p></section>',
        _runs_table(runs),
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
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _decision_block(decision: GateDecision | None, runs: Sequence[ReportRun]) -> str:
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
        stats = [
            ("gate window", f"{decision.runs} of last {decision.window}"),
            ("pass rate", f"{rate} (needs {decision.threshold:.0%})"),
            ("passed in window", f"{decision.passed}/{decision.runs}"),
            ("min runs", str(decision.min_runs)),
            *stats,
        ]
        items = [f"<li>{_e(r)}</li>" for r in decision.reasons]
        items += [f'<li class="missing">missing evidence: {_e(m)}</li>' for m in decision.missing]
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


def _verdict_label(run: ReportRun) -> str:
    if run.verdict is None:
        return "ERROR"
    return "PASS" if run.verdict.passed else "FAIL"


def _violations_html(verdict: Verdict) -> str:
    if not verdict.violations:
        return '<span class="muted">—</span>'
    return "".join(
        f'<span class="v"><code>{_e(v.code)}@{v.step}</code> <span class="muted">({_e(v.node)})</span> '
        f'<span class="sev {_e(v.severity)}">{_e(v.severity)}</span></span>'
        for v in verdict.violations
    )


def _runs_table(runs: Sequence[ReportRun]) -> str:
    rows: list[str] = []
    for run in runs:
        label = _verdict_label(run)
        head = (
            f'<tr class="run {label}" data-run="{_e(run.run_id or "")}">'
            f"<td class=\"run-id\"><code>{_e(run.run_id or '—')}</code></td><td>{_e(run.graph or '—')}</td>"
            f'<td class="verdict {label}">{label}</td>'
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


def _legend() -> str:
    c = COLORS

    def swatch(inner: str, width: int = 34) -> str:
        return f'<svg class="swatch" width="{width}" height="16" viewBox="0 0 {width} 16">{inner}</svg>'

    def line(color: str, width: float, dash: str = "") -> str:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        return (
            f'<line x1="1" y1="8" x2="26" y2="8" stroke="{color}" stroke-width="{width}"{dash_attr}/>'
            f'<path d="M25,3 L33,8 L25,13 z" fill="{color}"/>'
        )

    def box(fill: str, stroke: str, dash: str = "") -> str:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        return (
            f'<rect x="2" y="2" width="26" height="12" rx="3" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="1.5"{dash_attr}/>'
        )

    items = [
        (line(c["legal"], 1.5), "allowed, not taken"),
        (line(c["traversed"], 4), "allowed and taken (×N = times)"),
        (line(c["illegal"], 3, "6 4"), "illegal hop: not in the allow-set"),
        (box(c["visited"], c["node_stroke"]), "visited node (max visits per run)"),
        (box(c["looping"], c["node_stroke"]), "looping node: revisits, stall, cycle, tool retries"),
        (box(c["illegal"], c["illegal"]), "unknown node"),
        (box("#ffffff", c["dead_end"], "4 2"), "dead end: a run finished with no edge to __end__"),
        (box(c["terminal"], c["terminal"]), "__start__ / __end__"),
    ]
    return '<div class="legend">' + "".join(
        f"<span>{swatch(svg)}{_e(text)}</span>" for svg, text in items
    ) + "</div>"


# -- per-graph data -------------------------------------------------------------------------------
@dataclass
class _GraphData:
    name: str
    allow: AllowSet | None
    runs: list[ReportRun]
    edge_counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    edge_runs: Counter[tuple[str, str]] = field(default_factory=Counter)
    visits: Counter[str] = field(default_factory=Counter)
    visit_runs: Counter[str] = field(default_factory=Counter)
    max_visits: dict[str, int] = field(default_factory=dict)
    looping: dict[str, Counter[str]] = field(default_factory=dict)  # node -> code -> runs
    dead_ends: Counter[str] = field(default_factory=Counter)
    illegal_runs: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def is_legal(self, source: str, target: str) -> bool:
        return self.allow is not None and self.allow.allows(source, target)


def _collect(name: str, allow: AllowSet | None, runs: Sequence[ReportRun]) -> _GraphData:
    data = _GraphData(name, allow, list(runs))
    for run in runs:
        path = run.path
        hops = list(zip((START, *path), path, strict=False))
        if allow is not None and path and allow.allows(path[-1], END):
            hops.append((path[-1], END))
        for hop in hops:
            data.edge_counts[hop] += 1
        for hop in set(hops):
            data.edge_runs[hop] += 1
            if allow is not None and not allow.allows(*hop):
                data.illegal_runs.setdefault(hop, []).append(run.run_id or run.source)
        per_run = Counter(path)
        if path:
            per_run[START] = 1
            if allow is not None and allow.allows(path[-1], END):
                per_run[END] = 1
        for node, count in per_run.items():
            data.visits[node] += count
            data.visit_runs[node] += 1
            data.max_visits[node] = max(data.max_visits.get(node, 0), count)
        if run.verdict is None:
            continue
        flagged: set[tuple[str, str]] = set()
        for v in run.verdict.violations:
            if v.code == "dead_end":
                data.dead_ends[v.node] += 1
            if v.code not in LOOP_CODES:
                continue
            flagged.add((v.node, v.code))
            period = v.detail.get("period")
            if v.code == "content_cycle" and isinstance(period, int) and 0 < period <= v.step + 1:
                for node in path[v.step + 1 - period : v.step + 1]:
                    flagged.add((node, v.code))
        for node, code in flagged:
            data.looping.setdefault(node, Counter())[code] += 1
    return data


# -- layout ---------------------------------------------------------------------------------------
@dataclass
class _Box:
    cx: float
    cy: float
    w: float
    h: float

    @property
    def left(self) -> float:
        return self.cx - self.w / 2

    @property
    def right(self) -> float:
        return self.cx + self.w / 2

    @property
    def top(self) -> float:
        return self.cy - self.h / 2

    @property
    def bottom(self) -> float:
        return self.cy + self.h / 2


def _depths(nodes: Iterable[str], legal: Mapping[str, Sequence[str]],
            observed: Iterable[tuple[str, str]]) -> dict[str, int]:
    """BFS depth from __start__ over legal edges, then over observed ones; __end__ last."""
    depth: dict[str, int] = {START: 0}
    observed_out: dict[str, list[str]] = {}
    for source, target in sorted(observed):
        observed_out.setdefault(source, []).append(target)
    for adjacency in (legal, observed_out):
        frontier = sorted(depth, key=lambda n: (depth[n], n))
        while frontier:
            nxt: list[str] = []
            for node in frontier:
                for target in sorted(adjacency.get(node, ())):
                    if target != END and target not in depth:
                        depth[target] = depth[node] + 1
                        nxt.append(target)
            frontier = nxt
    deepest = max(depth.values())
    stray = sorted(n for n in nodes if n not in depth and n != END)
    for node in stray:  # reachable by nothing: one extra layer above __end__
        depth[node] = deepest + 1
    depth[END] = max(depth.values()) + 1
    return depth


def _node_lines(data: _GraphData, node: str) -> tuple[str, str]:
    if node in (START, END):
        return node, ""
    limit = data.allow.limits.get(node) if data.allow is not None else None
    limit_text = f" · limit {limit}" if limit is not None else ""
    if node in data.max_visits:
        return node, f"max {data.max_visits[node]}/run{limit_text}"
    return node, (f"limit {limit}" if limit is not None else "not visited")


def _layout(data: _GraphData, edges: Sequence[tuple[str, str]]) -> tuple[dict[str, _Box], dict[str, int]]:
    nodes = set(data.allow.nodes if data.allow is not None else ()) | {START, END}
    for source, target in edges:
        nodes.update((source, target))
    legal = data.allow.transitions if data.allow is not None else {}
    depth = _depths(nodes, legal, data.edge_counts)
    layers: dict[int, list[str]] = {}
    for node in sorted(nodes):
        layers.setdefault(depth[node], []).append(node)
    # One barycentre pass (parents' positions in the layer above), ties broken by name.
    preds: dict[str, list[str]] = {}
    for source, target in edges:
        preds.setdefault(target, []).append(source)
    position: dict[str, float] = {}
    for d in sorted(layers):
        layer = layers[d]

        def key(node: str, d: int = d) -> tuple[float, str]:
            above = [position[p] for p in preds.get(node, ()) if depth.get(p) == d - 1 and p in position]
            return (sum(above) / len(above) if above else math.inf, node)

        layer.sort(key=key)
        for i, node in enumerate(layer):
            position[node] = float(i)
    boxes: dict[str, _Box] = {}
    for d in sorted(layers):
        sizes = []
        for node in layers[d]:
            name, sub = _node_lines(data, node)
            if node in (START, END):
                sizes.append((len(name) * _NAME_CH * 0.85 + 26, _TERM_H))
            else:
                sizes.append((max(len(name) * _NAME_CH, len(sub) * _SUB_CH, 70.0) + 26, _NODE_H))
        total = sum(w for w, _ in sizes) + _NODE_GAP * (len(sizes) - 1)
        x = -total / 2
        for node, (w, h) in zip(layers[d], sizes, strict=True):
            boxes[node] = _Box(x + w / 2, d * _LAYER_GAP, w, h)
            x += w + _NODE_GAP
    return boxes, depth


@dataclass
class _EdgeShape:
    source: str
    target: str
    kind: Literal["straight", "loop", "same", "lane"]
    side: Side = "left"
    lane: int = 0
    d: str = ""
    label_xy: tuple[float, float] = (0.0, 0.0)
    label_anchor: str = "start"


def _f(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _classify(edges: Sequence[tuple[str, str]], depth: Mapping[str, int]) -> list[_EdgeShape]:
    shapes: list[_EdgeShape] = []
    for source, target in edges:
        ds, dt = depth[source], depth[target]
        if source == target:
            shapes.append(_EdgeShape(source, target, "loop"))
        elif dt == ds + 1:
            shapes.append(_EdgeShape(source, target, "straight"))
        elif dt == ds:
            shapes.append(_EdgeShape(source, target, "same"))
        else:  # back-edges on the left, forward skips on the right
            shapes.append(_EdgeShape(source, target, "lane", side="left" if dt < ds else "right"))
    return shapes


def _assign_lanes(lane_edges: Sequence[_EdgeShape], depth: Mapping[str, int]) -> dict[Side, int]:
    """Nested intervals, shortest innermost; intervals that touch never share a lane."""
    lanes: dict[Side, list[list[tuple[int, int]]]] = {"left": [], "right": []}
    for shape in lane_edges:
        lo, hi = sorted((depth[shape.source], depth[shape.target]))
        taken = lanes[shape.side]
        for index, intervals in enumerate(taken):
            if all(hi < a or lo > b for a, b in intervals):
                intervals.append((lo, hi))
                shape.lane = index
                break
        else:
            taken.append([(lo, hi)])
            shape.lane = len(taken) - 1
    return {side: len(taken) for side, taken in lanes.items()}


def _port_ys(lane_edges: Sequence[_EdgeShape], boxes: Mapping[str, _Box]) -> dict[tuple[int, str], float]:
    """Where each lane edge leaves / enters its node's side: spread evenly, ordered by the
    height of the other end so that lanes do not cross near the node."""
    ports: dict[tuple[str, Side], list[tuple[float, int, int, str]]] = {}
    for i, shape in enumerate(lane_edges):
        for node, other, role in ((shape.source, shape.target, "out"), (shape.target, shape.source, "in")):
            ports.setdefault((node, shape.side), []).append((boxes[other].cy, -shape.lane, i, role))
    found: dict[tuple[int, str], float] = {}
    for (node, _side), entries in ports.items():
        box = boxes[node]
        entries.sort()
        for k, (_, _, i, role) in enumerate(entries):
            found[(i, role)] = box.top + box.h * (k + 1) / (len(entries) + 1)
    return found


def _straight(shape: _EdgeShape, s: _Box, t: _Box) -> None:
    x1, y1, x2, y2 = s.cx, s.bottom, t.cx, t.top
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ex, ey = x2 - (x2 - x1) / length * _ARROW, y2 - (y2 - y1) / length * _ARROW
    shape.d = f"M{_f(x1)},{_f(y1)} L{_f(ex)},{_f(ey)}"
    nx, ny = (y2 - y1) / length, -(x2 - x1) / length  # the right-hand normal
    shape.label_xy = ((x1 + x2) / 2 + 7 * nx, (y1 + y2) / 2 + 7 * ny + 4)


def _self_loop(shape: _EdgeShape, s: _Box) -> None:
    a, b, top = s.right - 30, s.right - 8, s.top
    shape.d = (f"M{_f(a)},{_f(top)} C{_f(a)},{_f(top - 34)} {_f(b)},{_f(top - 34)} "
               f"{_f(b)},{_f(top - _ARROW)}")
    shape.label_xy = (s.right - 2, top - 20)


def _same_layer(shape: _EdgeShape, s: _Box, t: _Box, neighbours: bool) -> None:
    sign = 1.0 if t.cx > s.cx else -1.0
    shape.label_anchor = "middle"
    if neighbours:  # a short horizontal arrow, one rail per direction
        x1 = s.right if sign > 0 else s.left
        x2 = t.left if sign > 0 else t.right
        y = s.cy - 7 * sign
        shape.d = f"M{_f(x1)},{_f(y)} L{_f(x2 - sign * _ARROW)},{_f(y)}"
        shape.label_xy = ((x1 + x2) / 2, y - 5 if sign > 0 else y + 15)
    else:  # a curve under the layer
        x1, x2, y = s.cx, t.cx, s.bottom
        shape.d = (f"M{_f(x1)},{_f(y)} C{_f(x1)},{_f(y + 40)} {_f(x2)},{_f(y + 40)} "
                   f"{_f(x2)},{_f(y + _ARROW)}")
        shape.label_xy = ((x1 + x2) / 2, y + 36)


def _lane(shape: _EdgeShape, s: _Box, t: _Box, lx: float, ports: tuple[float, float]) -> None:
    """Out of the source's side, along the lane, into the target's side (rounded corners)."""
    y1, y2 = ports
    sign = -1.0 if shape.side == "left" else 1.0
    x1 = s.left if shape.side == "left" else s.right
    x2 = t.left if shape.side == "left" else t.right
    r = min(10.0, abs(y2 - y1) / 2)
    vy = 1.0 if y2 > y1 else -1.0
    shape.d = (
        f"M{_f(x1)},{_f(y1)} L{_f(lx - sign * r)},{_f(y1)} "
        f"Q{_f(lx)},{_f(y1)} {_f(lx)},{_f(y1 + vy * r)} L{_f(lx)},{_f(y2 - vy * r)} "
        f"Q{_f(lx)},{_f(y2)} {_f(lx - sign * r)},{_f(y2)} L{_f(x2 + sign * _ARROW)},{_f(y2)}"
    )
    shape.label_xy = (lx, (y1 + y2) / 2 + 4)
    shape.label_anchor = "middle"


def _shape_edges(edges: Sequence[tuple[str, str]], boxes: Mapping[str, _Box],
                 depth: Mapping[str, int]) -> tuple[list[_EdgeShape], float, float]:
    """Edge geometry, plus the drawing's left and right extents (lanes included)."""
    shapes = _classify(edges, depth)
    lane_edges = sorted(
        (s for s in shapes if s.kind == "lane"),
        key=lambda s: (abs(depth[s.source] - depth[s.target]), min(depth[s.source], depth[s.target]),
                       s.source, s.target),
    )
    lane_count = _assign_lanes(lane_edges, depth)
    ports = _port_ys(lane_edges, boxes)
    min_left = min(b.left for b in boxes.values())
    max_right = max(b.right for b in boxes.values())
    for shape in shapes:
        s, t = boxes[shape.source], boxes[shape.target]
        if shape.kind == "straight":
            _straight(shape, s, t)
        elif shape.kind == "loop":
            _self_loop(shape, s)
        elif shape.kind == "same":
            between = any(
                depth[n] == depth[shape.source] and min(s.cx, t.cx) < b.cx < max(s.cx, t.cx)
                for n, b in boxes.items()
            )
            _same_layer(shape, s, t, neighbours=not between)
        else:
            index = lane_edges.index(shape)
            if shape.side == "left":
                lx = min_left - _LANE_MARGIN - _LANE_GAP * shape.lane
            else:
                lx = max_right + _LANE_MARGIN + _LANE_GAP * shape.lane
            _lane(shape, s, t, lx, (ports[(index, "out")], ports[(index, "in")]))
    left, right = lane_count["left"], lane_count["right"]
    left_extent = min_left - (_LANE_MARGIN + _LANE_GAP * left if left else 0) - _MARGIN
    right_extent = max_right + (_LANE_MARGIN + _LANE_GAP * right if right else 0) + _MARGIN + 30
    return shapes, left_extent, right_extent


# -- drawing --------------------------------------------------------------------------------------
_EDGE_CLASSES = {"legal": "edge legal", "traversed": "edge legal traversed", "illegal": "edge illegal"}
_EDGE_NOTES = {"legal": "allowed, not taken", "traversed": "allowed", "illegal": "NOT in the allow-set"}


def _edge_order(data: _GraphData) -> list[tuple[str, str]]:
    """Allow-set edges in file order, then observed edges the set does not list."""
    legal = (
        [(s, t) for s, targets in data.allow.transitions.items() for t in targets]
        if data.allow is not None
        else []
    )
    seen = dict.fromkeys(legal)
    for hop in sorted(data.edge_counts):
        seen.setdefault(hop)
    return list(seen)


def _edge_status(data: _GraphData, shape: _EdgeShape) -> str:
    hop = (shape.source, shape.target)
    if not data.is_legal(*hop):
        return "illegal"
    return "traversed" if data.edge_counts.get(hop) else "legal"


def _edge_svg(data: _GraphData, prefix: str, number: int, shape: _EdgeShape) -> str:
    kind = _edge_status(data, shape)
    hop = (shape.source, shape.target)
    count = data.edge_counts.get(hop, 0)
    if kind == "traversed":
        width = min(2.5 + 1.2 * math.log2(count), 6.0)
    else:
        width = 3.5 if kind == "illegal" else 1.5
    dash = ' stroke-dasharray="7 5"' if kind == "illegal" else ""
    runs_note = f" in {data.edge_runs[hop]} run(s)" if count else ""
    color = COLORS[kind]
    parts = [
        f'<g class="{_EDGE_CLASSES[kind]}" id="{prefix}-edge-{number}" data-from="{_e(shape.source)}" '
        f'data-to="{_e(shape.target)}" data-count="{count}">'
        f"<title>{_e(shape.source)} → {_e(shape.target)}: {_EDGE_NOTES[kind]}; taken {count} time(s)"
        f"{runs_note}</title>"
        f'<path d="{shape.d}" fill="none" stroke="{color}" stroke-width="{width:.1f}"{dash} '
        f'stroke-linecap="round" stroke-linejoin="round" marker-end="url(#{prefix}-arrow-{kind})"/>'
    ]
    if count:
        lx, ly = shape.label_xy
        parts.append(
            f'<text class="count" x="{_f(lx)}" y="{_f(ly)}" text-anchor="{shape.label_anchor}" '
            f'fill="{color}" stroke="#ffffff" stroke-width="4" paint-order="stroke" '
            f'font-size="12" font-weight="700">×{count}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _node_svg(data: _GraphData, node: str, box: _Box) -> str:
    c = COLORS
    terminal = node in (START, END)
    unknown = not terminal and (data.allow is None or node not in data.allow.nodes)
    classes = ["node"]
    fill, stroke, text_fill, stroke_w, dash = c["unvisited"], c["node_stroke"], c["text"], 1.2, ""
    tip = [node]
    if terminal:
        classes.append("terminal")
        fill = stroke = c["terminal"]
        text_fill = "#ffffff"
    if node in data.max_visits:
        classes.append("visited")
        fill = fill if terminal else c["visited"]
        tip.append(f"{data.visits[node]} visit(s) in {data.visit_runs[node]} run(s), "
                   f"max {data.max_visits[node]} in one run")
    if unknown:
        classes.append("unknown")
        fill = stroke = c["illegal"]
        text_fill = "#ffffff"
        tip.append("not in the allow-set")
    if node in data.looping:
        classes.append("looping")
        fill, text_fill = c["looping"], c["text"]
        tip.append("flagged: " + ", ".join(
            f"{code} ({n} run(s))" for code, n in sorted(data.looping[node].items())))
    if node in data.dead_ends:
        classes.append("dead-end")
        stroke, stroke_w, dash = c["dead_end"], 2.5, ' stroke-dasharray="5 3"'
        tip.append(f"dead end in {data.dead_ends[node]} run(s)")
    name, sub = _node_lines(data, node)
    radius = box.h / 2 if terminal else 6
    parts = [
        f'<g class="{" ".join(classes)}" data-node="{_e(node)}" '
        f'data-visits="{data.visits.get(node, 0)}" data-max-visits="{data.max_visits.get(node, 0)}">'
        f"<title>{_e('; '.join(tip))}</title>"
        f'<rect x="{_f(box.left)}" y="{_f(box.top)}" width="{_f(box.w)}" height="{_f(box.h)}" '
        f'rx="{_f(radius)}" fill="{fill}" stroke="{stroke}" stroke-width="{stroke_w}"{dash}/>'
    ]
    if sub:
        parts.append(
            f'<text class="name" x="{_f(box.cx)}" y="{_f(box.cy - 3)}" text-anchor="middle" '
            f'fill="{text_fill}" font-size="13" font-weight="700">{_e(name)}</text>'
            f'<text class="visits" x="{_f(box.cx)}" y="{_f(box.cy + 13)}" text-anchor="middle" '
            f'fill="{text_fill}" font-size="11">{_e(sub)}</text>'
        )
    else:
        parts.append(
            f'<text class="name" x="{_f(box.cx)}" y="{_f(box.cy + 4.5)}" text-anchor="middle" '
            f'fill="{text_fill}" font-size="12" font-weight="700">{_e(name)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _graph_svg(index: int, data: _GraphData) -> str:
    edges = _edge_order(data)
    boxes, depth = _layout(data, edges)
    shapes, x_min, x_max = _shape_edges(edges, boxes, depth)
    y_min = min(b.top for b in boxes.values()) - _MARGIN - 30
    y_max = max(b.bottom for b in boxes.values()) + _MARGIN + 20
    width, height = x_max - x_min, y_max - y_min
    prefix = f"g{index}"
    out = [
        f'<svg class="graph" id="{prefix}" data-graph="{_e(data.name)}" width="{_f(width)}" '
        f'height="{_f(height)}" viewBox="{_f(x_min)} {_f(y_min)} {_f(width)} {_f(height)}" '
        f'role="img" aria-label="allow-set of {_e(data.name)} with observed paths"><defs>',
    ]
    for kind in ("legal", "traversed", "illegal"):
        out.append(
            f'<marker id="{prefix}-arrow-{kind}" viewBox="0 0 10 10" refX="1" refY="5" '
            f'markerWidth="{_ARROW + 1:.0f}" markerHeight="{_ARROW + 1:.0f}" markerUnits="userSpaceOnUse" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{COLORS[kind]}"/></marker>'
        )
    out.append('</defs><g class="edges">')
    paint_order = {"legal": 0, "traversed": 1, "illegal": 2}  # illegal hops on top
    numbered = sorted(enumerate(shapes), key=lambda item: (paint_order[_edge_status(data, item[1])], item[0]))
    out += [_edge_svg(data, prefix, number, shape) for number, shape in numbered]
    out.append('</g><g class="nodes">')
    out += [_node_svg(data, node, boxes[node])
            for node in sorted(boxes, key=lambda n: (depth[n], boxes[n].cx))]
    out.append("</g></svg>")
    return "".join(out)


def _findings(data: _GraphData) -> str:
    parts: list[str] = []
    chips = "".join(
        f'<li><code>{_e(r.run_id or r.source)}</code> '
        f'<span class="verdict {_verdict_label(r)}">{_verdict_label(r)}</span>'
        + (f' <span class="muted">{_e(", ".join(r.verdict.hard_codes))}</span>'
           if r.verdict is not None and r.verdict.hard_codes else "")
        + "</li>"
        for r in data.runs
    )
    parts.append(f"<h4>Runs ({len(data.runs)})</h4><ul>{chips}</ul>")
    if data.illegal_runs:
        items = "".join(
            f"<li><code>{_e(s)} → {_e(t)}</code> ×{data.edge_counts[(s, t)]} "
            f'<span class="muted">({_e(", ".join(ids))})</span></li>'
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


def _graph_section(index: int, data: _GraphData) -> str:
    allow = data.allow
    assert allow is not None
    n_edges = sum(len(t) for t in allow.transitions.values())
    passed = sum(1 for r in data.runs if r.verdict is not None and r.verdict.passed)
    return (
        f'<section class="graph-section" id="graph-{index}" data-graph="{_e(data.name)}">'
        f"<h3>{_e(data.name)} <span class=\"muted\">— {len(data.runs)} run(s), {passed} passed; "
        f"allow-set: {len(allow.nodes)} nodes, {n_edges} edges</span></h3>"
        f'<div class="graph-row"><div class="diagram">{_graph_svg(index, data)}</div>'
        f'<div class="findings">{_findings(data)}</div></div></section>'
    )


def _no_allowset_section(name: str | None, runs: Sequence[ReportRun]) -> str:
    data = _collect(name or "", None, runs)
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
        f'<div class="findings">{_findings(data)}'
        + (f'<p class="muted">Visited nodes: {visited}</p>' if visited else "")
        + "</div></section>"
    )
