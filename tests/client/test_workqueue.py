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


async def test_each_key_wakes_one_waiting_worker():
    q = WorkQueue()
    got: list[str] = []

    async def worker() -> None:
        got.append(await q.get())

    workers = [asyncio.create_task(worker()) for _ in range(3)]
    await asyncio.sleep(0)
    q.add("a")
    q.add("b")
    await asyncio.sleep(0.01)
    assert sorted(got) == ["a", "b"]
    assert sum(not w.done() for w in workers) == 1  # the third still waits
    q.add("c")
    await asyncio.wait_for(asyncio.gather(*workers), 1)
    assert sorted(got) == ["a", "b", "c"]


async def test_a_worker_cancelled_after_its_wake_up_passes_the_key_on():
    q = WorkQueue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes the first waiter...
    first.cancel()  # ...which goes before it could take the key
    assert await asyncio.wait_for(second, 1) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first
