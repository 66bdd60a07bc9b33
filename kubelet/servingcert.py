"""The kubelet API's TLS: its serving certificate and the CA of the clients it trusts.

A kubelet in its own process serves HTTPS, as a real one does on port 10250. Its
certificate is signed by the cluster CA when the kubelet can reach it (the cluster's
data directory on the same host, like a kubelet-serving certificate a real cluster
signs), so that the apiserver verifies it; otherwise it is self-signed, as a kubelet
without server TLS bootstrap makes it, and the apiserver only reaches it when asked to
skip that check (`kubectl logs --insecure-skip-tls-verify-backend`).
"""

from __future__ import annotations

import os
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

from draemu.pki import KeyPair, make_ca, make_kubelet_serving_cert


@dataclass(frozen=True)
class ServingTLS:
    cert_file: Path
    key_file: Path
    # Client certificates signed by this CA authenticate callers (the apiserver).
    client_ca_file: Path

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        ctx.load_verify_locations(cafile=str(self.client_ca_file))
        ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


def cluster_ca(data_dir: Path) -> KeyPair | None:
    """The cluster CA kept in a draemu data directory, if this host has it."""
    cert, key = data_dir / "pki" / "ca.crt", data_dir / "pki" / "ca.key"
    if cert.exists() and key.exists():
        return KeyPair(cert.read_bytes(), key.read_bytes())
    return None


def issue_serving_tls(directory: Path, node: str, hosts: list[str], client_ca_pem: bytes,
                      ca: KeyPair | None) -> ServingTLS:
    """Write a serving certificate for `hosts` (signed by `ca`, or self-signed) and the
    client CA into `directory`."""
    signer = ca or make_ca(f"{node}-ca@{int(time.time())}")
    pair = make_kubelet_serving_cert(signer, node, hosts)
    tls = ServingTLS(directory / "kubelet.crt", directory / "kubelet.key",
                     write_client_ca(directory, client_ca_pem))
    _write(tls.cert_file, pair.cert_pem + (b"" if ca else signer.cert_pem), 0o644)
    _write(tls.key_file, pair.key_pem, 0o600)
    return tls


def write_client_ca(directory: Path, pem: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "client-ca.crt"
    _write(path, pem, 0o644)
    return path


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
