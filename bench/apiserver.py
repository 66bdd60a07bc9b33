"""Benchmark of the apiserver, each figure beside a bare aiohttp handler as the ceiling.

    .venv/bin/python bench/apiserver.py [--quick]

Both servers run as separate processes on plain HTTP (`draemu apiserver --insecure-http
--in-memory`), so the load generator (this process) does not share their event loop:

- GET one ConfigMap: req/s, p50, p99 (32 concurrent clients)
- CREATE ConfigMaps: req/s
  (both driven by a small Go load generator built on the fly when `go` is on the PATH,
  since a Python client saturates before the servers do; else by aiohttp)
- LIST 10,000 ConfigMaps: p50
- watch fan-out: 1,000 watchers, one write, p99 delivery latency
- `draemu apiserver` start to /readyz, and its resident memory when idle
- the apiserver's CPU time per pod lifecycle as a scheduler and a kubelet drive it
  (create, strategic-merge-patch of status, binding, get, status update)

The bare handler answers the same bodies from a dict (GET, CREATE, LIST) and fans a
line out to 1,000 streams, which is what aiohttp alone can do on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
CM_PATH = "/api/v1/namespaces/default/configmaps"
CONCURRENCY = 32


# The ceiling: a bare aiohttp server ---------------------------------------------------------
def bare_app() -> web.Application:
    objects: dict[str, bytes] = {}
    streams: list[web.StreamResponse] = []

    async def create(request: web.Request) -> web.Response:
        body = await request.json()
        name = body["metadata"]["name"]
        body["metadata"]["resourceVersion"] = str(len(objects) + 1)
        objects[name] = json.dumps(body).encode()
        return web.Response(body=objects[name], status=201, content_type="application/json")

    async def get(request: web.Request) -> web.Response:
        return web.Response(body=objects[request.match_info["name"]],
                            content_type="application/json")

    async def list_(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch"):
            resp = web.StreamResponse()
            resp.content_type = "application/json"
            await resp.prepare(request)
            streams.append(resp)
            await asyncio.Event().wait()
        items = [json.loads(v) for v in objects.values()]
        return web.Response(body=json.dumps({"kind": "ConfigMapList", "items": items}).encode(),
                            content_type="application/json")

    async def notify(request: web.Request) -> web.Response:
        line = json.dumps({"type": "ADDED", "object": await request.json()}).encode() + b"\n"
        for s in list(streams):
            await s.write(line)
        return web.Response(status=201)

    app = web.Application()
    app.router.add_post(CM_PATH, create)
    app.router.add_get(CM_PATH + "/{name}", get)
    app.router.add_get(CM_PATH, list_)
    app.router.add_post("/notify", notify)
    app.router.add_get("/readyz", lambda r: web.Response(text="ok"))
    return app


def run_bare(port: int) -> None:
    """The ceiling runs on the event loop `draemu apiserver` runs on (draemu/aio.py)."""
    from draemu import aio

    loop = None
    if aio.loop_name() == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    web.run_app(bare_app(), host="127.0.0.1", port=port, print=None, access_log=None,
                loop=loop)


# Processes ------------------------------------------------------------------------------------
class Server:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def wait_ready(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < deadline:
            try:
                async with s.get(url + "/readyz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.01)
    raise RuntimeError(f"{url} did not become ready")


async def start_draemu() -> tuple[Server, float]:
    """Start `draemu apiserver`; returns it and the seconds from spawn to /readyz 200."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "draemu", "--log-level", "warning",
                             "apiserver", "--in-memory", "--insecure-http", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=ROOT)
    assert proc.stdout is not None
    url = ""
    while not url:
        line = await asyncio.to_thread(proc.stdout.readline)
        if not line:
            raise RuntimeError("draemu apiserver exited")
        if line.startswith("API server:"):
            url = line.split()[-1]
    await wait_ready(url)
    return Server(proc, url), time.perf_counter() - started


async def start_bare() -> Server:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, __file__, "--bare-server", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{port}"
    await wait_ready(url)
    return Server(proc, url)


# Load -----------------------------------------------------------------------------------------
GO_LOADGEN = r"""
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "", "")
	n := flag.Int("n", 10000, "")
	c := flag.Int("c", 32, "")
	body := flag.String("body", "", "POST this body (%d: the request number)")
	flag.Parse()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: *c, MaxIdleConnsPerHost: *c}}
	lat := make([]float64, *n)
	var next int64 = -1
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= *n {
					return
				}
				method, reader := "GET", io.Reader(nil)
				if *body != "" {
					method, reader = "POST", bytes.NewBufferString(fmt.Sprintf(*body, i))
				}
				req, _ := http.NewRequest(method, *url, reader)
				req.Header.Set("Content-Type", "application/json")
				t := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					fmt.Fprintln(os.Stderr, "status", resp.StatusCode)
					os.Exit(1)
				}
				lat[i] = time.Since(t).Seconds()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	sort.Float64s(lat)
	json.NewEncoder(os.Stdout).Encode(map[string]float64{
		"rate": float64(*n) / elapsed, "p50": lat[*n/2] * 1000, "p99": lat[*n*99/100] * 1000})
}
"""


def build_go_loadgen(folder: Path) -> str | None:
    """Compile the Go load generator (stdlib only, no network); None without `go`."""
    import shutil

    if shutil.which("go") is None:
        return None
    source = folder / "loadgen.go"
    source.write_text(GO_LOADGEN)
    binary = folder / "loadgen"
    subprocess.run(["go", "build", "-o", str(binary), str(source)], check=True,
                   cwd=folder, capture_output=True)
    return str(binary)


async def go_load(binary: str, url: str, n: int, body: str = "") -> dict[str, float]:
    args = [binary, f"-url={url}", f"-n={n}", f"-c={CONCURRENCY}"]
    if body:
        args.append(f"-body={body}")
    proc = await asyncio.create_subprocess_exec(*args, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"load generator failed: {err.decode()}")
    return json.loads(out)


def configmap(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"key": "value", "other": "x" * 100}}


async def load(n: int, request: Callable[[aiohttp.ClientSession, int], Awaitable[None]]
               ) -> tuple[float, list[float]]:
    """Run `n` requests with CONCURRENCY workers; (req/s, sorted latencies)."""
    latencies: list[float] = []
    counter = iter(range(n))
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker() -> None:
            for i in counter:
                t = time.perf_counter()
                await request(session, i)
                latencies.append(time.perf_counter() - t)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        elapsed = time.perf_counter() - started
    return n / elapsed, sorted(latencies)


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(len(values) * p))] * 1000


async def bench_create(url: str, n: int, prefix: str, go: str | None = None) -> float:
    if go:
        body = json.dumps(configmap(f"{prefix}%d"))  # %d: the request number
        return (await go_load(go, url + CM_PATH, n, body))["rate"]

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        async with session.post(url + CM_PATH, json=configmap(f"{prefix}{i}")) as r:
            assert r.status == 201, await r.text()
            await r.read()

    rate, _ = await load(n, one)
    return rate


async def bench_get(url: str, n: int, go: str | None = None) -> tuple[float, float, float]:
    if go:
        async with aiohttp.ClientSession() as s:
            await s.post(url + CM_PATH, json=configmap("get-me"))
        r = await go_load(go, url + CM_PATH + "/get-me", n)
        return r["rate"], r["p50"], r["p99"]

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        async with session.get(url + CM_PATH + "/get-me") as r:
            assert r.status == 200
            await r.read()

    async with aiohttp.ClientSession() as s:
        await s.post(url + CM_PATH, json=configmap("get-me"))
    rate, lat = await load(n, one)
    return rate, pct(lat, 0.5), pct(lat, 0.99)


async def bench_list(url: str, rounds: int) -> float:
    times = []
    async with aiohttp.ClientSession() as s:
        for _ in range(rounds):
            t = time.perf_counter()
            async with s.get(url + CM_PATH) as r:
                body = await r.read()
            times.append(time.perf_counter() - t)
            assert len(json.loads(body)["items"]) >= 10_000
    return statistics.median(times) * 1000


async def bench_fanout(url: str, watchers: int, trigger: Callable[[], Awaitable[None]]
                       ) -> float:
    """p99 of (event received - write issued) over `watchers` watch streams."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=None)) as s:
        async with s.get(url + CM_PATH) as r:
            rv = (await r.json()).get("metadata", {}).get("resourceVersion", "0")
        responses = await asyncio.gather(*(
            s.get(url + CM_PATH + f"?watch=true&resourceVersion={rv}") for _ in range(watchers)))
        await asyncio.sleep(0.5)  # let every watch register on the server
        received: list[float] = []

        async def read(resp: aiohttp.ClientResponse) -> None:
            await resp.content.readline()
            received.append(time.perf_counter())

        readers = [asyncio.create_task(read(r)) for r in responses]
        sent = time.perf_counter()
        await trigger()
        await asyncio.wait_for(asyncio.gather(*readers), 60)
        for r in responses:
            r.close()
    return pct(sorted(t - sent for t in received), 0.99)


# Main ----------------------------------------------------------------------------------------
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "bench"}},
       "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1d"],
                                "resources": {"claims": [{"name": "gpu"}],
                                              "requests": {"cpu": "100m"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}}


async def bench_pod_cpu(server: Server, n: int) -> float:
    """The server's CPU milliseconds per pod lifecycle (five writes and reads)."""
    pods = server.url + "/api/v1/namespaces/default/pods"
    smp = {"Content-Type": "application/strategic-merge-patch+json"}
    plain = {"Content-Type": "application/json"}
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable"}]}}

    async def one(session: aiohttp.ClientSession, i: int) -> None:
        name = f"pod-{i}"
        pod = {**POD, "metadata": {**POD["metadata"], "name": name}}
        for method, url, body, headers in (
                ("POST", pods, pod, None),
                ("PATCH", f"{pods}/{name}/status", unschedulable, smp),
                ("POST", f"{pods}/{name}/binding",
                 {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                  "target": {"kind": "Node", "name": "node-1"}}, None)):
            async with session.request(method, url, data=json.dumps(body),
                                       headers=headers or plain) as r:
                assert r.status < 300, await r.text()
        async with session.get(f"{pods}/{name}") as r:
            current = await r.json()
        current["status"]["phase"] = "Running"
        async with session.put(f"{pods}/{name}/status", json=current) as r:
            assert r.status == 200, await r.text()

    await load(n // 10, one)  # warm-up: first-use imports and caches
    before = server.cpu_seconds()
    await load(n, lambda s, i: one(s, n + i))
    return (server.cpu_seconds() - before) / n * 1000


async def main(quick: bool) -> None:
    import tempfile

    tmp = tempfile.TemporaryDirectory(prefix="draemu-bench-")
    go = build_go_loadgen(Path(tmp.name))
    n_get = (2_000 if quick else 10_000) * (4 if go else 1)
    n_create = 1_000 if quick else 5_000
    n_list = 10_000
    watchers = 200 if quick else 1_000
    draemu, ready_s = await start_draemu()
    await asyncio.sleep(1.0)
    idle_rss = draemu.rss_mib()
    bare = await start_bare()
    rows: list[tuple[str, str, str, str]] = []
    try:
        pod_cpu = await bench_pod_cpu(draemu, 200 if quick else 1_000)
        d_get = await bench_get(draemu.url, n_get, go)
        b_get = await bench_get(bare.url, n_get, go)
        rows.append(("GET one object (req/s)", f"{d_get[0]:,.0f}", f"{b_get[0]:,.0f}",
                     f"{d_get[0] / b_get[0]:.2f}"))
        rows.append(("GET p50 / p99 (ms)", f"{d_get[1]:.2f} / {d_get[2]:.2f}",
                     f"{b_get[1]:.2f} / {b_get[2]:.2f}", f"{b_get[1] / d_get[1]:.2f}"))
        d_create = await bench_create(draemu.url, n_create, "c", go)
        b_create = await bench_create(bare.url, n_create, "c", go)
        rows.append(("CREATE (req/s)", f"{d_create:,.0f}", f"{b_create:,.0f}",
                     f"{d_create / b_create:.2f}"))
        await bench_create(draemu.url, n_list - n_create, "l")
        await bench_create(bare.url, n_list - n_create, "l")
        d_list = await bench_list(draemu.url, 5)
        b_list = await bench_list(bare.url, 5)
        rows.append((f"LIST {n_list:,} objects p50 (ms)", f"{d_list:.0f}", f"{b_list:.0f}",
                     f"{b_list / d_list:.2f}"))

        async def write_draemu() -> None:
            async with aiohttp.ClientSession() as s:
                await s.post(draemu.url + CM_PATH, json=configmap("fanout"))

        async def write_bare() -> None:
            async with aiohttp.ClientSession() as s:
                await s.post(bare.url + "/notify", json=configmap("fanout"))

        d_fan = await bench_fanout(draemu.url, watchers, write_draemu)
        b_fan = await bench_fanout(bare.url, watchers, write_bare)
        rows.append((f"watch fan-out {watchers:,} watchers p99 (ms)", f"{d_fan:.1f}",
                     f"{b_fan:.1f}", f"{b_fan / d_fan:.2f}"))
    finally:
        draemu.stop()
        bare.stop()
        tmp.cleanup()
    width = max(len(r[0]) for r in rows) + 2
    print(f"{'':{width}}{'draemu':>18}{'bare aiohttp':>18}{'ratio':>8}")
    for name, d, b, ratio in rows:
        print(f"{name:{width}}{d:>18}{b:>18}{ratio:>8}")
    print(f"\n`draemu apiserver` start to /readyz: {ready_s:.2f} s (goal <= 0.5 s)")
    print(f"idle resident memory: {idle_rss:.0f} MiB")
    print(f"apiserver CPU per pod lifecycle (create, status patch, binding, get, status "
          f"update): {pod_cpu:.2f} ms")
    print(f"(ratio: draemu / ceiling for rates, ceiling / draemu for times; {os.cpu_count()} "
          "CPUs, server and load generator in separate processes; GET/CREATE load from "
          f"{'Go' if go else 'aiohttp'})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    parser.add_argument("--bare-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server:
        run_bare(args.bare_server)
    else:
        asyncio.run(main(args.quick))
