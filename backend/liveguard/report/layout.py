"""The report's diagram geometry: layered node boxes and edge paths, in pixels.

Layout is layered by BFS depth from ``__start__`` over the allow-set's edges, then over the
observed ones; ``__end__`` sits at the bottom. Back-edges run in lanes on the left,
forward skips in lanes on the right, self-loops sit on a node's top-right corner. Node
labels are monospace so widths are estimated without a browser. Pure arithmetic: no HTML.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from liveguard.core.allowset import END, START
from liveguard.report.aggregate import GraphData

# Geometry (px). Node labels are monospace so widths can be estimated without a browser.
_NAME_CH = 7.9  # 13px monospace
_SUB_CH = 6.7  # 11px monospace
_NODE_H = 42.0
_TERM_H = 26.0
_LAYER_GAP = 88.0
_NODE_GAP = 36.0
_LANE_GAP = 22.0
_LANE_MARGIN = 26.0
MARGIN = 18.0
ARROW = 9.0

Side = Literal["left", "right"]



@dataclass
class Box:
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


def node_lines(data: GraphData, node: str) -> tuple[str, str]:
    if node in (START, END):
        return node, ""
    limit = data.allow.limits.get(node) if data.allow is not None else None
    limit_text = f" · limit {limit}" if limit is not None else ""
    if node in data.max_visits:
        return node, f"max {data.max_visits[node]}/run{limit_text}"
    return node, (f"limit {limit}" if limit is not None else "not visited")


def layout(data: GraphData, edges: Sequence[tuple[str, str]]) -> tuple[dict[str, Box], dict[str, int]]:
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
    boxes: dict[str, Box] = {}
    for d in sorted(layers):
        sizes = []
        for node in layers[d]:
            name, sub = node_lines(data, node)
            if node in (START, END):
                sizes.append((len(name) * _NAME_CH * 0.85 + 26, _TERM_H))
            else:
                sizes.append((max(len(name) * _NAME_CH, len(sub) * _SUB_CH, 70.0) + 26, _NODE_H))
        total = sum(w for w, _ in sizes) + _NODE_GAP * (len(sizes) - 1)
        x = -total / 2
        for node, (w, h) in zip(layers[d], sizes, strict=True):
            boxes[node] = Box(x + w / 2, d * _LAYER_GAP, w, h)
            x += w + _NODE_GAP
    return boxes, depth


@dataclass
class EdgeShape:
    source: str
    target: str
    kind: Literal["straight", "loop", "same", "lane"]
    side: Side = "left"
    lane: int = 0
    d: str = ""
    label_xy: tuple[float, float] = (0.0, 0.0)
    label_anchor: str = "start"


def fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _classify(edges: Sequence[tuple[str, str]], depth: Mapping[str, int]) -> list[EdgeShape]:
    shapes: list[EdgeShape] = []
    for source, target in edges:
        ds, dt = depth[source], depth[target]
        if source == target:
            shapes.append(EdgeShape(source, target, "loop"))
        elif dt == ds + 1:
            shapes.append(EdgeShape(source, target, "straight"))
        elif dt == ds:
            shapes.append(EdgeShape(source, target, "same"))
        else:  # back-edges on the left, forward skips on the right
            shapes.append(EdgeShape(source, target, "lane", side="left" if dt < ds else "right"))
    return shapes


def _assign_lanes(lane_edges: Sequence[EdgeShape], depth: Mapping[str, int]) -> dict[Side, int]:
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


def _port_ys(lane_edges: Sequence[EdgeShape], boxes: Mapping[str, Box]) -> dict[tuple[int, str], float]:
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


def _straight(shape: EdgeShape, s: Box, t: Box) -> None:
    x1, y1, x2, y2 = s.cx, s.bottom, t.cx, t.top
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    ex, ey = x2 - (x2 - x1) / length * ARROW, y2 - (y2 - y1) / length * ARROW
    shape.d = f"M{fmt(x1)},{fmt(y1)} L{fmt(ex)},{fmt(ey)}"
    nx, ny = (y2 - y1) / length, -(x2 - x1) / length  # the right-hand normal
    shape.label_xy = ((x1 + x2) / 2 + 7 * nx, (y1 + y2) / 2 + 7 * ny + 4)


def _self_loop(shape: EdgeShape, s: Box) -> None:
    a, b, top = s.right - 30, s.right - 8, s.top
    shape.d = (f"M{fmt(a)},{fmt(top)} C{fmt(a)},{fmt(top - 34)} {fmt(b)},{fmt(top - 34)} "
               f"{fmt(b)},{fmt(top - ARROW)}")
    shape.label_xy = (s.right - 2, top - 20)


def _same_layer(shape: EdgeShape, s: Box, t: Box, neighbours: bool) -> None:
    sign = 1.0 if t.cx > s.cx else -1.0
    shape.label_anchor = "middle"
    if neighbours:  # a short horizontal arrow, one rail per direction
        x1 = s.right if sign > 0 else s.left
        x2 = t.left if sign > 0 else t.right
        y = s.cy - 7 * sign
        shape.d = f"M{fmt(x1)},{fmt(y)} L{fmt(x2 - sign * ARROW)},{fmt(y)}"
        shape.label_xy = ((x1 + x2) / 2, y - 5 if sign > 0 else y + 15)
    else:  # a curve under the layer
        x1, x2, y = s.cx, t.cx, s.bottom
        shape.d = (f"M{fmt(x1)},{fmt(y)} C{fmt(x1)},{fmt(y + 40)} {fmt(x2)},{fmt(y + 40)} "
                   f"{fmt(x2)},{fmt(y + ARROW)}")
        shape.label_xy = ((x1 + x2) / 2, y + 36)


def _lane(shape: EdgeShape, s: Box, t: Box, lx: float, ports: tuple[float, float]) -> None:
    """Out of the source's side, along the lane, into the target's side (rounded corners)."""
    y1, y2 = ports
    sign = -1.0 if shape.side == "left" else 1.0
    x1 = s.left if shape.side == "left" else s.right
    x2 = t.left if shape.side == "left" else t.right
    r = min(10.0, abs(y2 - y1) / 2)
    vy = 1.0 if y2 > y1 else -1.0
    shape.d = (
        f"M{fmt(x1)},{fmt(y1)} L{fmt(lx - sign * r)},{fmt(y1)} "
        f"Q{fmt(lx)},{fmt(y1)} {fmt(lx)},{fmt(y1 + vy * r)} L{fmt(lx)},{fmt(y2 - vy * r)} "
        f"Q{fmt(lx)},{fmt(y2)} {fmt(lx - sign * r)},{fmt(y2)} L{fmt(x2 + sign * ARROW)},{fmt(y2)}"
    )
    shape.label_xy = (lx, (y1 + y2) / 2 + 4)
    shape.label_anchor = "middle"


def shape_edges(edges: Sequence[tuple[str, str]], boxes: Mapping[str, Box],
                 depth: Mapping[str, int]) -> tuple[list[EdgeShape], float, float]:
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
    left_extent = min_left - (_LANE_MARGIN + _LANE_GAP * left if left else 0) - MARGIN
    right_extent = max_right + (_LANE_MARGIN + _LANE_GAP * right if right else 0) + MARGIN + 30
    return shapes, left_extent, right_extent


