"""The static HTML report: gate decision, verdicts, and allow-set diagrams with observed paths.

Two forms. ``write_report(runs, decision, allow_sets, "report.html")`` (what ``liveguard
report`` writes) is a directory of static pages that scales to 50,000 runs and more: an
overview (decision, evidence, per-graph diagrams, the failing runs, links to the pages of
the run list) and, in ``report_pages/``, the paginated run lists and one drill-down page
per run (its violations with step indices, its path on the allow-set diagram, its judge
scores, its missing evidence); see :mod:`liveguard.report.site`. ``render_report`` below
is the one-page form for a handful of runs (every run's section on one page).

Four modules: :mod:`~liveguard.report.aggregate` (what the page shows, read from the
verdicts' violations), :mod:`~liveguard.report.layout` (the diagram's geometry),
:mod:`~liveguard.report.svg` (the diagram and its legend) and :mod:`~liveguard.report.html`
(the page; :mod:`~liveguard.report.site` the directory of pages). Runs are listed failing
first; each run has a section with its node path, the violation steps marked, and the violations' codes,
counts, step indices and evidence digests. The header names the time, the liveguard
version, the policy, the prompt version and the inputs; a decision carrying ``missing``
evidence gets a banner above everything.

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
  thicker with the count, labelled ``×N``), ``illegal`` (a hop an ``illegal_transition``
  violation fired on, or one the allow-set does not list: red, dashed). Layout is layered
  by BFS depth from ``__start__``; ``__end__`` sits at the bottom; back-edges run in lanes
  on the left, forward skips in lanes on the right, self-loops sit on a node's top-right
  corner.

A run's observed path is ``__start__`` → its steps' nodes → ``__end__``; the last hop is
drawn only when the allow-set lets the last node finish (the Monitor's own notion of a
finished run: anything else is a ``dead_end``).
"""

from __future__ import annotations

from liveguard.report.aggregate import LOOP_CODES, ReportRow, ReportRun
from liveguard.report.html import render_report
from liveguard.report.site import ReportFiles, write_report
from liveguard.report.svg import COLORS

__all__ = ["COLORS", "LOOP_CODES", "ReportFiles", "ReportRow", "ReportRun", "render_report", "write_report"]
