"""NodeRestriction reads a node's request body under the same limits as every handler
(issue 15): an alias bomb from a node credential is refused at once."""

from __future__ import annotations

import time

import pytest
from apiclient import Client

pytestmark = pytest.mark.unit

BOMB = (b"apiVersion: v1\nkind: Pod\nmetadata: {name: mirror}\n"
        b"a: &a [x,x,x,x,x,x,x,x,x]\n"
        + b"".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n".encode()
                   for p, n in zip("abcdef", "bcdefg", strict=True)))


async def test_a_node_sending_an_alias_bomb_is_answered_at_once(n1: Client) -> None:
    started = time.perf_counter()
    reply = await n1.request("POST", "/api/v1/namespaces/default/pods", raw=BOMB,
                             content_type="application/yaml")
    assert time.perf_counter() - started < 1.0
    assert reply.status == 400, reply.body
    assert b"excessive aliasing" in reply.body
