"""Two Ray nodes on this machine, as an operator starts them: ``ray start --head`` and ``ray start
--address`` (a worker node with its own resources), 1 CPU each, on ports picked here, under a
temp dir of their own. Used by ``tests/test_ray_cluster.py`` and ``benchmarks/ray_cluster.py``.

Stopping ends only the processes these two commands started: those of the sessions they
were started in, and those naming the temp dir (never ``ray stop``, which would end every
Ray process of the machine's user).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["two_nodes"]

RAY = Path(sys.executable).with_name("ray")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _ours(sessions: set[int], marker: str) -> list[int]:
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                session = int(f.read().rsplit(")", 1)[1].split()[4])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if session in sessions or marker in cmdline:
            found.append(int(entry))
    return found


def _end(pids: list[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.2)


@contextlib.contextmanager
def two_nodes(object_store_mb: int = 80) -> Iterator[str]:
    """A head node (resource ``head``) and a worker node (resource ``worker``); yields the
    head's address (``127.0.0.1:PORT``)."""
    if not RAY.exists():
        raise RuntimeError(f"the ray command is not installed beside {sys.executable}")
    temp = tempfile.mkdtemp(prefix="lg-ray-", dir="/tmp")  # short: Ray's socket paths have a limit
    ports = _free_ports(13)
    address = f"127.0.0.1:{ports[0]}"
    # Ray turns token authentication on by itself when a local ray.init() ran before in this
    # process (it sets RAY_AUTH_MODE and writes ~/.ray/auth_token): these nodes and the driver
    # use one explicit mode instead, and the nodes a HOME of their own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update({"RAY_USAGE_STATS_ENABLED": "0", "HOME": temp, "RAY_AUTH_MODE": "disabled"})
    env.pop("RAY_ADDRESS", None)
    saved_auth = {k: v for k, v in os.environ.items() if k.startswith("RAY_AUTH")}
    common = ["--num-cpus", "1", "--object-store-memory", str(object_store_mb * 2**20),
              "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]

    def node_ports(first: int) -> list[str]:
        names = ("--object-manager-port", "--node-manager-port", "--dashboard-agent-listen-port",
                 "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port")
        return [arg for i, name in enumerate(names) for arg in (name, str(ports[first + i]))]

    head = [str(RAY), "start", "--head", "--port", str(ports[0]), "--temp-dir", temp,
            "--include-dashboard", "false", "--resources", json.dumps({"head": 1}), *node_ports(1), *common]
    worker = [str(RAY), "start", "--address", address, "--resources", json.dumps({"worker": 1}),
              *node_ports(7), *common]
    sessions: set[int] = set()
    try:
        for cmd in (head, worker):
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
            sessions.add(proc.pid)  # a new session's id is its leader's pid
            out, _ = proc.communicate(timeout=180)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd[:3])} failed: {out.decode(errors='replace')[-3000:]}")
        _wait_for_nodes(address, 2, env)
        for k in saved_auth:
            del os.environ[k]
        os.environ["RAY_AUTH_MODE"] = "disabled"  # the driver (this process, its children) too
        yield address
    finally:
        os.environ.pop("RAY_AUTH_MODE", None)
        os.environ.update(saved_auth)
        _end(_ours(sessions, temp))
        shutil.rmtree(temp, ignore_errors=True)


def _wait_for_nodes(address: str, n: int, env: dict[str, str], bound: float = 120.0) -> None:
    """Block until the cluster reports ``n`` alive nodes (a node joins after `ray start` returns)."""
    probe = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
             "print(sum(1 for node in ray.nodes() if node['Alive'])); ray.shutdown()")
    deadline = time.monotonic() + bound
    while True:
        out = subprocess.run([sys.executable, "-c", probe, address], env=env, capture_output=True,
                             text=True, timeout=bound, check=False)
        if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [str(n)]:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Ray cluster at {address} did not report {n} alive nodes: {out.stdout!r}")
        time.sleep(1.0)
