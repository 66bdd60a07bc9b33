"""HTTPS requests to a test apiserver as a token-file user, a raw bearer token or the
administrator (the `as_user` fixture of conftest.py)."""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp

from draemu.apiserver.server.lifecycle import APIServer

TOKENS = {"alice-token": ("alice", ["developers"]), "bob-token": ("bob", []),
          "carol-token": ("carol", [])}


class Reply:
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.json = body


class As:
    """Requests to the apiserver with a bearer token (or the admin certificate)."""

    def __init__(self, server: APIServer, session: aiohttp.ClientSession,
                 token: str | None, headers: dict[str, str] | None = None) -> None:
        self.server, self.session, self.token = server, session, token
        self.headers = dict(headers or {})
        self.ssl = ssl.create_default_context(cadata=server.pki.ca.cert_pem.decode())
        if token is None:
            pair = server.pki.admin
            cert = server.data_dir / "admin-test.crt"
            key = server.data_dir / "admin-test.key"
            cert.write_bytes(pair.cert_pem)
            key.write_bytes(pair.key_pem)
            self.ssl.load_cert_chain(cert, key)

    async def request(self, method: str, path: str, body: Any = None,
                      headers: dict[str, str] | None = None) -> Reply:
        h = {**self.headers, **(headers or {})}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        async with self.session.request(method, self.server.url + path, json=body,
                                        headers=h, ssl=self.ssl) as resp:
            try:
                data = await resp.json(content_type=None)
            except ValueError:
                data = None
            return Reply(resp.status, data)

    async def get(self, path: str, **kw: Any) -> Reply:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> Reply:
        return await self.request("PUT", path, body, **kw)

    async def delete(self, path: str, **kw: Any) -> Reply:
        return await self.request("DELETE", path, **kw)
