"""Fixtures of the apiserver tests: a started server and an HTTPS client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest_asyncio
from apiclient import Client, ssl_context_for

from draemu.apiserver.server import APIServer


@pytest_asyncio.fixture
async def client(apiserver: APIServer) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(apiserver.url, session, ssl_context_for(apiserver.kubeconfig_path))
