"""The report at scale (issue 21): size and render time of ``liveguard report`` at 50,000 runs.

On a generated corpus (``benchmarks/scale_corpus.py``: N runs × 24 steps, 5% looping runs,
fixed seed) with an allow-set for its graph, in a temp dir:

* ``liveguard report --no-judges -o report.html``: wall time, peak memory of the process
  tree (PSS, sampled every 50 ms), the overview's size, the pages folder's size and file
  count;
* headless Chromium (``--headless --screenshot``, 1280×2400) on the overview, on the
  first page of the run list and on one failing run's page: wall time of the whole
  browser process, median of ``--repeats``, beside the same for an empty page (the
  browser's own start-up, reported, not subtracted).

Usage: ``python benchmarks/report_scale.py [--runs 50000] [--repeats 3] [--json PATH]``
(``LIVEGUARD_CHROMIUM`` or chromium on PATH).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from scale import _tree_rss
from scale_corpus import write_corpus

EXE = Path(sys.executable).with_name("liveguard")
ALLOW = """graph: scale_agent
transitions:
  __start__: [supervisor]
  supervisor: [model]
  model: [tools, __end__]
  tools: [model]
limits:
  model: 40
  tools: 40
"""


def _report(root: Path) -> dict[str, Any]:
    cmd = [str(EXE), "report", "runs.jsonl", "--paths", "paths", "--no-judges", "-o", "report.html"]
    peak = 0
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.05):
            peak = max(peak, _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"report failed ({proc.returncode}): {err.decode()[-2000:]}")
    pages = root / "report_pages"
    files = list(pages.iterdir())
    return {
        "wall_s": round(wall, 2),
        "peak_pss_mb": round(peak / 2**20, 1),
        "overview_bytes": (root / "report.html").stat().st_size,
        "pages_files": len(files),
        "pages_bytes": sum(f.stat().st_size for f in files),
        "stdout": out.decode().strip(),
    }


def _chromium() -> str:
    explicit = os.environ.get("LIVEGUARD_CHROMIUM")
    found = explicit or shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which(
        "google-chrome")
    if not found:
        raise SystemExit("no chromium: set LIVEGUARD_CHROMIUM or install chromium")
    return found


def _render(page: Path, work: Path) -> float:
    """Wall seconds of one headless Chromium screenshot of ``page`` (a fresh profile)."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=work)
    shot = work / "shot.png"
    shot.unlink(missing_ok=True)
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--hide-scrollbars",
           "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()]
    env = {**os.environ, "HOME": profile}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return float("inf")
    wall = time.perf_counter() - start
    shutil.rmtree(profile, ignore_errors=True)
    if proc.returncode != 0 or not shot.is_file():
        raise SystemExit(f"chromium failed on {page} ({proc.returncode})")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="liveguard-report-scale-") as tmp:
        root = Path(tmp)
        (root / "paths").mkdir()
        (root / "paths" / "scale_agent.yaml").write_text(ALLOW)
        write_corpus(root / "runs.jsonl", args.runs)
        figures: dict[str, Any] = {"runs": args.runs, "cores": os.cpu_count(),
                                   "load": os.getloadavg()[0], "report": _report(root)}
        blank = root / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title>")
        pages = root / "report_pages"
        failing = next(p for p in sorted(pages.glob("run-*.html")) if 'data-verdict="FAIL"' in p.read_text())
        work = root / "chromium"
        work.mkdir()
        renders = {}
        for name, page in (("blank", blank), ("overview", root / "report.html"),
                           ("run_list_page", pages / "runs-0001.html"), ("failing_run_page", failing)):
            times = [_render(page, work) for _ in range(args.repeats)]
            renders[name] = round(statistics.median(times), 2)
        figures["chromium_screenshot_s"] = renders
        print(orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode())
        if args.json:
            Path(args.json).write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
