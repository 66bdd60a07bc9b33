"""Fixtures of the apiserver tests: a started server, an HTTPS client for it as the
administrator (`client`) and as node n1 (`n1`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest_asyncio
from apiclient import Client, ssl_context_for

from draemu.apiserver.server.lifecycle import APIServer


@pytest_asyncio.fixture
async def client(apiserver: APIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(apiserver.url, session, ssl_context_for(apiserver.kubeconfig_path))


@pytest_asyncio.fixture
async def n1(apiserver: APIServer, tmp_path) -> AsyncIterator[Client]:
    """A client with node n1's credentials."""
    path = apiserver.write_kubeconfig(tmp_path / "n1.kubeconfig", user="system:node:n1",
                                      groups=["system:nodes"])
    async with aiohttp.ClientSession() as session:
        yield Client(apiserver.url, session, ssl_context_for(path))
