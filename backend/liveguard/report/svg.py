"""The report's SVG: an allow-set diagram with the observed paths drawn on it, and its legend.

Geometry comes from :mod:`liveguard.report.layout`, the counts from
:mod:`liveguard.report.aggregate`; this module only draws (the classes and data attributes
of the encoding are listed in :mod:`liveguard.report`). The page around it is
:mod:`liveguard.report.html`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

from liveguard.cli.terminal import visible_xml
from liveguard.core.allowset import END, START
from liveguard.report.aggregate import GraphData
from liveguard.report.layout import ARROW, MARGIN, Box, EdgeShape, fmt, layout, node_lines, shape_edges

__all__ = ["COLORS", "esc", "graph_svg", "legend"]

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


def esc(value: object) -> str:
    """``value`` as text, escaped for HTML and SVG (attribute values included); a character XML
    1.0 forbids (NUL, ESC, a lone surrogate ...), DEL or a C1 control is written as a visible
    escape (:func:`liveguard.cli.terminal.visible_xml`), never raw."""
    return html.escape(visible_xml(value), quote=True)


# -- drawing --------------------------------------------------------------------------------------
_EDGE_CLASSES = {"legal": "edge legal", "traversed": "edge legal traversed", "illegal": "edge illegal"}
_EDGE_NOTES = {"legal": "allowed, not taken", "traversed": "allowed", "illegal": "NOT in the allow-set"}


def _edge_order(data: GraphData) -> list[tuple[str, str]]:
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


def _edge_status(data: GraphData, shape: EdgeShape) -> str:
    hop = (shape.source, shape.target)
    if not data.is_legal(*hop):
        return "illegal"
    return "traversed" if data.edge_counts.get(hop) else "legal"


def _edge_svg(data: GraphData, prefix: str, number: int, shape: EdgeShape) -> str:
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
        f'<g class="{_EDGE_CLASSES[kind]}" id="{prefix}-edge-{number}" data-from="{esc(shape.source)}" '
        f'data-to="{esc(shape.target)}" data-count="{count}">'
        f"<title>{esc(shape.source)} → {esc(shape.target)}: {_EDGE_NOTES[kind]}; taken {count} time(s)"
        f"{runs_note}</title>"
        f'<path d="{shape.d}" fill="none" stroke="{color}" stroke-width="{width:.1f}"{dash} '
        f'stroke-linecap="round" stroke-linejoin="round" marker-end="url(#{prefix}-arrow-{kind})"/>'
    ]
    if count:
        lx, ly = shape.label_xy
        parts.append(
            f'<text class="count" x="{fmt(lx)}" y="{fmt(ly)}" text-anchor="{shape.label_anchor}" '
            f'fill="{color}" stroke="#ffffff" stroke-width="4" paint-order="stroke" '
            f'font-size="12" font-weight="700">×{count}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _node_svg(data: GraphData, node: str, box: Box) -> str:
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
    name, sub = node_lines(data, node)
    radius = box.h / 2 if terminal else 6
    parts = [
        f'<g class="{" ".join(classes)}" data-node="{esc(node)}" '
        f'data-visits="{data.visits.get(node, 0)}" data-max-visits="{data.max_visits.get(node, 0)}">'
        f"<title>{esc('; '.join(tip))}</title>"
        f'<rect x="{fmt(box.left)}" y="{fmt(box.top)}" width="{fmt(box.w)}" height="{fmt(box.h)}" '
        f'rx="{fmt(radius)}" fill="{fill}" stroke="{stroke}" stroke-width="{stroke_w}"{dash}/>'
    ]
    if sub:
        parts.append(
            f'<text class="name" x="{fmt(box.cx)}" y="{fmt(box.cy - 3)}" text-anchor="middle" '
            f'fill="{text_fill}" font-size="13" font-weight="700">{esc(name)}</text>'
            f'<text class="visits" x="{fmt(box.cx)}" y="{fmt(box.cy + 13)}" text-anchor="middle" '
            f'fill="{text_fill}" font-size="11">{esc(sub)}</text>'
        )
    else:
        parts.append(
            f'<text class="name" x="{fmt(box.cx)}" y="{fmt(box.cy + 4.5)}" text-anchor="middle" '
            f'fill="{text_fill}" font-size="12" font-weight="700">{esc(name)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def graph_svg(index: int, data: GraphData) -> str:
    edges = _edge_order(data)
    boxes, depth = layout(data, edges)
    shapes, x_min, x_max = shape_edges(edges, boxes, depth)
    y_min = min(b.top for b in boxes.values()) - MARGIN - 30
    y_max = max(b.bottom for b in boxes.values()) + MARGIN + 20
    width, height = x_max - x_min, y_max - y_min
    prefix = f"g{index}"
    out = [
        f'<svg class="graph" id="{prefix}" data-graph="{esc(data.name)}" width="{fmt(width)}" '
        f'height="{fmt(height)}" viewBox="{fmt(x_min)} {fmt(y_min)} {fmt(width)} {fmt(height)}" '
        f'role="img" aria-label="allow-set of {esc(data.name)} with observed paths"><defs>',
    ]
    for kind in ("legal", "traversed", "illegal"):
        out.append(
            f'<marker id="{prefix}-arrow-{kind}" viewBox="0 0 10 10" refX="1" refY="5" '
            f'markerWidth="{ARROW + 1:.0f}" markerHeight="{ARROW + 1:.0f}" markerUnits="userSpaceOnUse" '
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


def legend() -> str:
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
        f"<span>{swatch(svg)}{esc(text)}</span>" for svg, text in items
    ) + "</div>"
