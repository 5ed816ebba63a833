"""The HTML report: structure from the golden runs, escaping, privacy, and a real render.

The render test opens the report in headless Chromium from Debian's packages (``.ci/run``
installs it), takes a screenshot and decodes the PNG with the standard library to check
that the diagrams were drawn: enough pixels of the illegal-edge red, the looping-node
orange and the traversed-edge blue, compared with a control render of the same page
with its diagrams removed.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import re
import signal
import struct
import subprocess
import tempfile
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest

from liveguard import Policy, Step, TrajectoryReadError, check_trajectory, read_jsonl
from liveguard.core.allowset import END, START, AllowSet, load_allowsets
from liveguard.core.model import LevelScore, Verdict
from liveguard.evaluate.gate import GateDecision, decide
from liveguard.report import COLORS, ReportRun, render_report, write_report
from liveguard.report.aggregate import failing_first
from prereq import require_chromium

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1280, 2400


# -- building a report from the golden datasets ------------------------------------------------
def verdict_for(run_id: str, graph: str | None, steps: Sequence[Step], policy: Policy,
                allow: AllowSet | None) -> Verdict:
    violations = check_trajectory(steps, policy, allow)
    return Verdict(
        run_id=run_id, graph=graph, passed=not any(v.hard for v in violations), violations=violations,
        prompt_version="none", reason="deterministic", judges_skipped="no_judges",
    )


@cache
def golden() -> tuple[tuple[ReportRun, ...], GateDecision, dict[str, AllowSet]]:
    allow_sets = load_allowsets(ROOT / "expected_paths")
    runs: list[ReportRun] = []
    for path in sorted((ROOT / "golden_datasets").glob("*.jsonl")):
        for item in read_jsonl(path):
            assert not isinstance(item, TrajectoryReadError), item
            tool_agent = (item.metadata or {}).get("policy") == "tool_agent"
            policy = Policy.tool_agent() if tool_agent else Policy.workflow()
            allow = allow_sets.get(item.graph) if item.graph else None
            verdict = verdict_for(item.run_id, item.graph, item.steps, policy, allow)
            runs.append(ReportRun(item.run_id, item.graph, str(path), verdict,
                                  tuple(step.node for step in item.steps)))
    decision = decide([r.verdict for r in runs if r.verdict is not None], min_runs=1)
    return tuple(runs), decision, allow_sets


GENERATED = dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC)


@cache
def golden_page() -> str:
    runs, decision, allow_sets = golden()
    return render_report(runs, decision, allow_sets, generated_at=GENERATED)


# -- reading the structure back ----------------------------------------------------------------
class Structure(HTMLParser):
    """Every element with its attributes and the graph of the diagram it sits in."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str], str | None]] = []
        self._graph: str | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "svg" and "graph" in values.get("class", "").split():
            self._graph = values.get("data-graph")
        self.elements.append((tag, values, self._graph))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._graph = None

    def diagrams(self) -> list[str]:
        return [a["data-graph"] for t, a, _ in self.elements
                if t == "svg" and "graph" in a.get("class", "").split()]

    def edges(self, graph: str) -> dict[tuple[str, str], tuple[set[str], int]]:
        return {
            (a["data-from"], a["data-to"]): (set(a["class"].split()), int(a["data-count"]))
            for t, a, g in self.elements
            if g == graph and t == "g" and "edge" in a.get("class", "").split()
        }

    def nodes(self, graph: str) -> dict[str, set[str]]:
        return {
            a["data-node"]: set(a["class"].split())
            for t, a, g in self.elements
            if g == graph and t == "g" and "node" in a.get("class", "").split()
        }

    def node_rects(self, css_class: str) -> list[tuple[float, float]]:
        """(width, height) of the rect of every diagram node with ``css_class``."""
        found: list[tuple[float, float]] = []
        inside = False
        for tag, attrs, graph in self.elements:
            if tag == "g" and graph is not None:
                inside = {"node", css_class} <= set(attrs.get("class", "").split())
            elif tag == "rect" and inside:
                found.append((float(attrs["width"]), float(attrs["height"])))
                inside = False
        return found


def hop_counts(paths: Sequence[Sequence[str]]) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for path in paths:
        counts.update(zip((START, *path), path, strict=False))
    return counts


# -- structure tests -----------------------------------------------------------------------------
def test_one_diagram_per_allow_set_with_runs_and_the_rest_listed() -> None:
    page = golden_page()
    structure = Structure(page)
    assert structure.diagrams() == ["campaign", "coder_reviewer", "sql_agent"]
    assert re.search(r'<section class="graph-section no-allowset" data-graph="core">', page)
    assert "no allow-set" in page
    assert 'data-decision="ROLLBACK"' in page
    for svg in re.findall(r'<svg class="graph".*?</svg>', page, flags=re.S):
        ElementTree.fromstring(svg)  # each diagram is well-formed XML


def test_every_allowed_edge_is_drawn_and_the_illegal_hops_are_marked() -> None:
    runs, _, allow_sets = golden()
    structure = Structure(golden_page())
    illegal_expected = {
        "campaign": {("compose_touch", "send_touch")},
        "coder_reviewer": {("reviewer", "reviewer")},
        "sql_agent": set(),
    }
    for graph, expected_illegal in illegal_expected.items():
        edges = structure.edges(graph)
        allowed = {(s, t) for s, targets in allow_sets[graph].transitions.items() for t in targets}
        legal_drawn = {hop for hop, (classes, _) in edges.items() if "legal" in classes}
        illegal_drawn = {hop for hop, (classes, _) in edges.items() if "illegal" in classes}
        assert legal_drawn == allowed, graph
        assert illegal_drawn == expected_illegal, graph
        # Counts come from the observed paths (the hop to __end__ is the finishing hop).
        observed = hop_counts([r.path for r in runs if r.graph == graph])
        for hop, (classes, count) in edges.items():
            if hop[1] != END:
                assert count == observed.get(hop, 0), (graph, hop)
                assert ("traversed" in classes) == (count > 0 and hop in allowed), (graph, hop)
    campaign = structure.edges("campaign")
    assert campaign[("compose_touch", "send_touch")] == ({"edge", "illegal"}, 1)
    assert campaign[("check_reply", END)] == ({"edge", "legal", "traversed"}, 5)
    assert campaign[("check_reply", "compose_touch")] == ({"edge", "legal"}, 0)
    assert re.search(r'class="edge illegal"[^>]*data-from="compose_touch" data-to="send_touch"',
                     golden_page())


def test_looping_and_dead_end_nodes_are_highlighted() -> None:
    structure = Structure(golden_page())
    looping = {g: {n for n, c in structure.nodes(g).items() if "looping" in c}
               for g in ("campaign", "coder_reviewer", "sql_agent")}
    assert looping == {
        "campaign": {"check_reply", "compose_touch", "gate_draft"},
        "coder_reviewer": {"coder", "reviewer"},
        "sql_agent": {"model", "tools"},
    }
    campaign = structure.nodes("campaign")
    assert campaign["load_lead"] == {"node", "visited"}
    assert {"dead-end", "looping"} <= campaign["gate_draft"]
    assert {"terminal"} <= campaign[START]
    assert {"terminal"} <= campaign[END]
    assert not any("unknown" in c for g in looping for c in structure.nodes(g).values())
    assert "max 12/run · limit 10" in golden_page()  # check_reply's visits against its limit


def test_unknown_nodes_and_illegal_first_hops_are_drawn_in_red() -> None:
    _, _, allow_sets = golden()
    allow = allow_sets["campaign"]
    steps = [Step(node=n, summary=f"s{i}") for i, n in enumerate(["gate_draft", "mystery", "load_lead"])]
    run = ReportRun("odd", "campaign", "x.jsonl",
                    verdict_for("odd", "campaign", steps, Policy.workflow(), allow),
                    tuple(s.node for s in steps))
    structure = Structure(render_report([run], None, allow_sets))
    nodes, edges = structure.nodes("campaign"), structure.edges("campaign")
    assert "unknown" in nodes["mystery"]
    for hop in ((START, "gate_draft"), ("gate_draft", "mystery"), ("mystery", "load_lead")):
        assert edges[hop] == ({"edge", "illegal"}, 1), hop
    assert "visited" not in nodes["check_reply"]


def test_user_data_is_escaped() -> None:
    _, _, allow_sets = golden()
    evil = '<script>alert("x")</script>'
    steps = [Step(node="coder", summary="same"), Step(node="coder", summary="same")]
    runs = [
        ReportRun(evil, "coder_reviewer", "a.jsonl",
                  verdict_for(evil, "coder_reviewer", steps, Policy.workflow(),
                              allow_sets["coder_reviewer"]), ("coder", "coder")),
        ReportRun(None, None, "bad.jsonl:3", None, (), "invalid JSON: <img src=x onerror=1>"),
        ReportRun("n", '<b onmouseover="x">g</b>', "b.jsonl",
                  verdict_for("n", None, steps, Policy.workflow(), None), ("<i>", "<i>")),
    ]
    page = render_report(runs, None, allow_sets, title="<title>&")
    lowered = page.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "<b " not in lowered
    assert "<i>" not in page
    assert "onmouseover=\"" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "invalid JSON: &lt;img src=x onerror=1&gt;" in page
    assert "bad.jsonl:3" in page
    assert "&lt;title&gt;&amp;" in page
    assert re.search(r'<tr class="run ERROR"', page)


def test_no_external_references_and_no_scripts() -> None:
    page = golden_page()
    assert "http://" not in page
    assert "https://" not in page
    assert not re.search(r"\b(?:src|href|srcset|action|xlink:href)\s*=", page, flags=re.I)
    for tag in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "@font-face"):
        assert tag not in page.lower(), tag
    assert all(ref.startswith("url(#") for ref in re.findall(r"url\([^)]*\)", page))
    assert "default-src 'none'" in page  # the CSP forbids any load the markup might still make


def test_step_text_never_reaches_the_report() -> None:
    _, _, allow_sets = golden()
    steps = [
        Step(node="load_lead", summary="lead SECRET-XYZ"),
        Step(node="compose_touch", summary="SECRET-XYZ draft", output={"text": "SECRET-XYZ"}),
        Step(node="gate_draft", tool="lookup", args={"q": "SECRET-XYZ"}, result="SECRET-XYZ"),
        Step(node="compose_touch", summary="SECRET-XYZ draft", output={"text": "SECRET-XYZ"}),
        Step(node="gate_draft", tool="lookup", args={"q": "SECRET-XYZ"}, result="SECRET-XYZ"),
        Step(node="compose_touch", summary="SECRET-XYZ draft", output={"text": "SECRET-XYZ"}),
    ]
    verdict = verdict_for("secret", "campaign", steps, Policy.workflow(), allow_sets["campaign"])
    assert verdict.violations  # something to report
    run = ReportRun("secret", "campaign", "s.jsonl", verdict, tuple(s.node for s in steps))
    page = render_report([run], decide([verdict], min_runs=1), allow_sets)
    assert "SECRET" not in page


def test_rendering_is_deterministic_and_handles_no_decision() -> None:
    runs, decision, allow_sets = golden()
    assert render_report(runs, decision, allow_sets, generated_at=GENERATED) == golden_page()
    page = render_report(runs, None, allow_sets)
    assert 'data-decision="none"' in page
    assert "NO DECISION" in page
    empty = render_report([], None, {})
    assert "No runs." in empty
    assert "<svg class=\"graph\"" not in empty


# -- what a release engineer looks for first ------------------------------------------------------
def run_ids(page: str, css: str) -> list[str]:
    return re.findall(rf'<(?:tr|section) class="{css} (?:PASS|FAIL|ERROR)[^"]*"[^>]*data-run="([^"]*)"', page)


def test_failing_runs_come_first_everywhere() -> None:
    runs, _, _ = golden()
    page = golden_page()
    order = {True: 1, False: 0}
    expected = [r.run_id for _, r in sorted(enumerate(runs), key=lambda x: (
        order[bool(x[1].verdict and x[1].verdict.passed)], x[0]))]
    assert run_ids(page, "run") == expected
    assert run_ids(page, "run-section") == expected
    assert expected != [r.run_id for r in runs]  # the golden input starts with a passing run


def test_one_section_per_run_with_its_path_and_marked_violation_steps() -> None:
    runs, _, _ = golden()
    page = golden_page()
    looping = next(r for r in runs if r.run_id == "campaign-looping")
    assert looping.verdict is not None
    section = re.search(
        r'<section class="run-section FAIL" id="run-\d+" data-run="campaign-looping".*?</section>',
        page, flags=re.S)
    assert section is not None
    html_text = section.group(0)
    steps = re.findall(r'<li class="step( marked)?" data-step="(\d+)"', html_text)
    assert [int(i) for _, i in steps] == list(range(len(looping.path)))
    assert {int(i) for m, i in steps if m} == {v.step for v in looping.verdict.violations}
    for v in looping.verdict.violations:
        assert f'<tr data-code="{v.code}" data-step="{v.step}">' in html_text
    assert "digest=" in html_text  # evidence is codes, counts, indices and digests


def test_illegal_hops_are_read_from_the_violations() -> None:
    """A hop outside the allow-set that no violation flags (rules off) is not listed as flagged."""
    _, _, allow_sets = golden()
    allow = allow_sets["campaign"]
    path = ("load_lead", "compose_touch", "send_touch", "check_reply")
    steps = [Step(node=n, summary=f"s{i}") for i, n in enumerate(path)]
    flagged = verdict_for("flagged", "campaign", steps, Policy.workflow(), allow)
    assert [(v.code, v.step) for v in flagged.violations if v.hard] == [("illegal_transition", 2)]
    unchecked = verdict_for("unchecked", "campaign", steps, Policy.workflow(), None)  # rules off
    page = render_report([ReportRun("flagged", "campaign", "a.jsonl", flagged, path),
                          ReportRun("unchecked", "campaign", "b.jsonl", unchecked, path)], None, allow_sets)
    listed = re.search(r"<h4>Illegal hops</h4><ul>(.*?)</ul>", page, flags=re.S)
    assert listed is not None
    assert "compose_touch → send_touch" in listed.group(1)
    assert "flagged" in listed.group(1)
    assert "unchecked" not in listed.group(1)
    assert "<td><code>compose_touch → send_touch</code></td>" in page  # the run section names the hop


def test_header_names_time_version_policy_prompt_version_and_inputs() -> None:
    runs, decision, allow_sets = golden()
    page = render_report(runs, decision, allow_sets, generated_at=GENERATED, policy="tool_agent",
                         inputs=["golden_datasets/"])
    meta = dict(re.findall(r'<dd data-meta="([^"]+)">([^<]*)</dd>', page))
    assert meta["generated"] == "2026-11-30T09:00:00Z"
    assert meta["liveguard"] == importlib.metadata.version("liveguard")
    assert meta["policy"].startswith("tool_agent")
    assert meta["prompt version"] == "none"
    assert meta["inputs"] == "golden_datasets/"
    default = dict(re.findall(r'<dd data-meta="([^"]+)">([^<]*)</dd>', golden_page()))
    assert default["inputs"].count("golden_datasets") == 4  # the runs' own files


def test_missing_evidence_banner() -> None:
    runs, decision, allow_sets = golden()
    assert 'class="missing"' not in golden_page()
    assert decision is not None
    held = decision.model_copy(update={"missing": [
        "judges skipped: no API key for api.deepseek.com", "graph <x> has no allow-set"]})
    page = render_report(runs, held, allow_sets, generated_at=GENERATED)
    banner = re.search(r'<div class="missing" role="alert" data-missing="2">(.*?)</div>', page, flags=re.S)
    assert banner is not None
    assert page.index('class="missing"') < page.index("<h1>")
    assert "<li>judges skipped: no API key for api.deepseek.com</li>" in banner.group(1)
    assert "<li>graph &lt;x&gt; has no allow-set</li>" in banner.group(1)


# -- PNG decoding (stdlib only) ------------------------------------------------------------------
def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, RGB rows) of an 8-bit RGB/RGBA non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0), (depth, interlace)
    assert color in (2, 6), color
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    prev = bytearray(stride)
    rows: list[bytes] = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:  # Up
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (left + prev[i]) // 2) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        else:
            assert kind == 0, f"bad filter {kind}"
        rows.append(bytes(line) if bpp == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
        prev = line
    return width, height, rows


def colour_histogram(rows: Sequence[bytes]) -> Counter[bytes]:
    hist: Counter[bytes] = Counter()
    for row in rows:
        hist.update(row[i : i + 3] for i in range(0, len(row), 3))
    return hist


def near(hist: Counter[bytes], hex_colour: str, tolerance: int = 12) -> int:
    target = bytes.fromhex(hex_colour.lstrip("#"))
    return sum(n for px, n in hist.items() if max(abs(px[i] - target[i]) for i in range(3)) <= tolerance)


def test_png_decoder_roundtrip() -> None:
    """Every filter type on a small image built here; the decoder is the render test's eye."""
    pixels = [bytes((x * 40 % 256, y * 60 % 256, (x * y * 17) % 256)) for y in range(5) for x in range(4)]
    rows = [b"".join(pixels[y * 4 : y * 4 + 4]) for y in range(5)]

    def filt(kind: int, line: bytes, prev: bytes) -> bytes:
        out = bytearray()
        for i, value in enumerate(line):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            p = a + b - c
            pred = [0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c)
                    else b if abs(p - b) <= abs(p - c) else c][kind]
            out.append((value - pred) & 0xFF)
        return bytes([kind]) + bytes(out)

    raw = b"".join(filt(y, rows[y], rows[y - 1] if y else bytes(12)) for y in range(5))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 5, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    assert decode_png(png) == (4, 5, rows)


# -- headless Chromium ---------------------------------------------------------------------------
def chromium(tmp_path: Path, *args: str) -> bytes:
    """Run headless Chromium (bounded, own process group); return its stdout."""
    browser = require_chromium()  # skips loudly outside CI; fails under CI=true
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path)
    home = tempfile.mkdtemp(prefix="home-", dir=tmp_path)
    cmd = [
        str(browser), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
        "--hide-scrollbars", "--force-device-scale-factor=1", *args,
    ]
    env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_CACHE_HOME": home}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"chromium did not finish within 60 s: {' '.join(cmd)}")
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    return out


def screenshot(tmp_path: Path, page: str, name: str) -> tuple[int, int, Counter[bytes]]:
    html_path, png_path = tmp_path / f"{name}.html", tmp_path / f"{name}.png"
    html_path.write_text(page, encoding="utf-8")
    chromium(tmp_path, f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png_path}",
             html_path.as_uri())
    assert png_path.is_file(), "chromium wrote no screenshot"
    width, height, rows = decode_png(png_path.read_bytes())
    return width, height, colour_histogram(rows)


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    page = golden_page()
    width, height, hist = screenshot(tmp_path, page, "report")
    assert (width, height) == (WIDTH, HEIGHT)
    total = width * height
    white = hist[b"\xff\xff\xff"]
    assert total - white > total // 25, "the screenshot is (nearly) blank"
    assert len(hist) > 200, "too few colours for a rendered page"

    # Control: the same page with the diagrams cut out (legend and tables stay).
    control_page, cut = re.subn(r'<svg class="graph".*?</svg>', "", page, flags=re.S)
    assert cut == 3
    _, _, control = screenshot(tmp_path, control_page, "control")

    found = {k: near(hist, COLORS[k]) for k in ("illegal", "looping", "traversed")}
    base = {k: near(control, COLORS[k]) for k in found}
    # The looping nodes' fills: most of their rect area (text covers the rest).
    looping_area = sum(w * h for w, h in Structure(page).node_rects("looping"))
    assert len(Structure(page).node_rects("looping")) == 7
    assert found["looping"] - base["looping"] > 0.6 * looping_area, (found, base, looping_area)
    # Red dashed illegal hops (campaign lane, coder_reviewer self-loop) and blue traversed edges.
    assert found["illegal"] - base["illegal"] > 400, (found, base)
    assert found["traversed"] - base["traversed"] > 3000, (found, base)
    assert found["illegal"] > 2 * base["illegal"], (found, base)  # the legend has red swatches
    assert found["looping"] > 20 * base["looping"]
    assert found["traversed"] > 20 * base["traversed"]


def test_report_dom_after_parsing_in_chromium(tmp_path: Path) -> None:
    page = golden_page()
    html_path = tmp_path / "report.html"
    html_path.write_text(page, encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", html_path.as_uri()).decode("utf-8")
    parsed, source = Structure(dom), Structure(page)
    assert parsed.diagrams() == ["campaign", "coder_reviewer", "sql_agent"]
    for graph in parsed.diagrams():
        assert parsed.edges(graph) == source.edges(graph), graph
        assert parsed.nodes(graph) == source.nodes(graph), graph
    assert "illegal" in parsed.edges("campaign")[("compose_touch", "send_touch")][0]
    assert "looping" in parsed.nodes("campaign")["check_reply"]
    markers = [a for t, a, _ in parsed.elements if t == "marker"]
    assert len(markers) == 9


# -- the report as a directory of pages (liveguard report) ----------------------------------------
def judged_runs() -> list[ReportRun]:
    """The golden runs, plus one judged run with scores and one with a failed judge."""
    runs, _, allow_sets = golden()
    allow = allow_sets["sql_agent"]
    path = ("model", "tools", "model")
    steps = [Step(node=n, summary=f"SECRET-{i}") for i, n in enumerate(path)]
    base = verdict_for("x", "sql_agent", steps, Policy.tool_agent(), allow)
    levels = {name: LevelScore(level=name, score=score, confidence=0.9, reason="ok", source="judge:fake")
              for name, score in (("outcome", 0.91), ("step", 0.84), ("trajectory", 0.88))}
    judged = base.model_copy(update={"run_id": "judged", "passed": True, "composite": 0.88, "judged": True,
                                     "judges_skipped": None, "levels": levels, "reason": "judged"})
    unjudged = base.model_copy(update={"run_id": "judge-failed", "passed": False, "judge_error": True,
                                       "judges_skipped": None, "reason": "unjudged",
                                       "missing": ["judge_error:outcome:http_5xx"]})
    return [*runs, ReportRun("judged", "sql_agent", "j.jsonl", judged, path),
            ReportRun("judge-failed", "sql_agent", "j.jsonl", unjudged, path)]


class Links(HTMLParser):
    """Every ``<a href>`` with its attributes, and the text of the page (for privacy checks)."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[dict[str, str]] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append({k: v or "" for k, v in attrs})


def write_site(tmp_path: Path, runs: Sequence[ReportRun], **options: int) -> Path:
    _, _, allow_sets = golden()
    verdicts = [r.verdict for r in runs if r.verdict is not None]
    overview = tmp_path / "site" / "report.html"
    write_report(runs, decide(verdicts, min_runs=1), allow_sets, overview, generated_at=GENERATED, **options)
    return overview


def test_every_link_of_the_report_resolves_and_every_run_has_its_page(tmp_path: Path) -> None:
    """Paginated lists: every run once in the run list, the failing ones in the failing list,
    every link to an existing page, and each run's link leads to that run's page."""
    runs = judged_runs()
    overview = write_site(tmp_path, runs, page_size=5, overview_failing=4)
    pages = sorted(overview.parent.rglob("*.html"))
    listed: dict[str, list[str]] = {"runs": [], "failing": []}
    for page in pages:
        text = page.read_text()
        assert "SECRET" not in text
        for link in Links(text).links:
            target = (page.parent / link["href"]).resolve()
            assert target.is_file(), (page.name, link["href"])
            if "run-link" in link.get("class", ""):
                assert f'data-run="{link["data-run"]}" data-verdict' in target.read_text()
                kind = page.name.split("-")[0]
                if kind in listed and page.parent != overview.parent:
                    listed[kind].append(link["data-run"])
    expected = [r.run_id for r in failing_first(runs)]
    assert listed["runs"] == expected
    assert listed["failing"] == [r.run_id for r in failing_first(runs)
                                 if not (r.verdict and r.verdict.passed)]
    n_list = len(list((overview.parent / "report_pages").glob("runs-*.html")))
    assert n_list == -(-len(runs) // 5)
    assert len(list((overview.parent / "report_pages").glob("run-*.html"))) == len(runs)
    failing_on_overview = re.search(r'<section class="failing">(.*?)</section>', overview.read_text(), re.S)
    assert failing_on_overview is not None
    assert failing_on_overview.group(1).count('class="run-link"') == 4  # the rest: on the failing pages
    assert 'data-list="failing"' in failing_on_overview.group(1)


def test_overview_size_does_not_grow_with_passing_runs(tmp_path: Path) -> None:
    """The overview names the failing runs and links to list pages: 2,000 more passing runs
    add a few bytes of page links, not a row each (the 50,000-run figure is a benchmark)."""
    runs = judged_runs()
    passing = [r for r in runs if r.verdict is not None and r.verdict.passed]

    def more(n: int) -> list[ReportRun]:
        return [ReportRun(f"more-{i}", r.graph, r.source,
                          r.verdict.model_copy(update={"run_id": f"more-{i}"}), r.path)
                for i, r in enumerate((passing * n)[:n]) if r.verdict is not None]

    smaller = write_site(tmp_path / "a", [*runs, *more(500)], page_size=100).stat().st_size
    larger = write_site(tmp_path / "b", [*runs, *more(2500)], page_size=100).stat().st_size
    assert 0 < larger - smaller < 2_500, (smaller, larger)  # 20 more page links, about 60 B each


def test_follow_a_link_from_the_overview_to_a_failing_run_in_chromium(tmp_path: Path) -> None:
    """In headless Chromium: the overview's failing-run link leads to the run's page, which shows
    its violations with step indices, its path on the allow-set diagram, its judge scores and
    its missing evidence, and never its step text."""
    runs = judged_runs()
    overview = write_site(tmp_path, runs)
    dom = chromium(tmp_path, "--dump-dom", overview.as_uri()).decode("utf-8")
    assert 'data-decision="ROLLBACK"' in dom
    links = [a for a in Links(dom).links if "run-link" in a.get("class", "")]
    looping = next(a for a in links if a["data-run"] == "campaign-looping")
    target = (overview.parent / looping["href"]).resolve()
    page = chromium(tmp_path, "--dump-dom", target.as_uri()).decode("utf-8")
    assert re.search(r'<h1 data-run="campaign-looping" data-verdict="FAIL">', page)
    run = next(r for r in runs if r.run_id == "campaign-looping")
    assert run.verdict is not None
    for v in run.verdict.violations:  # every violation, at its step
        assert f'<tr data-code="{v.code}" data-step="{v.step}">' in page
    marked = {int(i) for i in re.findall(r'<li class="step marked" data-step="(\d+)"', page)}
    assert marked == {v.step for v in run.verdict.violations}
    structure = Structure(page)
    assert structure.diagrams() == ["campaign"]
    taken = {hop: count for hop, (classes, count) in structure.edges("campaign").items()
             if count and hop[1] != END}
    assert taken == dict(hop_counts([run.path]))  # the run's own path, hop by hop
    assert "looping" in structure.nodes("campaign")["check_reply"]
    assert re.search(r'<section class="judges">.*judges skipped: no_judges', page, re.S)
    assert 'data-missing="0"' in page
    back = [a for a in Links(page).links if a.get("data-nav") == "overview"]
    assert (target.parent / back[0]["href"]).resolve() == overview.resolve()

    # The judged run and the run whose judge failed: scores, and the missing evidence.
    for run_id, expect in (("judged", ('data-level="outcome"', "0.91", "0.88")),
                           ("judge-failed", ('data-missing="1"', "judge_error:outcome:http_5xx",
                                             "judges failed: 1 run(s) unjudged"))):
        link = next(a for a in links if a["data-run"] == run_id)
        shown = chromium(tmp_path, "--dump-dom", (overview.parent / link["href"]).resolve().as_uri())
        text = shown.decode("utf-8")
        assert all(e in text for e in expect), (run_id, expect)
        assert "SECRET" not in text
