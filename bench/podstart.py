"""Pod start latency under the process runtime (needs root).

    .venv/bin/python bench/podstart.py [--pods N] [--parallel N] [--image-map IMAGE=PATH]

An in-process apiserver (in-memory store) and one node whose kubelet runs the process
runtime, as `draemu up --runtime process` without an image map. Measured, each from the
pod's create request:

- one pod at a time, `sh -c true` with restartPolicy Never: until the pod is Succeeded
  (the kubelet's whole start and finish of one short container);
- one pod at a time, `sleep 600`: until the kubelet reports the container running;
- `--parallel` such pods created at once: until the last of them runs.

Prints the median and the 90th percentile in milliseconds, and the CPU seconds this
process (apiserver and kubelet) and its children used. Run it from outside the source
tree to measure another checkout's installed draemu (the script imports `draemu`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from draemu.client import Client
from draemu.cmd.nodes import node_kubeconfig, start_node
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.drivers.presets import NodeSpec
from draemu.kubelet.runtime import ImageMap


def pod(name: str, command: list[str], restart: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "node-1", "restartPolicy": restart,
                     "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": "busybox", "command": command}]}}


async def wait_for(client: Client, name: str, done: Any) -> None:
    async for event in client.watch("v1", "pods", "default",
                                    field_selector=f"metadata.name={name}"):
        if done(event["object"]):
            return


def succeeded(obj: dict[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") == "Succeeded"


def running(obj: dict[str, Any]) -> bool:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all("running" in (s.get("state") or {}) for s in statuses)


async def timed(client: Client, name: str, command: list[str], restart: str,
                done: Any) -> float:
    watcher = asyncio.create_task(wait_for(client, name, done))
    await asyncio.sleep(0.05)  # the watch is open
    start = time.perf_counter()
    await client.create("v1", "pods", pod(name, command, restart), "default")
    await asyncio.wait_for(watcher, 60)
    return (time.perf_counter() - start) * 1000


async def delete_all(client: Client) -> None:
    await client.request("DELETE", "/api/v1/namespaces/default/pods")
    while (await client.list("v1", "pods", "default"))["items"]:
        await asyncio.sleep(0.1)


def summary(label: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"{label:<34} median {statistics.median(values):7.1f} ms   p90 {p90:7.1f} ms   "
            f"(n={len(values)})")


async def main(args: argparse.Namespace) -> None:
    images = ImageMap()
    for entry in args.image_map:
        images.add_entry(entry)
    with tempfile.TemporaryDirectory(prefix="podstart-") as tmp:
        data = Path(tmp)
        server = await start_apiserver(data / "apiserver")
        node = await start_node(NodeSpec("node-1"), data_dir=data,
                                kubeconfig=node_kubeconfig(server, data, "node-1"),
                                server=server, runtime="process", image_map=images or None)
        try:
            async with Client.from_kubeconfig(str(server.kubeconfig_path)) as client:
                await timed(client, "warm", ["sh", "-c", "true"], "Never", succeeded)
                short = [await timed(client, f"short-{i}", ["sh", "-c", "true"], "Never",
                                     succeeded) for i in range(args.pods)]
                await delete_all(client)
                long = [await timed(client, f"long-{i}", ["sleep", "600"], "Always", running)
                        for i in range(args.pods)]
                await delete_all(client)
                batches = []
                for round_ in range(3):
                    start = time.perf_counter()
                    await asyncio.gather(*(timed(client, f"batch-{round_}-{i}", ["sleep", "600"],
                                                 "Always", running)
                                           for i in range(args.parallel)))
                    batches.append((time.perf_counter() - start) * 1000)
                    await delete_all(client)
        finally:
            await node.stop()
            await server.stop()
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                  resource.RUSAGE_CHILDREN)]
    print(summary("create -> Succeeded (sh -c true)", short))
    print(summary("create -> running (sleep 600)", long))
    print(summary(f"{args.parallel} at once -> all running", batches))
    print(f"CPU: this process {usage[0].ru_utime + usage[0].ru_stime:.1f} s, "
          f"children {usage[1].ru_utime + usage[1].ru_stime:.1f} s")


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("the process runtime needs root")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=10)
    parser.add_argument("--image-map", action="append", default=[], metavar="IMAGE=PATH")
    asyncio.run(main(parser.parse_args()))
