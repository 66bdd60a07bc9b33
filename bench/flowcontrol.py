"""API Priority and Fairness: how long a light client's GETs (and a node's) take while
another client floods the apiserver with LISTs, with APF on and off.

    .venv/bin/python bench/flowcontrol.py [--objects 2000] [--lists 200]

The apiserver runs in this process (SQLite in memory, TLS, client certificates); the
flooding client is a separate process that opens its connections first and then sends
`--lists` concurrent LISTs of `--objects` ConfigMaps of 2 KB each. Meanwhile this
process sends one GET of a ConfigMap as user `light` (the same priority level as the
flooder, global-default: another flow) and one GET as node n1 (node-high), over and over
until the flood is done. Prints p50/p99/max of both, and the flood's duration.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions

CM = "/api/v1/namespaces/default/configmaps"
FLOOD = """
import asyncio, ssl, sys
import aiohttp

async def main(url, cert, key, ca, count):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one(path):
            async with session.get(path, ssl=ctx) as resp:
                await resp.read()
                return resp.status
        await asyncio.gather(*(one(url + "/cm-1") for _ in range(count)))
        print("started", flush=True)
        statuses = await asyncio.gather(*(one(url) for _ in range(count)))
        print(",".join(map(str, sorted(set(statuses)))), flush=True)

asyncio.run(main(*sys.argv[1:5], int(sys.argv[5])))
"""


def _context(server: APIServer, tmp: Path, user: str, groups: list[str]) -> ssl.SSLContext:
    assert server.pki is not None
    pair = server.issue_client_certificate(user, groups)
    cert, key = tmp / f"{user}.crt", tmp / f"{user}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    ctx = ssl.create_default_context(cadata=server.pki.ca.cert_pem.decode())
    ctx.load_cert_chain(cert, key)
    return ctx


async def _run(apf: bool, objects: int, lists: int) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="apf-bench-"))
    server = APIServer(APIServerOptions(data_dir=tmp / "s", store_url="sqlite://:memory:",
                                        enable_priority_and_fairness=apf))
    await server.start()
    assert server.pki is not None
    try:
        admin = _context(server, tmp, "admin", ["system:masters"])
        light = _context(server, tmp, "light", ["readers"])
        node = _context(server, tmp, "system:node:n1", ["system:nodes"])
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            async def call(method: str, path: str, ctx: ssl.SSLContext,
                           body: object = None) -> int:
                async with s.request(method, server.url + path, json=body, ssl=ctx) as r:
                    await r.read()
                    return r.status

            rbac = "/apis/rbac.authorization.k8s.io/v1"
            await call("POST", f"{rbac}/clusterroles", admin, {
                "metadata": {"name": "readers"}, "rules": [{
                    "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})
            await call("POST", f"{rbac}/clusterrolebindings", admin, {
                "metadata": {"name": "readers"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "readers"},
                "subjects": [{"kind": "Group", "name": "readers",
                              "apiGroup": "rbac.authorization.k8s.io"}]})
            payload = "x" * 2000
            for start in range(0, objects, 100):
                await asyncio.gather(*(call("POST", CM, admin, {
                    "metadata": {"name": f"cm-{i}"}, "data": {"data": payload}})
                    for i in range(start, min(start + 100, objects))))
            await call("GET", f"{CM}/cm-1", light)
            await call("GET", "/api/v1/nodes/n1", node)
            pair = server.issue_client_certificate("flooder", ["readers"])
            for name, data in (("f.crt", pair.cert_pem), ("f.key", pair.key_pem),
                               ("ca.crt", server.pki.ca.cert_pem)):
                (tmp / name).write_bytes(data)
            flood = await asyncio.create_subprocess_exec(
                sys.executable, "-c", FLOOD, server.url + CM, str(tmp / "f.crt"),
                str(tmp / "f.key"), str(tmp / "ca.crt"), str(lists),
                stdout=asyncio.subprocess.PIPE)
            assert flood.stdout is not None
            await flood.stdout.readline()
            started = time.perf_counter()
            light_s, node_s = [], []
            waiting = asyncio.create_task(flood.wait())
            while not waiting.done():
                t0 = time.perf_counter()
                await call("GET", f"{CM}/cm-1", light)
                t1 = time.perf_counter()
                await call("GET", "/api/v1/nodes/n1", node)
                light_s.append(t1 - t0)
                node_s.append(time.perf_counter() - t1)
            makespan = time.perf_counter() - started
            statuses = (await flood.stdout.read()).decode().strip()
    finally:
        await server.stop()
    return {"flood s": makespan, "flood statuses": statuses, "samples": len(light_s),
            **_stats("light", light_s), **_stats("node", node_s)}


def _stats(name: str, values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {f"{name} p50 ms": statistics.median(ordered) * 1000, f"{name} p99 ms": p99 * 1000,
            f"{name} max ms": ordered[-1] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--lists", type=int, default=200)
    args = parser.parse_args()
    for apf in (False, True):
        figures = asyncio.run(_run(apf, args.objects, args.lists))
        print(f"APF {'on ' if apf else 'off'}: " + ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
