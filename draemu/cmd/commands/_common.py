"""Helpers shared by the long-running commands."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable


async def wait_for_signal() -> None:
    """Return on SIGINT or SIGTERM (graceful shutdown follows)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def serve(start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]) -> None:
    """Start, run until a signal, stop — stopping also when start fails half-way."""
    try:
        await start()
        await wait_for_signal()
    finally:
        await stop()
