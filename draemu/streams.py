"""Copying bytes between two asyncio stream pairs, both ways: the proxies of the kubelet
(into a pod's network namespace, probes) and the benchmarks' TCP balancer."""

from __future__ import annotations

import asyncio

Pair = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until the reader ends or either side fails, then close the writer."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


async def splice(a: Pair, b: Pair) -> None:
    """Copy a's bytes to b and b's to a until both directions have ended."""
    await asyncio.gather(pipe(a[0], b[1]), pipe(b[0], a[1]))
