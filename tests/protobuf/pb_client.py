"""An HTTPS client for the protobuf tests: the admin credentials of a kubeconfig with
embedded certificates, protobuf or JSON request bodies, JSON answers."""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import yaml

PROTOBUF = "application/vnd.kubernetes.protobuf"


def tls_context(kubeconfig: Path) -> ssl.SSLContext:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
        key.write_bytes(base64.b64decode(user["client-key-data"]))
        ctx.load_cert_chain(cert, key)
    return ctx


class Client:
    def __init__(self, url: str, kubeconfig: Path, session: aiohttp.ClientSession) -> None:
        self.url = url
        self.ssl = tls_context(kubeconfig)
        self.session = session

    async def call(self, method: str, path: str, body: bytes | dict[str, Any] | None = None,
                   accept: str = f"{PROTOBUF},application/json") -> tuple[int, str, Any]:
        """(status, response Content-Type, decoded JSON body); bytes go as protobuf."""
        headers = {"Accept": accept}
        data = None
        if isinstance(body, bytes):
            headers["Content-Type"], data = PROTOBUF, body
        elif body is not None:
            headers["Content-Type"], data = "application/json", json.dumps(body).encode()
        async with self.session.request(method, self.url + path, data=data, headers=headers,
                                        ssl=self.ssl) as resp:
            payload = await resp.read()
            return resp.status, resp.headers.get("Content-Type", ""), json.loads(payload)
