"""A started apiserver with token-file users and the `as_user` client factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest_asyncio
from rbac_client import TOKENS, As

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import start_apiserver


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
