"""Keeps CPython's cyclic garbage collector off the watch cache (draemu's own).

The cache holds millions of long-lived dicts and lists (a decoded pod is some thirty).
CPython's full collection walks every tracked object, and it runs whenever the objects
promoted since the last one reach a quarter of the old ones: copies that live through a
request (a page of decoded objects, a write's copies) promote tens of thousands at a
time, so with 80,000 objects cached a full collection of 0.3-1.2 s came every few
seconds of load, freezing the event loop. Objects that survived a full collection are
moved out of the collector's reach instead (`gc.freeze`), once there are FREEZE_AT of
them: later full collections walk only what is newer. A frozen object is still freed by
reference counting (the cache's objects are trees: they all are); only cyclic garbage
among frozen objects waits, so whenever the frozen set has doubled since everything was
last collected, it is unfrozen and collected once (a pause each time the heap doubles,
not every few seconds).

One per process (the collector is): `draemu apiserver` and `draemu up` turn it on
(`APIServerOptions.freeze_gc`); in-process test servers leave the collector alone.
"""

from __future__ import annotations

import asyncio
import gc
import time

from draemu.log import get_logger

log = get_logger("apiserver.gc")

INTERVAL = 1.0  # seconds between looks at the collector
# Survivors of a full collection frozen once there are this many (fewer are cheap to walk,
# and each freeze also freezes the requests under way, whose cycles then wait).
FREEZE_AT = 50_000
# What is frozen after everything was collected may reach this share of what was frozen
# then before everything is collected again.
REGROW = 1.0
MIN_REGROW = 200_000  # ... and by at least this many objects


class GCFreezer:
    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._full = 0  # full collections seen
        self._base = 0  # frozen objects just after everything was last collected
        self._added = 0  # objects frozen since (some may have been freed since)
        self.freezes = 0
        self.recollections = 0

    def start(self) -> None:
        """Follow the collector from now on; the first look, a moment after start-up,
        collects and freezes what start-up made (without unfreezing what the process
        froze before: `draemu up` freezes the modules it shares with its forked child)."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="gc-freezer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        await asyncio.sleep(INTERVAL)
        self._collect(unfreeze=False)
        while True:
            await asyncio.sleep(INTERVAL)
            self.step()

    def step(self) -> None:
        """After each full collection: freeze its survivors when there are enough of
        them, or collect everything again once what was frozen since the last time
        outgrew the frozen set. (Sizes are counted as objects are frozen: the
        collector counts the frozen set by walking all of it.)"""
        full = gc.get_stats()[2]["collections"]
        if full == self._full:
            return
        self._full = full
        if self._added > max(self._base * REGROW, MIN_REGROW):
            self._collect(unfreeze=True)
            return
        if len(gc.get_objects(generation=2)) >= FREEZE_AT:
            # What lived through that collection is long-lived: out of the next ones'
            # way (the young generations are collected first, so that little garbage is
            # frozen with it).
            gc.collect(1)
            self._added += len(gc.get_objects())
            gc.freeze()
            self._full = gc.get_stats()[2]["collections"]
            self.freezes += 1

    def absorb(self) -> None:
        """Freeze now what was just made and is known to live (the watch cache decoded
        many objects with the collector paused), without counting it as growth."""
        self._base += len(gc.get_objects())
        gc.freeze()
        self.freezes += 1

    def _collect(self, unfreeze: bool) -> None:
        started = time.perf_counter()
        if unfreeze:
            gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._base = gc.get_freeze_count()  # a walk of the frozen set: only here
        self._added = 0
        self._full = gc.get_stats()[2]["collections"]
        self.recollections += 1
        log.debug("collected and froze the heap", objects=self._base,
                  seconds=round(time.perf_counter() - started, 3))
