"""``liveguard approvals list`` over many pending threads, from the pending index (issue 18).

::

    PYTHONPATH=backend python benchmarks/approvals_list.py [--threads 5000] [--postgres URL | --no-postgres]

For each backend (a SQLite file; PostgreSQL at ``--postgres URL``, else a throwaway server
started like tests/pg_server.py when ``initdb`` is found): one real thread of
tests/approval_graphs.py runs until the approval step interrupts, then its checkpoints
and writes are copied to ``--threads`` thread ids through the saver's own ``put`` /
``put_writes`` and each copy gets its pending-index row through ``index_pending`` (the
function the approval step calls when it interrupts). So the database holds what
N interrupted threads leave, without running the graph N times. Then it times
``liveguard approvals list --format json`` (``cli.main`` in this process, output to a
sink that only counts bytes): the median of ``--repeats`` runs, and the Python heap peak
(tracemalloc) of one run at N/5 and at N threads, which stays flat when the rows stream.
``--scan-too`` also times ``list --scan`` (every thread's latest checkpoint) at N threads.

Measured (2026-12-01, 2 shared cores, --threads 5000 --repeats 3 --scan-too): SQLite 0.10 s
median (heap peak 543 KiB at 1,000 threads, 448 KiB at 5,000), PostgreSQL 0.19 s (722 / 717
KiB); ``--scan`` 0.95 s and 3.9 s on these short cloned threads. The console script adds its
start-up, 0.6-0.8 s, so a 5,000-thread ``liveguard approvals list`` answers in about 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import approval_graphs  # noqa: E402
from liveguard.cli import main  # noqa: E402
from liveguard.live.checkpoints import index_pending, open_saver  # noqa: E402


class _Sink(io.TextIOBase):
    def __init__(self) -> None:
        self.size = 0

    def write(self, text: str) -> int:
        self.size += len(text)
        return len(text)


def populate(url: str, threads: int, prefix: str) -> None:
    with open_saver(url) as saver:
        graph = approval_graphs.build(saver)
        seed = f"{prefix}-seed"
        out = graph.invoke({}, {"configurable": {"thread_id": seed}})
        (item,) = out["__interrupt__"]
        value = item.value
        tuples = list(saver.list({"configurable": {"thread_id": seed}}))[::-1]  # oldest first
        for n in range(threads):
            thread = f"{prefix}-{n:05d}"
            parent: str | None = None
            for tup in tuples:
                conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
                if parent is not None:
                    conf["checkpoint_id"] = parent
                saved = saver.put({"configurable": conf}, tup.checkpoint, tup.metadata,
                                  tup.checkpoint["channel_versions"])
                by_task: dict[str, list[tuple[str, Any]]] = {}
                for task_id, channel, val in tup.pending_writes or ():
                    by_task.setdefault(task_id, []).append((channel, val))
                for task_id, writes in by_task.items():
                    saver.put_writes(saved, writes, task_id)
                parent = tup.config["configurable"]["checkpoint_id"]
            codes = sorted({v["code"] for v in value["verdict"].get("violations") or []})
            index_pending(saver, thread, f"task:{n}", interrupt_id=f"{n:032x}",
                          at=f"2026-01-01T00:00:{n % 60:02d}+00:00", reasons=value["reasons"],
                          codes=codes, error=None)


def run_list(url: str, *extra: str) -> int:
    sink = _Sink()
    status = main(["approvals", "list", "--checkpoint", url, "--format", "json", *extra], sink)  # type: ignore[arg-type]
    assert status == 0, status
    return sink.size


def measure(url: str, threads: int, repeats: int) -> dict[str, Any]:
    small = max(1, threads // 5)
    populate(url, small, "a")
    tracemalloc.start()
    run_list(url)
    peak_small = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    populate(url, threads - small, "b")
    times = []
    size = 0
    for _ in range(repeats):
        start = time.perf_counter()
        size = run_list(url)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    run_list(url)
    peak_full = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"threads": threads, "list_median_s": round(statistics.median(times), 3),
            "list_max_s": round(max(times), 3), "json_bytes": size,
            f"heap_peak_kib_at_{small}": peak_small // 1024, f"heap_peak_kib_at_{threads}": peak_full // 1024}


def scan_time(url: str) -> float:
    start = time.perf_counter()
    run_list(url, "--scan")
    return round(time.perf_counter() - start, 3)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str | None]:
    from fake_openai import free_port
    from pg_server import find_pg_bin

    bin_dir = find_pg_bin()
    if bin_dir is None:
        yield None
        return
    import os
    import pwd

    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="liveguard-bench-pg-"))
    (base / "sock").mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (base, base / "sock"):
            os.chown(path, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120)

    try:
        run(str(bin_dir / "initdb"), "-D", str(base / "data"), "-A", "trust", "-U", "postgres",
            "-E", "UTF8", "--no-sync")
        run(str(bin_dir / "pg_ctl"), "-D", str(base / "data"), "-l", str(base / "log"), "-w",
            "-o", f"-p {port} -k {base / 'sock'} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        with contextlib.suppress(Exception):
            run(str(bin_dir / "pg_ctl"), "-D", str(base / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--postgres", default=None, metavar="URL")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--scan-too", action="store_true",
                        help="also time `list --scan` (every thread's checkpoints) at the same size")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'bench.sqlite'}"
        results["sqlite"] = measure(url, args.threads, args.repeats)
        if args.scan_too:
            results["sqlite"]["scan_s"] = scan_time(url)
    if not args.no_postgres:
        with contextlib.ExitStack() as stack:
            pg = args.postgres or stack.enter_context(throwaway_postgres())
            if pg is not None:
                results["postgres"] = measure(pg, args.threads, args.repeats)
                if args.scan_too:
                    results["postgres"]["scan_s"] = scan_time(pg)
    for name, row in results.items():
        print(f"{name}: {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
