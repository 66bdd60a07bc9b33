"""Running draemu's event loop.

Commands run on uvloop when it is installed (it is a dependency on Linux and macOS):
libuv's loop and its TLS transport cost less CPU per API request than asyncio's own
(bench/scheduler.py: 10-20% more pods/s), and every component here is I/O bound on
one thread.
`DRAEMU_EVENT_LOOP=asyncio` chooses the standard loop (for debugging, or to rule the
loop out when something misbehaves).
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "DRAEMU_EVENT_LOOP"
# Allocations between two collections of the youngest generation (CPython's default: 700).
# Most of what draemu's processes allocate dies within a turn of the event loop (a decoded
# event, a request's body and its copies); collected every 700 allocations, much of it
# was still alive, was walked and promoted, and walked again one generation up (8-9% of
# the apiserver's CPU in `draemu up` under perf, bench/realk8s.py --workload template).
YOUNG_THRESHOLD = 20_000


def collect_young_less_often() -> None:
    """Collect the youngest generation every YOUNG_THRESHOLD allocations: for a process
    once it has started (its long-lived objects made)."""
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def loop_name() -> str:
    """The loop `run` uses: "uvloop" or "asyncio"."""
    wanted = os.environ.get(ENV, "").strip().lower() or "uvloop"
    if wanted not in ("uvloop", "asyncio"):
        raise SystemExit(f"draemu: {ENV}={wanted!r}: expected uvloop or asyncio")
    if wanted == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return "asyncio"
    return wanted


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the chosen loop."""
    try:
        name = loop_name()
    except SystemExit:
        main.close()  # never started: say so quietly, not with a "never awaited" warning
        raise
    if name == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
