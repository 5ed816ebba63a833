"""The report as a directory of static pages: one overview, run lists, one page per run.

``write_report(runs, decision, allow_sets, overview)`` writes:

* ``overview`` (e.g. ``report.html``): the decision and its evidence (the window, the
  counts, the missing-evidence banner), one diagram per graph with an allow-set, the
  failing runs (the first :data:`OVERVIEW_FAILING`, the rest on the failing-run pages),
  and links to every page of the run list. Its size does not grow with the number of
  passing runs: at 50,000 runs it stays far below 10 MB (``benchmarks/report_scale.py``).
* ``<stem>_pages/runs-0001.html``…: every run, failing first, :data:`PAGE_SIZE` a page,
  each with links to the others (the list is paginated, and the failing-run pages
  ``failing-0001.html``… are the same list filtered to the runs that did not pass);
* ``<stem>_pages/run-000001.html``…: one drill-down page per run: its violations with
  step indices, its path drawn on its graph's allow-set diagram and as a step list, its
  judge scores, and its missing evidence.

Static files only: no script, no server, no URL but relative links between the pages
(the Content-Security-Policy of every page is ``default-src 'none'``). Never step text:
node names, codes, counts, step indices and digests; every value is HTML-escaped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from liveguard.core.allowset import AllowSet
from liveguard.core.model import Verdict
from liveguard.evaluate.gate import GateDecision, missing_lines
from liveguard.report.aggregate import ReportRow, collect, failing_first
from liveguard.report.aggregate import label as verdict_label
from liveguard.report.html import (
    _CSS,
    _decision_block,
    _graph_section,
    _meta,
    _missing_banner,
    _no_allowset_section,
    _run_body,
    _violations_html,
)
from liveguard.report.svg import esc as _e
from liveguard.report.svg import graph_svg, legend

__all__ = ["OVERVIEW_FAILING", "PAGE_SIZE", "ReportFiles", "pages_dir", "write_report"]

PAGE_SIZE = 500
"""Runs per page of the run list."""
OVERVIEW_FAILING = 200
"""Failing runs listed on the overview itself (all of them are on the failing-run pages)."""
_RUNS_PER_GRAPH = 50
"""Runs named in a graph's findings on the overview (failing first)."""

_EXTRA_CSS = """
nav.pages{margin:8px 0;font-size:13px;line-height:1.9}
nav.pages a,nav.pages b{display:inline-block;min-width:2.4em;text-align:center;margin-right:2px;
 padding:0 4px;border:1px solid #d0d7de;border-radius:4px;text-decoration:none}
nav.pages b{background:#1f6feb;color:#fff;border-color:#1f6feb}
a{color:#0969da}
table.scores td{font-size:12.5px}
.crumbs{font-size:13px;margin-bottom:8px}
"""


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_report` wrote."""

    overview: Path
    pages: Path
    run_pages: int
    list_pages: int
    failing_pages: int


def pages_dir(overview: Path) -> Path:
    """The folder of the overview's other pages: ``report.html`` → ``report_pages/``."""
    return overview.with_name(f"{overview.stem}_pages")


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{_CSS}{_EXTRA_CSS}</style>\n</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )


def _run_file(number: int) -> str:
    return f"run-{number:06d}.html"


def _list_file(kind: str, page: int) -> str:
    return f"{kind}-{page:04d}.html"


def _nav(kind: str, pages: int, current: int | None, prefix: str) -> str:
    """Links to every page of one list (``kind``: runs or failing)."""
    links = [
        f"<b>{n}</b>" if n == current else f'<a href="{prefix}{_list_file(kind, n)}" data-page="{n}">{n}</a>'
        for n in range(1, pages + 1)
    ]
    return f'<nav class="pages" data-list="{kind}" data-pages="{pages}">{"".join(links)}</nav>'


def _row(number: int, run: ReportRow, prefix: str) -> str:
    """One run in a list: id (linked to its page), graph, verdict, score, violations."""
    mark = verdict_label(run)
    verdict = run.verdict
    link = (f'<a class="run-link" href="{prefix}{_run_file(number)}" data-run="{_e(run.run_id or "")}">'
            f"<code>{_e(run.run_id or run.source)}</code></a>")
    head = (f'<tr class="run {mark}" data-run="{_e(run.run_id or "")}"><td class="run-id">{link}</td>'
            f'<td>{_e(run.graph or "—")}</td><td class="verdict {mark}">{mark}</td>')
    if verdict is None:
        error = _e(run.error or "not scored")
        return f'{head}<td colspan="2"><code>{_e(run.source)}</code>: {error}</td></tr>'
    score = "—" if verdict.composite is None else f"{verdict.composite:.2f}"
    return f"{head}<td>{score}</td><td>{_violations_html(verdict)}</td></tr>"


def _table(rows: Sequence[str]) -> str:
    return (
        '<table class="runs"><thead><tr><th>run</th><th>graph</th><th>verdict</th><th>score</th>'
        '<th>violations <span class="muted">code@step (node)</span></th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _scores(verdict: Verdict) -> str:
    """The judge scores of one run, and how it was judged (codes and numbers only)."""
    def num(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    if verdict.judge_error:
        status = "judge error"
    elif verdict.judges_skipped:
        status = f"judges skipped: {verdict.judges_skipped}"
    elif verdict.structural_only:
        status = "structural only (judges not asked)"
    else:
        status = "judged" if verdict.judged else "not judged"
    rows = "".join(
        f'<tr data-level="{_e(name)}"><td><code>{_e(name)}</code></td><td>{num(level.score)}</td>'
        f"<td>{num(level.confidence)}</td><td><code>{_e(level.reason)}</code></td>"
        f"<td>{_e(level.source)}</td></tr>"
        for name, level in sorted(verdict.levels.items())
    )
    table = (
        '<table class="scores"><thead><tr><th>level</th><th>score</th><th>confidence</th><th>reason</th>'
        f"<th>source</th></tr></thead><tbody>{rows}</tbody></table>" if rows
        else '<p class="muted">No judge scores.</p>'
    )
    return (
        f'<section class="judges"><h2>Judge scores</h2><p data-judges="{_e(status)}">{_e(status)}; '
        f"composite <b data-composite>{num(verdict.composite)}</b>, confidence {num(verdict.confidence)}, "
        f"reason <code>{_e(verdict.reason)}</code>, prompt version <code>{_e(verdict.prompt_version)}</code>"
        f"</p>{table}</section>"
    )


def _missing(verdict: Verdict) -> str:
    if not verdict.missing:
        return ('<section class="missing-evidence" data-missing="0"><h2>Missing evidence</h2>'
                '<p class="muted">None.</p></section>')
    codes = "".join(f"<li><code>{_e(m)}</code></li>" for m in verdict.missing)
    lines = "".join(f"<li>{_e(line)}</li>" for line in missing_lines([verdict]))
    return (
        f'<section class="missing-evidence" data-missing="{len(verdict.missing)}"><h2>Missing evidence</h2>'
        f'<div class="missing" role="alert"><b>This run is not passed on complete evidence</b>'
        f"<ul>{lines}</ul></div><ul>{codes}</ul></section>"
    )


def _run_page(number: int, run: ReportRow, allow_sets: Mapping[str, AllowSet], list_page: int,
              overview_name: str) -> str:
    mark = verdict_label(run)
    verdict = run.verdict
    crumbs = (f'<p class="crumbs"><a href="../{_e(overview_name)}" data-nav="overview">overview</a> · '
              f'<a href="{_list_file("runs", list_page)}" data-nav="list">run list, page {list_page}</a></p>')
    head = (
        f'<header>{crumbs}<h1 data-run="{_e(run.run_id or "")}" data-verdict="{mark}">'
        f'<code>{_e(run.run_id or run.source)}</code> <span class="verdict {mark}">{mark}</span></h1>'
        f'<p class="muted">{_e(run.graph or "no graph")} · {len(run.path)} step(s) · '
        f"{_e(run.source)}</p></header>"
    )
    if verdict is None:
        body = f'<p><code>{_e(run.source)}</code>: {_e(run.error or "not scored")}</p>'
        return _page(f"{run.run_id or run.source} — liveguard", f"{head}<main>{body}</main>")
    allow = allow_sets.get(run.graph) if run.graph is not None else None
    if allow is not None and run.path:
        diagram = (
            '<section class="run-diagram"><h2>Path on the allow-set</h2>'
            '<p class="muted">Blue: allowed hops this run took (×N times); red dashed: illegal hops; '
            "orange: looping nodes; purple outline: a dead end.</p>"
            f"<div class=\"diagram\">{graph_svg(1, collect(run.graph or '', allow, [run]))}"
            "</div></section>"
        )
    elif allow is None:
        diagram = ('<section class="run-diagram"><h2>Path on the allow-set</h2><p class="muted">'
                   "No allow-set for this graph: transitions not checked, no diagram.</p></section>")
    else:
        diagram = ""
    violations = ('<section class="violations"><h2>Violations and path</h2>'
                  f"{_run_body(run, allow_sets)}</section>")
    body = f"<main>{_missing(verdict)}{violations}{diagram}{_scores(verdict)}</main>"
    return _page(f"{run.run_id or run.source} — liveguard", head + body)


def _list_page(kind: str, page: int, pages: int, entries: Sequence[tuple[int, ReportRow]], *,
               overview_name: str, title: str, first: int) -> str:
    heading = "All runs, failing first" if kind == "runs" else "Runs that did not pass"
    nav = _nav(kind, pages, page, "")
    body = (
        f'<p class="crumbs"><a href="../{_e(overview_name)}" data-nav="overview">overview</a></p>'
        f"<h1>{_e(heading)} <span class=\"muted\">— page {page} of {pages}, runs {first}–"
        f"{first + len(entries) - 1}</span></h1>{nav}"
        f"{_table([_row(n, run, '') for n, run in entries])}{nav}"
    )
    return _page(f"{title}: {heading}, page {page}", body)


def write_report(
    runs: Sequence[ReportRow],
    decision: GateDecision | None,
    allow_sets: Mapping[str, AllowSet],
    overview: str | os.PathLike[str],
    *,
    title: str = "liveguard report",
    generated_at: datetime | None = None,
    policy: str | None = None,
    inputs: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
    page_size: int = PAGE_SIZE,
    overview_failing: int = OVERVIEW_FAILING,
) -> ReportFiles:
    """Write the overview at ``overview`` and its pages beside it (see the module docstring).

    ``progress(n)`` is called with the number of run pages written so far. ``page_size``
    runs go on a page of the run list; the overview lists the first ``overview_failing``
    runs that did not pass.
    """
    if page_size < 1 or overview_failing < 0:
        raise ValueError("page_size must be >= 1 and overview_failing >= 0")
    target = Path(overview)
    folder = pages_dir(target)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.html"):  # a previous report's pages
        stale.unlink()
    prefix = f"{folder.name}/"
    ordered = failing_first(runs)
    numbered = list(enumerate(ordered, start=1))
    failing = [(n, r) for n, r in numbered if verdict_label(r) != "PASS"]
    list_pages = max(1, math.ceil(len(numbered) / page_size))
    failing_pages = math.ceil(len(failing) / page_size)

    for number, run in numbered:
        page = _run_page(number, run, allow_sets, (number - 1) // page_size + 1, target.name)
        (folder / _run_file(number)).write_text(page, encoding="utf-8")
        if progress is not None:
            progress(number)
    lists: list[tuple[str, list[tuple[int, ReportRow]], int]] = [
        ("runs", numbered, list_pages), ("failing", failing, failing_pages)]
    for kind, entries, pages in lists:
        for number in range(1, pages + 1):
            chunk = entries[(number - 1) * page_size : number * page_size]
            (folder / _list_file(kind, number)).write_text(
                _list_page(kind, number, pages, chunk, overview_name=target.name, title=title,
                           first=(number - 1) * page_size + 1),
                encoding="utf-8")

    groups: dict[str | None, list[ReportRow]] = {}
    for run in ordered:
        if run.graph is not None or run.verdict is not None:
            groups.setdefault(run.graph, []).append(run)
    with_set = sorted(g for g in groups if g is not None and g in allow_sets)
    without_set = sorted((g for g in groups if g is None or g not in allow_sets), key=lambda g: g or "")
    numbers = {id(run): n for n, run in numbered}

    def link(run: ReportRow) -> str:
        return f"{prefix}{_run_file(numbers[id(run)])}"

    sections = [
        _graph_section(index, collect(name, allow_sets[name], groups[name]),
                       listed=_RUNS_PER_GRAPH, link=link)
        for index, name in enumerate(with_set, start=1)
    ]
    sections += [_no_allowset_section(name, groups[name], listed=_RUNS_PER_GRAPH, link=link)
                 for name in without_set]
    shown = failing[:overview_failing]
    more = len(failing) - len(shown)
    failing_html = (
        f'<section class="failing"><h2>Runs that did not pass <span class="muted">({len(failing)}; '
        "each links to its page)</span></h2>"
        + (_table([_row(n, r, prefix) for n, r in shown]) if shown else '<p class="muted">None.</p>')
        + (f'<p>and {more} more: {_nav("failing", failing_pages, None, prefix)}</p>' if more else "")
        + "</section>"
    )
    all_runs = (
        f'<section class="runs"><h2>All runs <span class="muted">({len(numbered)}, failing first, '
        f"{page_size} a page)</span></h2>{_nav('runs', list_pages, None, prefix)}</section>"
    )
    body = "\n".join(part for part in (
        f"<header>{_missing_banner(decision)}<h1>{_e(title)}</h1>"
        f"{_meta(ordered, generated_at, policy, inputs)}{_decision_block(decision, ordered)}</header>",
        "<main>",
        failing_html,
        '<section class="graphs"><h2>Graphs</h2>',
        legend() if with_set else "",
        *sections,
        "</section>" if sections else '<p class="muted">No runs.</p></section>',
        all_runs,
        "</main>",
    ) if part)
    target.write_text(_page(title, body), encoding="utf-8")
    return ReportFiles(target, folder, len(numbered), list_pages, failing_pages)
