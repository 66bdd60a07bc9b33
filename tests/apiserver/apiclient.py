"""A small HTTPS client for talking to the apiserver the way clients do, and the
objects the tests send."""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml


@dataclass
class Reply:
    status: int
    headers: Any
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")


def ssl_context_for(kubeconfig: Path) -> ssl.SSLContext:
    """A client TLS context from a kubeconfig with embedded CA and client cert."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    if "client-certificate-data" in user:
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "c.crt", Path(d) / "c.key"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            ctx.load_cert_chain(cert, key)
    return ctx


class Client:
    def __init__(self, base: str, session: aiohttp.ClientSession,
                 ssl_context: ssl.SSLContext | None) -> None:
        self.base = base
        self.session = session
        self.ssl = ssl_context

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str | None = "application/json",
                      headers: dict[str, str] | None = None, raw: bytes | None = None) -> Reply:
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None and content_type:
            hdrs["Content-Type"] = content_type
        skip = () if content_type else ("Content-Type",)
        async with self.session.request(method, self.base + path, data=data, headers=hdrs,
                                        skip_auto_headers=skip,
                                        ssl=self.ssl if self.ssl else False) as resp:
            return Reply(resp.status, resp.headers, await resp.read())

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, content_type: str, **kw: Any) -> Reply:
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return await self.request("DELETE", path, body, **kw)

    async def stream(self, path: str, headers: dict[str, str] | None = None
                     ) -> aiohttp.ClientResponse:
        """A response to read line by line; the caller closes it."""
        return await self.session.get(self.base + path, headers=headers or {},
                                      ssl=self.ssl if self.ssl else False)


async def next_event(resp: aiohttp.ClientResponse, timeout: float = 10.0) -> dict[str, Any]:
    import asyncio

    line = await asyncio.wait_for(resp.content.readline(), timeout)
    assert line.endswith(b"\n"), f"stream ended: {line!r}"
    return json.loads(line)


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, node: str = "", **spec: object) -> dict:
    body: dict = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                  "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


@asynccontextmanager
async def own_apiserver(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[Client, Any]]:
    """An apiserver of its own (e.g. with a small watch cache) and a client for it."""
    from draemu.cmd.testing.apiserver import start_apiserver

    server = await start_apiserver(tmp_path / "own", **options)
    try:
        async with aiohttp.ClientSession() as session:
            yield Client(server.url, session, ssl_context_for(server.kubeconfig_path)), server
    finally:
        await server.stop()


async def list_revision(client: Client, path: str = CM) -> str:
    """The resourceVersion of a LIST of `path` now."""
    return (await client.get(path)).json["metadata"]["resourceVersion"]
