"""A real, throwaway PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` in a temporary directory.

The ``postgres_url`` fixture (session scope) starts one server on 127.0.0.1 on a free
port, with trust authentication and no fsync, yields ``postgresql://postgres@127.0.0.1:PORT/postgres``
and stops it (``pg_ctl stop -m immediate``) and removes the directory afterwards.
PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` system
user (created by Debian's ``postgresql`` package) through ``runuser``.

Server binaries are looked up on ``PATH`` and in ``/usr/lib/postgresql/*/bin``
(``make install`` installs Debian's ``postgresql`` when they are missing). When they
are missing: under ``CI=true`` the tests fail, otherwise they skip with the reason.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_openai import free_port

__all__ = ["find_pg_bin", "postgres_url"]

_TIMEOUT = 60


def find_pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    return None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests need a server under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    bin_dir = find_pg_bin()
    if bin_dir is None:
        _unavailable("initdb/pg_ctl not found (make install installs Debian's postgresql)")
        raise AssertionError("unreachable")
    prefix: list[str] = []
    user = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("running as root and there is no 'postgres' user to run the server as")
            raise AssertionError("unreachable") from None
        runuser = shutil.which("runuser")
        if runuser is None:
            _unavailable("running as root and runuser is missing")
        prefix = [str(runuser), "-u", "postgres", "--"]
    base = Path(tempfile.mkdtemp(prefix="liveguard-pg-"))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    if user is not None:
        for path in (base, sock):
            os.chown(path, user.pw_uid, user.pw_gid)
    port = free_port()
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}

    def run(*args: str) -> None:
        done = subprocess.run([*prefix, *args], capture_output=True, text=True, env=env,
                              timeout=_TIMEOUT, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr[-2000:]}")

    started = False
    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
            "--no-sync")
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w", "-t", "60",
            "-o", f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
                  "-c synchronous_commit=off -c max_connections=50",
            "start")
        started = True
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if started:
            with contextlib.suppress(Exception):
                run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
