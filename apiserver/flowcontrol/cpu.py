"""The CPU time a request's handler takes on the event loop.

The loop is one thread, so `time.thread_time()` over a whole request would count every
other request that ran while it was suspended. What is the handler's own is the time of
its coroutine's steps (from a resume to the next suspension): `Timed` drives the
coroutine and adds the thread time of each step. It costs two clock reads a step (a
handler has a handful of steps). Work done for the request outside its steps (aiohttp
parsing the request, TLS on the connection's transport callbacks) is not counted.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import Any


class Timed:
    """`await Timed(coro)` is `await coro`; `cpu` then holds its steps' thread time."""

    __slots__ = ("coro", "cpu", "stopped")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.cpu = 0.0
        self.stopped = False

    def stop(self) -> None:
        """Stop counting: the rest of the coroutine runs unclocked (a watch once its
        response started: its seat, to which the CPU was charged, is free; clocking
        each event it sends cost two system calls per event)."""
        self.stopped = True

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        clock = time.thread_time
        send: Any = None
        error: BaseException | None = None
        while True:
            if self.stopped:
                try:
                    yielded = coro.send(send) if error is None else coro.throw(error)
                except StopIteration as done:
                    return done.value
                try:
                    send, error = (yield yielded), None
                except BaseException as e:
                    send, error = None, e
                continue
            started = clock()
            try:
                if error is None:
                    yielded = coro.send(send)
                else:
                    yielded = coro.throw(error)
            except StopIteration as done:
                self.cpu += clock() - started
                return done.value
            except BaseException:
                self.cpu += clock() - started
                raise
            self.cpu += clock() - started
            try:
                send, error = (yield yielded), None
            except BaseException as e:  # cancellation (or close) goes to the handler
                send, error = None, e
