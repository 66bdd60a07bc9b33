"""A started apiserver with token users (`token_user`) and an admin HTTPS client."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest_asyncio

from draemu.apiserver.server import APIServer
from draemu.cmd.testing.apiserver import start_apiserver

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


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("".join(f'{t},{u},{u}-uid,"{",".join(g)}"\n'
                              for t, (u, g) in TOKENS.items()))
    srv = await start_apiserver(tmp_path / "apiserver", token_file=tokens)
    try:
        yield srv
    finally:
        await srv.stop()


@pytest_asyncio.fixture
async def as_user(server: APIServer) -> AsyncIterator[Callable[..., As]]:
    async with aiohttp.ClientSession() as session:
        def make(name: str | None = None, *, token: str | None = None, **headers: str) -> As:
            """As a token-file user (`name`), with a raw bearer `token`, or as the
            administrator (neither)."""
            return As(server, session, token or (f"{name}-token" if name else None),
                      {k.replace("_", "-"): v for k, v in headers.items()})
        yield make
