"""`Client.watch` reads a watch stream whatever its chunking: several events in one
chunk, an event split over chunks, a last event without its newline."""

from __future__ import annotations

import json

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from draemu.client import Client

pytestmark = pytest.mark.unit


def _event(i: int) -> bytes:
    return json.dumps({"type": "ADDED", "object": {
        "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "resourceVersion": str(i)},
        "data": {"text": "x" * (i * 7 % 50)}}}).encode()


async def _watched(chunks: list[bytes]) -> list[dict]:
    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        for chunk in chunks:
            await resp.write(chunk)
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/configmaps", stream)
    server = TestServer(app)
    await server.start_server()
    try:
        async with Client(str(server.make_url(""))) as client:
            return [e async for e in client.watch("v1", "configmaps")]
    finally:
        await server.close()


async def test_many_events_in_one_chunk() -> None:
    events = [_event(i) for i in range(20)]
    got = await _watched([b"\n".join(events) + b"\n"])
    assert [e["object"]["metadata"]["name"] for e in got] == [f"cm-{i}" for i in range(20)]


async def test_events_split_across_chunks_at_any_byte() -> None:
    text = b"".join(_event(i) + b"\n" for i in range(6))
    # Cut into pieces of 1, 2, 3, ... bytes: every cut point lands somewhere in a line.
    pieces, at, size = [], 0, 1
    while at < len(text):
        pieces.append(text[at:at + size])
        at, size = at + size, size % 37 + 1
    got = await _watched(pieces)
    assert [json.dumps(e).encode() for e in got] == [_event(i) for i in range(6)]


async def test_blank_lines_are_skipped_and_a_last_line_needs_no_newline() -> None:
    got = await _watched([_event(0) + b"\n\n  \n" + _event(1)[:10], _event(1)[10:]])
    assert [e["object"]["metadata"]["name"] for e in got] == ["cm-0", "cm-1"]
