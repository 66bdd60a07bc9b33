import asyncio

import pytest

from draemu.client import ShutDown, WorkQueue

pytestmark = pytest.mark.unit


async def test_a_key_added_twice_is_handed_out_once():
    q = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert [await q.get(), await q.get()] == ["a", "b"]
    assert len(q) == 0


async def test_a_key_added_while_processing_comes_back_after_done():
    q = WorkQueue()
    q.add("a")
    key = await q.get()
    q.add("a")
    assert len(q) == 0  # not handed to a second worker meanwhile
    q.done(key)
    assert await asyncio.wait_for(q.get(), 1) == "a"


async def test_add_after_delays_the_key():
    q = WorkQueue()
    loop = asyncio.get_running_loop()
    start = loop.time()
    q.add_after("a", 0.05)
    assert await asyncio.wait_for(q.get(), 1) == "a"
    assert loop.time() - start >= 0.045


async def test_rate_limited_retries_back_off_exponentially_until_forgotten():
    q = WorkQueue(base_delay=0.01)
    for _ in range(3):
        q.add_rate_limited("a")
        key = await asyncio.wait_for(q.get(), 1)
        q.done(key)
    assert q.num_requeues("a") == 3
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_shutdown_wakes_waiting_workers():
    q = WorkQueue()
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.shutdown()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(waiter, 1)
