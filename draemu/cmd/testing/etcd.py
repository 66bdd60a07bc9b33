"""Throw-away etcd clusters for tests, drills and benchmarks: the real etcd binary, one
member or several, on loopback ports, in a temporary directory.

The binary: $DRAEMU_ETCD, else etcd built at the version Kubernetes pins
(`tests/e2e/realk8s/build.sh etcd` puts it in ~/.cache/draemu/realk8s/bin; make test
runs it), else `etcd` on PATH. Members can be killed (SIGKILL) and
started again on their data, for the drills. `tls=True` serves clients over TLS with a
CA of its own and asks for client certificates (`client_files` are the client's).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from draemu import pki

START_TIMEOUT = 60.0


class EtcdUnavailable(RuntimeError):
    """No etcd binary, or it would not start."""


def find_etcd() -> Path | None:
    named = os.environ.get("DRAEMU_ETCD")
    if named:
        return Path(named)
    root = Path(os.environ.get("DRAEMU_REALK8S_CACHE",
                               Path.home() / ".cache" / "draemu" / "realk8s"))
    built = Path(os.environ.get("DRAEMU_REALK8S_BIN", root / "bin")) / "etcd"
    if built.exists():
        return built
    on_path = shutil.which("etcd")
    return Path(on_path) if on_path else None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class EtcdCluster:
    """`members` etcd members forming one cluster; `url` is the store URL naming them
    all. `fsync=False` (tests) spares the disk; the drills keep etcd's fsync."""

    def __init__(self, members: int = 1, *, binary: Path | None = None, fsync: bool = False,
                 tls: bool = False, extra_args: tuple[str, ...] = ()) -> None:
        found = binary or find_etcd()
        if found is None or not found.exists():
            raise EtcdUnavailable("etcd not found: build it with `bash tests/e2e/realk8s/"
                                  "build.sh etcd` (or set DRAEMU_ETCD)")
        self.binary = found
        self.base = Path(tempfile.mkdtemp(prefix="draemu-etcd-"))
        self.fsync = fsync
        self.extra_args = extra_args
        self.token = f"draemu-{uuid.uuid4().hex[:8]}"
        self.tls_dir: Path | None = None
        if tls:
            self.tls_dir = self.base / "pki"
            self._make_certificates(self.tls_dir)
        self.members: list[Member] = []
        try:
            self._start_all(members)
        except BaseException:
            self.stop()
            raise

    # -- addresses ---------------------------------------------------------------------

    @property
    def endpoints(self) -> str:
        return ",".join(f"127.0.0.1:{m.client_port}" for m in self.members)

    def url(self, prefix: str = "") -> str:
        """The store URL of the cluster (with its TLS files when it serves TLS)."""
        url = f"etcd://{self.endpoints}{prefix}"
        if self.tls_dir is not None:
            files = self.client_files()
            url += (f"?cafile={files['cafile']}&certfile={files['certfile']}"
                    f"&keyfile={files['keyfile']}")
        return url

    def client_files(self) -> dict[str, str]:
        assert self.tls_dir is not None
        return {"cafile": str(self.tls_dir / "ca.crt"),
                "certfile": str(self.tls_dir / "client.crt"),
                "keyfile": str(self.tls_dir / "client.key")}

    # -- members -----------------------------------------------------------------------

    def _start_all(self, count: int) -> None:
        last = ""
        for _attempt in range(3):  # a free port can be taken before etcd binds it
            ports = _free_ports(2 * count)
            self.members = [Member(f"m{i}", ports[2 * i], ports[2 * i + 1],
                                   self.base / f"m{i}", self.base / f"m{i}.log")
                            for i in range(count)]
            for member in self.members:
                self._spawn(member, new=True)
            try:
                for member in self.members:
                    self._wait_healthy(member)
                return
            except EtcdUnavailable as error:
                last = str(error)
                for member in self.members:
                    self.kill(member)
                    shutil.rmtree(member.data, ignore_errors=True)
        raise EtcdUnavailable(last)

    def _spawn(self, member: Member, *, new: bool) -> None:
        scheme = "https" if self.tls_dir is not None else "http"
        initial = ",".join(f"{m.name}=http://127.0.0.1:{m.peer_port}" for m in self.members)
        args = [str(self.binary), "--name", member.name, "--data-dir", str(member.data),
                "--listen-client-urls", f"{scheme}://127.0.0.1:{member.client_port}",
                "--advertise-client-urls", f"{scheme}://127.0.0.1:{member.client_port}",
                "--listen-peer-urls", f"http://127.0.0.1:{member.peer_port}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{member.peer_port}",
                "--initial-cluster", initial, "--initial-cluster-token", self.token,
                "--initial-cluster-state", "new" if new else "existing",
                "--log-level", "warn"]
        if not self.fsync:
            args.append("--unsafe-no-fsync")
        if self.tls_dir is not None:
            args += ["--cert-file", str(self.tls_dir / "server.crt"),
                     "--key-file", str(self.tls_dir / "server.key"),
                     "--trusted-ca-file", str(self.tls_dir / "ca.crt"),
                     "--client-cert-auth"]
        args += list(self.extra_args)
        with member.log.open("ab") as log:
            member.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL)

    def _wait_healthy(self, member: Member) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not member.running:
                tail = member.log.read_text(errors="replace")[-2000:]
                raise EtcdUnavailable(f"etcd member {member.name} exited:\n{tail}")
            if self._healthy(member):
                return
            time.sleep(0.05)
        raise EtcdUnavailable(f"etcd member {member.name} not healthy in {START_TIMEOUT:.0f} s")

    def _healthy(self, member: Member) -> bool:
        if self.tls_dir is not None:
            # Serving TLS with client certificates: a TCP connection is enough here, the
            # store's own requests wait for the cluster.
            try:
                with socket.create_connection(("127.0.0.1", member.client_port), 0.5):
                    return True
            except OSError:
                return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{member.client_port}/health",
                                        timeout=1) as response:
                return b'"health":"true"' in response.read()
        except OSError:
            return False

    def leader(self) -> Member:
        """The member that leads the cluster now (asked over etcd's JSON gateway)."""
        ids: dict[str, Member] = {}
        leader = ""
        for member in self.members:
            if not member.running:
                continue
            status = self._status(member)
            ids[status["header"]["member_id"]] = member
            leader = status.get("leader", leader)
        if leader not in ids:
            raise EtcdUnavailable("the etcd cluster has no leader among its running members")
        return ids[leader]

    def _status(self, member: Member) -> dict:
        scheme = "https" if self.tls_dir is not None else "http"
        request = urllib.request.Request(
            f"{scheme}://127.0.0.1:{member.client_port}/v3/maintenance/status", data=b"{}",
            method="POST")
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())

    def kill(self, member: Member) -> None:
        """SIGKILL the member (its data stays)."""
        if member.process is not None and member.process.poll() is None:
            member.process.send_signal(signal.SIGKILL)
            member.process.wait()
        member.process = None

    def restart(self, member: Member) -> None:
        """Start a killed member again on its data."""
        self._spawn(member, new=False)
        self._wait_healthy(member)

    def stop(self) -> None:
        """Kill every member and remove the files."""
        for member in self.members:
            self.kill(member)
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> EtcdCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @staticmethod
    def _make_certificates(folder: Path) -> None:
        folder.mkdir(parents=True)
        ca = pki.make_ca("draemu-etcd-ca")
        server = pki.make_serving_cert(ca, "127.0.0.1")
        client = pki.make_client_cert(ca, "draemu-apiserver", ())
        for name, data in (("ca.crt", ca.cert_pem), ("server.crt", server.cert_pem),
                           ("server.key", server.key_pem), ("client.crt", client.cert_pem),
                           ("client.key", client.key_pem)):
            (folder / name).write_bytes(data)
