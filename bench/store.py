"""Store benchmark: draemu's store side by side with etcd on this machine.

    .venv/bin/python bench/store.py [--writes N] [--reads N] [--no-postgres] [--no-etcd]

Prints, for each target: sequential durable writes/s (one write at a time, each
awaited), durable writes/s from 50 concurrent writers, point reads/s, the time to read
a 10,000-key range, and watch delivery latency with 100 watchers (from the start of a
write until each watcher holds its event); then the ratio draemu/etcd of every figure.

Targets: draemu on SQLite (default durability, which survives a process crash, and
fsync=True, which survives power loss), draemu on a throw-away PostgreSQL server with
its default durability when its binaries are present, and etcd (Debian's `etcd-server`,
started on loopback in a temporary directory, driven through `aetcd`) when installed.
Everything runs in one temporary folder on the same file system.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from draemu.cmd.testing.postgres import PostgresServer, PostgresUnavailable
from draemu.store import Store, open_store

VALUE = b'{"kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{}}' * 8
RANGE_KEYS = 10_000
WATCHERS = 100
WRITERS = 50
WATCH_WRITES = 100
LOAD_BATCH = 100
TIMEOUT = 120


@dataclass
class Figures:
    writes_per_s: float
    concurrent_writes_per_s: float
    reads_per_s: float
    range_ms: float
    watch_p50_ms: float
    watch_p99_ms: float


# (label, attribute, whether higher is better)
ROWS = [
    ("sequential durable writes/s", "writes_per_s", True),
    (f"durable writes/s, {WRITERS} concurrent writers", "concurrent_writes_per_s", True),
    ("point reads/s", "reads_per_s", True),
    (f"range of {RANGE_KEYS:,} keys, ms", "range_ms", False),
    (f"watch latency p50, ms ({WATCHERS} watchers)", "watch_p50_ms", False),
    (f"watch latency p99, ms ({WATCHERS} watchers)", "watch_p99_ms", False),
]


class Target(ABC):
    """What the harness needs of a key-value store."""

    name: str

    @abstractmethod
    async def put(self, key: str) -> None: ...

    @abstractmethod
    async def get(self, key: str) -> None: ...

    @abstractmethod
    async def range_count(self, prefix: str) -> int: ...

    @abstractmethod
    async def watch(self, prefix: str, arrived: Callable[[str], None]) -> asyncio.Task: ...

    @abstractmethod
    async def close(self) -> None: ...


class DraemuTarget(Target):
    def __init__(self, name: str, store: Store) -> None:
        self.name = name
        self.store = store

    async def put(self, key: str) -> None:
        await self.store.create(key, VALUE)

    async def get(self, key: str) -> None:
        assert await self.store.get(key) is not None

    async def range_count(self, prefix: str) -> int:
        return len((await self.store.range(prefix)).items)

    async def watch(self, prefix: str, arrived: Callable[[str], None]) -> asyncio.Task:
        watch = self.store.watch(prefix, await self.store.current_revision())

        async def follow() -> None:
            async for event in watch:
                arrived(event.kv.key)

        return asyncio.get_running_loop().create_task(follow())

    async def close(self) -> None:
        await self.store.close()


class EtcdTarget(Target):
    name = "etcd"

    def __init__(self, client: object, process: subprocess.Popen) -> None:
        self.client = client
        self.process = process

    async def put(self, key: str) -> None:
        await self.client.put(key.encode(), VALUE)  # type: ignore[attr-defined]

    async def get(self, key: str) -> None:
        assert await self.client.get(key.encode()) is not None  # type: ignore[attr-defined]

    async def range_count(self, prefix: str) -> int:
        return len(await self.client.get_prefix(prefix.encode()))  # type: ignore[attr-defined]

    async def watch(self, prefix: str, arrived: Callable[[str], None]) -> asyncio.Task:
        watch = await self.client.watch_prefix(prefix.encode())  # type: ignore[attr-defined]

        async def follow() -> None:
            try:
                async for event in watch:
                    arrived(event.kv.key.decode())
            finally:
                await watch.cancel()

        return asyncio.get_running_loop().create_task(follow())

    async def close(self) -> None:
        await self.client.close()  # type: ignore[attr-defined]
        self.process.terminate()
        self.process.wait(TIMEOUT)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def start_etcd(base: Path) -> EtcdTarget:
    import aetcd

    client_port, peer_port = free_port(), free_port()
    peer = f"http://127.0.0.1:{peer_port}"
    client_url = f"http://127.0.0.1:{client_port}"
    log = (base / "etcd.log").open("w")
    process = subprocess.Popen(
        ["etcd", "--data-dir", str(base / "etcd"), "--listen-client-urls", client_url,
         "--advertise-client-urls", client_url, "--listen-peer-urls", peer,
         "--initial-advertise-peer-urls", peer, "--initial-cluster", f"default={peer}"],
        stdout=log, stderr=subprocess.STDOUT)
    # A 10,000-key range is larger than gRPC's default 4 MiB message limit.
    client = aetcd.Client(host="127.0.0.1", port=client_port,
                          options={"grpc.max_receive_message_length": 64 * 1024 * 1024})
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            await client.status()
            return EtcdTarget(client, process)
        except Exception:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"etcd did not start; see {base / 'etcd.log'}") from None
            await asyncio.sleep(0.1)


async def measure(target: Target, writes: int, reads: int) -> Figures:
    keys = [f"/registry/pods/default/pod-{i:06}" for i in range(writes)]
    start = time.perf_counter()
    for key in keys:
        await target.put(key)
    writes_per_s = writes / (time.perf_counter() - start)

    async def writer(n: int) -> None:
        for i in range(writes // WRITERS):
            await target.put(f"/registry/events/ns/writer-{n}-{i}")

    start = time.perf_counter()
    await asyncio.gather(*(writer(n) for n in range(WRITERS)))
    concurrent_per_s = writes // WRITERS * WRITERS / (time.perf_counter() - start)

    picks = [random.choice(keys) for _ in range(reads)]
    start = time.perf_counter()
    for key in picks:
        await target.get(key)
    reads_per_s = reads / (time.perf_counter() - start)

    # Loading the range is setup, not measured: concurrent writes to save time.
    range_keys = [f"/registry/configmaps/ns/cm-{i:06}" for i in range(RANGE_KEYS)]
    for i in range(0, RANGE_KEYS, LOAD_BATCH):
        await asyncio.gather(*(target.put(k) for k in range_keys[i:i + LOAD_BATCH]))
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        assert await target.range_count("/registry/configmaps/") == RANGE_KEYS
        timings.append(time.perf_counter() - start)
    range_ms = statistics.median(timings) * 1000

    p50, p99 = await watch_latency(target)
    return Figures(writes_per_s, concurrent_per_s, reads_per_s, range_ms, p50, p99)


async def watch_latency(target: Target) -> tuple[float, float]:
    arrivals: dict[str, list[float]] = {}
    complete: dict[str, asyncio.Event] = {}

    def arrived(key: str) -> None:
        times = arrivals.setdefault(key, [])
        times.append(time.perf_counter())
        if len(times) == WATCHERS:
            complete[key].set()

    tasks = [await target.watch("/registry/leases/", arrived) for _ in range(WATCHERS)]
    latencies = []
    try:
        for i in range(WATCH_WRITES):
            key = f"/registry/leases/node-{i:04}"
            complete[key] = asyncio.Event()
            start = time.perf_counter()
            await target.put(key)
            async with asyncio.timeout(TIMEOUT):
                await complete[key].wait()
            latencies += [(t - start) * 1000 for t in arrivals[key]]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    latencies.sort()
    return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1]


def render(results: dict[str, Figures]) -> str:
    names = list(results)
    drae = [n for n in names if n != "etcd"]
    header = ["figure", *names] + ([f"{n}/etcd" for n in drae] if "etcd" in results else [])
    lines = [header]
    for label, attribute, higher in ROWS:
        row = [f"{label} ({'higher' if higher else 'lower'} is better)"]
        row += [f"{getattr(results[n], attribute):,.2f}" for n in names]
        if "etcd" in results:
            etcd = getattr(results["etcd"], attribute)
            row += [f"{getattr(results[n], attribute) / etcd:.2f}x" for n in drae]
        lines.append(row)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)


async def main(args: argparse.Namespace) -> int:
    base = Path(tempfile.mkdtemp(prefix="draemu-bench-", dir=args.dir))
    results: dict[str, Figures] = {}
    notes: list[str] = []
    postgres: PostgresServer | None = None
    try:
        for name, fsync in (("draemu-sqlite", False), ("draemu-sqlite-fsync", True)):
            store = await open_store(f"sqlite:///{base / name / 'state.db'}", fsync=fsync,
                                     compaction_interval=0)
            results[name] = await run(DraemuTarget(name, store), args)
        if args.postgres:
            try:
                postgres = PostgresServer(durable=True)
            except PostgresUnavailable as error:
                notes.append(f"draemu-postgresql skipped: {error}")
            else:
                store = await open_store(postgres.create_database("bench"),
                                         compaction_interval=0)
                results["draemu-postgresql"] = await run(
                    DraemuTarget("draemu-postgresql", store), args)
        if args.etcd and shutil.which("etcd"):
            results["etcd"] = await run(await start_etcd(base), args)
        elif args.etcd:
            notes.append("etcd is not installed (apt-get install etcd-server): "
                         "no side-by-side figures")
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(render(results))
    for note in notes:
        print(note)
    return 0


async def run(target: Target, args: argparse.Namespace) -> Figures:
    print(f"measuring {target.name} ...", file=sys.stderr, flush=True)
    try:
        return await measure(target, args.writes, args.reads)
    finally:
        await target.close()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000, help="sequential writes")
    parser.add_argument("--reads", type=int, default=5000, help="point reads")
    parser.add_argument("--no-postgres", dest="postgres", action="store_false",
                        help="skip draemu on PostgreSQL")
    parser.add_argument("--no-etcd", dest="etcd", action="store_false", help="skip etcd")
    parser.add_argument("--dir", help="folder for the temporary data (default: system temp)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse(sys.argv[1:]))))
