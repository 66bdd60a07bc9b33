"""Request bodies read whole, whether they came with their headers or trickle in, and
refused beyond 3 MiB either way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer

from draemu.api.errors import StatusError
from draemu.apiserver.wire.codec import MAX_BODY, read_body

pytestmark = pytest.mark.unit


async def echo(request: web.Request) -> web.Response:
    try:
        body = await read_body(request)
    except StatusError as e:
        return web.Response(status=e.code, text=e.reason)
    again = await read_body(request)  # read once, answered from then on
    return web.Response(body=body if again is body else b"read twice")


@pytest_asyncio.fixture
async def url() -> AsyncIterator[str]:
    app = web.Application(client_max_size=MAX_BODY * 2)
    app.router.add_post("/", echo)
    server = TestServer(app)
    await server.start_server()
    try:
        yield str(server.make_url("/"))
    finally:
        await server.close()


async def post(url: str, data: object) -> tuple[int, bytes]:
    async with ClientSession() as session, session.post(url, data=data) as resp:
        return resp.status, await resp.read()


async def trickle(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        await asyncio.sleep(0.01)  # each chunk arrives after the handler started reading
        yield chunk


async def test_a_body_that_came_with_its_headers_is_read_whole(url: str) -> None:
    assert await post(url, b'{"kind":"Pod"}') == (200, b'{"kind":"Pod"}')


async def test_an_empty_body_reads_as_empty(url: str) -> None:
    assert await post(url, b"") == (200, b"")


async def test_a_body_that_trickles_in_is_read_whole(url: str) -> None:
    assert await post(url, trickle(b'{"kind":', b'"Pod"', b"}")) == (200, b'{"kind":"Pod"}')


async def test_a_body_beyond_the_limit_is_refused(url: str) -> None:
    assert await post(url, b"x" * (MAX_BODY + 1)) == (413, b"RequestEntityTooLarge")


async def test_a_streamed_body_beyond_the_limit_is_refused(url: str) -> None:
    half = b"x" * (MAX_BODY // 2 + 1)
    assert await post(url, trickle(half, half)) == (413, b"RequestEntityTooLarge")
