"""A throw-away PostgreSQL server for tests and benchmarks.

Finds `initdb`, `pg_ctl` and `postgres` on PATH or under /usr/lib/postgresql/*/bin,
creates a cluster in a temporary directory (trust authentication, durability off: it is
thrown away), starts it on a free loopback port with its unix socket in the same
directory, and stops and removes everything on `stop()`. initdb refuses to run as root,
so as root the cluster belongs to the `postgres` user and its commands run as that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

START_TIMEOUT = 60


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine, or the server would not start."""


def find_bin_dir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres, or None."""
    on_path = shutil.which("initdb")
    if on_path:
        folder = Path(on_path).resolve().parent
        if (folder / "pg_ctl").exists() and (folder / "postgres").exists():
            return folder
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                        key=lambda p: _major(p.parent.name), reverse=True)
    for folder in candidates:
        if all((folder / name).exists() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _major(name: str) -> int:
    return int(name) if name.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """A running throw-away server. `url` names its `postgres` database."""

    def __init__(self, bin_dir: Path | None = None, *, durable: bool = False) -> None:
        """`durable`: keep PostgreSQL's fsync and synchronous commit (for benchmarks);
        tests turn them off, which is safe for a server that is thrown away."""
        found = bin_dir or find_bin_dir()
        if found is None:
            raise PostgresUnavailable("PostgreSQL server binaries (initdb, pg_ctl, postgres) "
                                      "not found on PATH or under /usr/lib/postgresql")
        self.bin_dir = found
        self.base = Path(tempfile.mkdtemp(prefix="draemu-pg-"))
        self.data = self.base / "data"
        self.port = 0
        self._as_postgres = os.geteuid() == 0
        self._durable = durable
        try:
            if self._as_postgres:
                user = pwd.getpwnam("postgres")
                os.chown(self.base, user.pw_uid, user.pw_gid)
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                      "-E", "UTF8", "--locale=C", "--no-sync")
            self._start()
        except BaseException:
            shutil.rmtree(self.base, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        subprocess.run([str(self.bin_dir / "createdb"), "-h", "127.0.0.1", "-p",
                        str(self.port), "-U", "postgres", name],
                       check=True, capture_output=True, timeout=START_TIMEOUT)
        return self.database_url(name)

    def stop(self) -> None:
        """Stop the server at once and remove its files."""
        try:
            if self.port:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def _start(self) -> None:
        # A free port can be taken between the probe and the bind: try a few.
        last = ""
        for _ in range(5):
            port = _free_port()
            options = (f"-p {port} -k {self.base} -c listen_addresses=127.0.0.1 "
                       "-c max_connections=200")
            if not self._durable:
                options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            result = self._run("pg_ctl", "-D", str(self.data), "-o", options, "-w",
                               "-t", str(START_TIMEOUT), "-l", str(self.base / "log"),
                               "start", check=False)
            if result.returncode == 0:
                self.port = port
                return
            last = (self.base / "log").read_text(errors="replace")[-2000:]
        raise PostgresUnavailable(f"PostgreSQL did not start:\n{last}")

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin_dir / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT,
                                cwd=self.base)
        if check and result.returncode != 0:
            raise PostgresUnavailable(f"{tool} failed: {result.stderr.strip() or result.stdout}")
        return result

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
