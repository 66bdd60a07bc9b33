"""CEL evaluations that may run long, off the event loop: a request's admission policies,
a custom resource's validation rules.

The cost limits bound how much an evaluation may do; the time that takes in Python is
still seconds at worst, which on the event loop would stall every other request (issue
35: /readyz 14.5 s). So they run in a worker thread, at most `WORKERS` at once (more
would leave the event loop too small a share of the interpreter: measured with one
nested comprehension per thread, /readyz-like probes waited at worst 60 ms beside two
such threads and 330 ms beside four), each with a deadline its evaluations look at on
every iteration and call ("operation interrupted").

Threads, not processes: policies call back into the apiserver (`authorizer.check`), and
the objects would have to be copied to another process for every request.

    result = await run_off_loop(lambda deadline: policies.decide(plan, deadline))
    check = through_loop(authorizer.check)     # a worker's callback into the loop's state
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKERS = 2
# Seconds one request's evaluations may take: ten times what a whole budget took here on
# an idle machine (3 s), half kube-apiserver's request timeout; a bound on how long an
# evaluation can hold a worker.
TIMEOUT = 30.0

_POOL = ThreadPoolExecutor(WORKERS, thread_name_prefix="cel")


async def run_off_loop(fn: Callable[[float], T], timeout: float = TIMEOUT) -> T:
    """`fn(deadline)` in a CEL worker thread; the deadline (a `time.monotonic()` value)
    starts when a worker takes the call, so waiting for one is not counted."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()

    def call() -> T:
        return context.run(fn, time.monotonic() + timeout)
    return await loop.run_in_executor(_POOL, call)


def through_loop(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` for a CEL worker to call when what it reads belongs to the event loop (the
    apiserver's authorizer and its caches): run on the loop, the worker waiting. Called
    on the loop itself, it runs at once. Make it on the loop."""
    loop = asyncio.get_running_loop()
    owner = threading.get_ident()

    def call(*args: object, **kwargs: object) -> T:
        if threading.get_ident() == owner:
            return fn(*args, **kwargs)
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as e:  # handed to the waiting worker
                future.set_exception(e)
        loop.call_soon_threadsafe(run)
        return future.result()
    return call
