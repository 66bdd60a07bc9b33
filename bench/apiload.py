"""The apiserver figures bench/realk8s.py takes of both control planes.

- list: LIST of `pods` pods in one namespace, JSON, the body read whole and not decoded
  (the client's decoding is not the server's time): the full list, and the list in pages
  of 500 followed by `continue` tokens, as `kubectl get` does (--chunk-size 500). The pods
  name a scheduler that does not exist, so that neither control plane's scheduler works
  on them.
- watch: `watchers` watches of ConfigMaps in one namespace, each on its own TLS
  connection; then writes one after another, each a patch of one ConfigMap carrying a
  fresh marker; the figure is the time from sending the write until the last watcher has
  read the event (the first and the median watcher too). The watchers are asyncio
  protocols of this one Python process that only search the bytes for the marker: a small
  client cost, the same in both sides' figures. Also the control plane's CPU seconds
  (all its processes) while the watches are opened, and per timed write; and this
  process's own CPU per timed write (the client's share of the two cores).
- startup: ConfigMaps are added until the store holds `objects` objects made here (the
  pods above count), then the apiserver is restarted on the same store (draemu: `draemu
  up` again on its data dir; real: kube-apiserver again on the same etcd, which keeps
  running) and timed from the start of the process until /readyz answers 200.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

LIST_NS = "bench-list"
WATCH_NS = "bench-watch"
FILL_NS = "bench-fill"
PAGE = 500


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of `values`."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), -(-len(ordered) * q // 100)))
    return ordered[int(rank) - 1]


def list_pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"listed-{i:05d}", "namespace": LIST_NS,
                         "labels": {"app": "bench-list", "shard": str(i % 16)}},
            "spec": {"schedulerName": "bench-no-such-scheduler",
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "10m",
                                                                "memory": "16Mi"}}}]}}


FILL_LABEL = "bench.draemu.dev/fill=true"


def config_map(namespace: str, name: str, data: dict[str, str],
               labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


async def bounded(coros: list[Awaitable[Any]], limit: int = 32) -> None:
    sem = asyncio.Semaphore(limit)

    async def run(c: Awaitable[Any]) -> None:
        async with sem:
            await c

    await asyncio.gather(*(run(c) for c in coros))


async def create_many(client: Any, resource: str, objs: list[dict[str, Any]],
                      namespace: str) -> float:
    """Create `objs` (32 at a time); the seconds it took."""
    start = time.perf_counter()
    await bounded([client.create("v1", resource, o, namespace) for o in objs])
    return time.perf_counter() - start


async def _get(client: Any, path: str, params: dict[str, str] | None = None) -> bytes:
    status, _, body = await client.request("GET", path, params=params, timeout=300)
    if status != 200:
        raise RuntimeError(f"GET {path} {params}: {status} {body[:300]!r}")
    return body


_CONTINUE = re.compile(rb'"continue"\s*:\s*"([^"]*)"')


async def _paged(client: Any, path: str) -> int:
    """Walk a list page by page; how many pages. Only the token is read of each page."""
    token, pages = "", 0
    while True:
        params = {"limit": str(PAGE)}
        if token:
            params["continue"] = token
        body = await _get(client, path, params)
        pages += 1
        found = _CONTINUE.search(body)
        token = found.group(1).decode() if found else ""
        if not token:
            return pages


async def measure_list(client: Any, pods: int, runs: int) -> dict[str, float]:
    await client.create("v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": LIST_NS}})
    await wait_service_account(client, LIST_NS)
    create = await create_many(client, "pods", [list_pod(i) for i in range(pods)], LIST_NS)
    path = f"/api/v1/namespaces/{LIST_NS}/pods"
    body = await _get(client, path)
    n = len(json.loads(body)["items"])
    if n != pods:
        raise RuntimeError(f"LIST gave {n} pods, {pods} created")
    full, paged = [], []
    pages = 0
    for _ in range(runs):
        t = time.perf_counter()
        await _get(client, path)
        full.append(time.perf_counter() - t)
        t = time.perf_counter()
        pages = await _paged(client, path)
        paged.append(time.perf_counter() - t)
    return {"list_create_per_s": pods / create, "list_bytes": len(body), "list_pages": pages,
            "list_full_p50": percentile(full, 50), "list_full_p99": percentile(full, 99),
            "list_paged_p50": percentile(paged, 50), "list_paged_p99": percentile(paged, 99),
            "list_runs": runs}


async def wait_service_account(client: Any, namespace: str, timeout: float = 60) -> None:
    """A real apiserver refuses pods until the controller-manager made the namespace's
    default ServiceAccount."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await client.list("v1", "serviceaccounts", namespace))["items"]:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no default ServiceAccount in {namespace} after {timeout}s")


class _Watcher(asyncio.Protocol):
    """One watch on its own TLS connection, read by a protocol, not a task: the
    bytes are searched for the current marker as they arrive, nothing is decoded, so that
    the client's cost per event and watcher stays small beside the server's."""

    def __init__(self, fan: FanOut, request: bytes) -> None:
        self.fan, self.request = fan, request
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.head = b""
        self.tail = b""
        self.seen = b""
        self.transport: Any = None  # uvloop's TLS transport is not an asyncio.Transport

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if not self.opened.done():
            self.head += data
            if b"\r\n" not in self.head:
                return
            status = self.head.split(b"\r\n", 1)[0]
            if b" 200 " not in status + b" ":
                self.opened.set_exception(RuntimeError(f"watch: {self.head[:300]!r}"))
                return
            self.opened.set_result(None)
            data, self.head = self.head, b""
        marker = self.fan.marker
        if marker and self.seen != marker and marker in self.tail + data:
            self.seen = marker
            self.fan.arrived()
        self.tail = data[-64:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(exc or ConnectionError("watch closed"))
        elif self.fan.running:
            self.fan.errors.append(f"watch connection lost: {exc!r}")


class FanOut:
    """`n` watchers of one namespace's ConfigMaps; when each saw the current marker."""

    def __init__(self, server: str, ssl_context: Any, headers: dict[str, str], n: int) -> None:
        self.server, self.ssl, self.headers, self.n = server, ssl_context, headers, n
        self.watchers: list[_Watcher] = []
        self.marker = b""
        self.arrivals: list[float] = []
        self.all_seen = asyncio.Event()
        self.errors: list[str] = []
        self.running = False

    def arrived(self) -> None:
        self.arrivals.append(time.perf_counter())
        if len(self.arrivals) == self.n:
            self.all_seen.set()

    async def start(self, resource_version: str) -> None:
        url = urllib.parse.urlsplit(self.server)
        host, port = url.hostname or "127.0.0.1", url.port or 443
        path = (f"/api/v1/namespaces/{WATCH_NS}/configmaps?watch=true&resourceVersion="
                f"{resource_version}&allowWatchBookmarks=false&timeoutSeconds=3600")
        lines = [f"GET {path} HTTP/1.1", f"Host: {url.netloc}"]
        lines += [f"{k}: {v}" for k, v in self.headers.items()]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode()
        loop = asyncio.get_running_loop()
        sem = asyncio.Semaphore(50)
        self.running = True

        async def open_one() -> None:
            async with sem:
                _, watcher = await loop.create_connection(
                    lambda: _Watcher(self, request), host, port,
                    ssl=self.ssl if url.scheme == "https" else None)
                self.watchers.append(watcher)
                await watcher.opened

        await asyncio.gather(*(open_one() for _ in range(self.n)))

    async def deliver(self, write: Callable[[], Awaitable[Any]], marker: bytes,
                      timeout: float) -> tuple[float, float, float, float]:
        """Write; (write latency, first, median, last arrival) in seconds after sending."""
        self.marker, self.arrivals = marker, []
        self.all_seen.clear()
        start = time.perf_counter()
        await write()
        acked = time.perf_counter() - start
        await asyncio.wait_for(self.all_seen.wait(), timeout)
        arrivals = sorted(a - start for a in self.arrivals)
        return acked, arrivals[0], statistics.median(arrivals), arrivals[-1]

    async def stop(self) -> None:
        self.running = False
        for w in self.watchers:
            if w.transport is not None:
                w.transport.close()
        await asyncio.sleep(0)


def _steady_malloc() -> None:
    """Keep glibc's malloc from mapping and unmapping memory for each read of a watch.

    uvloop's TLS reads take a 256 KiB buffer each time (two per event and watcher: the
    second finds nothing more), above glibc's default mmap threshold; shrunk to the
    event's size and freed, it never raised the threshold, so each read cost an mmap, an
    mremap, a munmap and page faults: up to half this process's CPU per write, and more
    when the events of a write came to the 1,000 sockets at once than when they came
    spread out, which made the client's cost depend on the server's timing. With a fixed
    threshold above that size and no trimming of the heap the buffers come from the
    heap; in this process only (the sides' processes are left as they are)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-3, 4 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc
        pass


async def measure_watch(client: Any, kubeconfig: Any, watchers: int, writes: int,
                        cpu: Callable[[], float] | None = None) -> dict[str, float]:
    """`cpu`: the control plane's CPU seconds so far, for what opening the watches and
    each write's fan-out cost it (on a busy machine a steadier figure than the times)."""
    from draemu.client import config

    _steady_malloc()
    await client.create("v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": WATCH_NS}})
    cm = await client.create("v1", "configmaps",
                             config_map(WATCH_NS, "fanout", {"seq": "mark-start"}), WATCH_NS)
    conn = config.load(kubeconfig)
    headers = {"User-Agent": "draemu-bench-fanout", "Accept": "application/json"}
    if conn.token:
        headers["Authorization"] = f"Bearer {conn.token}"
    fan = FanOut(conn.server, conn.ssl_context(), headers, watchers)
    clock = cpu or (lambda: 0.0)
    t, c0 = time.perf_counter(), clock()
    try:
        await fan.start(cm["metadata"]["resourceVersion"])
        opened = time.perf_counter() - t
        c1, own1 = clock(), time.process_time()
        rows = []
        for i in range(writes + 1):  # the first write warms up, not counted
            marker = f"mark-{i:06d}-x"

            async def write(marker: str = marker) -> None:
                await client.patch("v1", "configmaps", "fanout", {"data": {"seq": marker}},
                                   namespace=WATCH_NS, patch_type="merge")

            row = await fan.deliver(write, marker.encode(), timeout=60)
            if i:
                rows.append(row)
        c2, own2 = clock(), time.process_time()
        if fan.errors:
            raise RuntimeError(f"{len(fan.errors)} watchers failed: {fan.errors[:3]}")
    finally:
        await fan.stop()
    last = [r[3] for r in rows]
    out = {"watch_open_cpu_s": c1 - c0, "watch_write_cpu_ms": (c2 - c1) / (writes + 1) * 1000,
           } if cpu is not None else {}
    # This process's own CPU per write: what the 1,000 watchers' reading costs the client
    # (the same on both sides), a floor under the figures when the cores are shared.
    out["watch_client_cpu_ms"] = (own2 - own1) / (writes + 1) * 1000
    return out | {"watch_open_s": opened, "watch_writes": writes,
            "watch_write_p50": percentile([r[0] for r in rows], 50),
            "watch_first_p50": percentile([r[1] for r in rows], 50),
            "watch_median_p50": percentile([r[2] for r in rows], 50),
            "watch_all_p50": percentile(last, 50), "watch_all_p99": percentile(last, 99)}


async def fill(client: Any, objects: int, already: int) -> tuple[int, float]:
    """ConfigMaps until `objects` objects made here; (how many made, objects/s)."""
    todo = max(0, objects - already)
    await client.create("v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": FILL_NS}})
    payload = {"key": "x" * 200}
    seconds = await create_many(
        client, "configmaps",
        [config_map(FILL_NS, f"fill-{i:06d}", payload, dict([FILL_LABEL.split("=")]))
         for i in range(todo)], FILL_NS)
    return todo, todo / seconds if seconds else 0.0
