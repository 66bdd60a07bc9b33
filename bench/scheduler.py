"""Scheduler throughput with DRA, after upstream's scheduler_perf DRA workloads.

N nodes, each publishing one ResourceSlice with 8 devices; one DeviceClass; pods that each
reference a ResourceClaimTemplate whose single request selects one device with a CEL
selector. The resource-claim controller turns templates into claims; the scheduler
allocates and binds. Figure: pods scheduled per second end to end (from the first pod
created until every pod is bound and every claim allocated).

The apiserver (with the resource-claim controller on its loopback socket) runs in a
child process and the scheduler in this one, so that the two can use two cores; both
on the event loop draemu's commands use (uvloop; DRAEMU_EVENT_LOOP=asyncio for the
standard one).

    .venv/bin/python bench/scheduler.py --nodes 100,500 [--pods 1000] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import multiprocessing
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DRIVER = "gpu.example.com"
CLASS = "gpu.example.com"
DEVICES_PER_NODE = 8
NS = "bench"
STALL_SECONDS = 60.0


def _serve(data_dir: str, pipe: Any, profile: bool) -> None:
    """Child process: apiserver on a free port plus the resource-claim controller. Runs
    until told to stop on the pipe; then prints its profile, if asked to profile."""
    from draemu import aio, log
    from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions
    from draemu.controllers.manager import ControllerManager

    log.configure("console", "warning")

    async def main() -> None:
        server = APIServer(APIServerOptions(data_dir=Path(data_dir),
                                            store_url="sqlite://:memory:"))
        await server.start()
        # In one process with the apiserver, as `draemu up` runs them.
        client = server.loopback_client("draemu-bench-controllers")
        controllers = ControllerManager(client, enabled=["resourceclaim"])
        await controllers.start()
        pipe.send(str(server.kubeconfig_path))
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
        if profiler:
            profiler.disable()
            print("--- apiserver process ---")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
            if os.environ.get("DRAEMU_BENCH_PROFILE_FILE"):
                profiler.dump_stats(os.environ["DRAEMU_BENCH_PROFILE_FILE"])
            print("--- requests served ---")
            for labels, count in sorted(server.api.metrics.requests.items(),
                                        key=lambda kv: -kv[1]):
                d = dict(labels)
                print(f"{count:8d}  {d['verb']:6s} {d['resource']}"
                      f"{'/' + d['subresource'] if d['subresource'] else ''} {d['code']}")
        pipe.send("stopped")

    aio.run(main())


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def resource_slice(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    devices = [{"name": f"gpu-{d}",
                "attributes": {"model": {"string": "A100" if d % 2 == 0 else "H100"},
                               "index": {"int": d}},
                "capacity": {"memory": {"value": "80Gi"}}}
               for d in range(DEVICES_PER_NODE)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": name,
                     "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": CLASS},
                "spec": {"selectors": [{"cel": {"expression":
                                                f'device.driver == "{DRIVER}"'}}]}}

TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": CLASS,
                "selectors": [{"cel": {"expression":
                                       f'device.attributes["{DRIVER}"].model == "A100" || '
                                       f'device.attributes["{DRIVER}"].model == "H100"'}}]}}]}}}}


def pod(i: int, direct: bool = False) -> dict[str, Any]:
    source = {"resourceClaimName": claim_name(i)} if direct else \
        {"resourceClaimTemplateName": "one-gpu"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", **source}]}}


def claim_name(i: int) -> str:
    return f"pod-{i:05d}-gpu"


def claim(i: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": claim_name(i), "namespace": NS},
            "spec": TEMPLATE["spec"]["spec"]}


async def _bounded(coros: list[Any], limit: int = 32) -> None:
    sem = asyncio.Semaphore(limit)

    async def run(c: Any) -> None:
        async with sem:
            await c

    await asyncio.gather(*(run(c) for c in coros))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_one(kubeconfig: str, server_pid: int, nodes: int, pods: int,
                  profile: bool, direct: bool, timeline: bool = False) -> dict[str, float]:
    from draemu.client import Client
    from draemu.scheduler import Scheduler

    client = Client.from_kubeconfig(kubeconfig, user_agent="draemu-bench")
    await client.create("v1", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": NS}})
    await client.create("resource.k8s.io/v1", "deviceclasses", DEVICE_CLASS)
    await client.create("resource.k8s.io/v1", "resourceclaimtemplates", TEMPLATE, NS)
    await _bounded([client.create("v1", "nodes", node(i)) for i in range(nodes)])
    await _bounded([client.create("resource.k8s.io/v1", "resourceslices", resource_slice(i))
                    for i in range(nodes)])

    if direct:
        await _bounded([client.create("resource.k8s.io/v1", "resourceclaims", claim(i), NS)
                        for i in range(pods)])
    sched_client = Client.from_kubeconfig(kubeconfig, user_agent="draemu-scheduler")
    scheduler = Scheduler(sched_client)
    await scheduler.start()
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    start, cpu_start = time.perf_counter(), time.process_time()
    server_cpu_start = cpu_seconds(server_pid)
    await _bounded([client.create("v1", "pods", pod(i, direct), NS) for i in range(pods)])
    created = time.perf_counter() - start
    last, last_change = 0, time.perf_counter()
    next_report = 0.0
    while scheduler.scheduled < pods:
        await asyncio.sleep(0.05)
        now = time.perf_counter() - start
        if timeline and now >= next_report:
            next_report = now + 1.0
            print(f"  t={now:5.1f}s bound={scheduler.scheduled:5d} "
                  f"queue={scheduler.queue.stats()} bindings={len(scheduler.tasks)}",
                  flush=True)
        if scheduler.scheduled != last:
            last, last_change = scheduler.scheduled, time.perf_counter()
        elif time.perf_counter() - last_change > STALL_SECONDS:
            raise RuntimeError(f"no progress for {STALL_SECONDS}s: {scheduler.scheduled}/{pods} "
                               f"scheduled, queue {scheduler.queue.stats()}")
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    server_cpu = cpu_seconds(server_pid) - server_cpu_start
    if profiler:
        profiler.disable()

    listed = await client.list("v1", "pods", NS)
    bound = sum(1 for p in listed["items"] if (p.get("spec") or {}).get("nodeName"))
    claims = await client.list("resource.k8s.io/v1", "resourceclaims", NS)
    allocated = sum(1 for c in claims["items"] if (c.get("status") or {}).get("allocation"))
    events = (await client.list("v1", "events", NS))["items"]
    failures = sum(e.get("count", 1) for e in events if e.get("reason") == "FailedScheduling")
    if failures:
        reasons = {e.get("message", "")[:120] for e in events
                   if e.get("reason") == "FailedScheduling"}
        print(f"{failures} FailedScheduling events, e.g. {sorted(reasons)[:3]}", flush=True)
    devices = {(r["pool"], r["device"]) for c in claims["items"]
               for r in c["status"]["allocation"]["devices"]["results"]}
    await scheduler.stop()
    await sched_client.close()
    await client.close()
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
    cache = scheduler.dra.cache
    print(f"allocation cache: {cache.hits} hits, {cache.misses} misses", flush=True)
    assert bound == pods and allocated == pods and len(devices) == pods, \
        (bound, allocated, len(devices))
    return {"nodes": nodes, "pods": pods, "seconds": elapsed,
            "pods_per_second": pods / elapsed, "create_seconds": created, "cpu": cpu,
            "server_cpu": server_cpu}


def cycle_only(nodes: int, pods: int, profile: bool) -> dict[str, float]:
    """The scheduling cycle alone, on caches fed directly (no apiserver, no HTTP): what the
    scheduler's own computation allows. Binding is simulated by feeding back what the
    informers would show: the claim allocated and the pod bound."""
    from draemu.scheduler import Scheduler

    sched = Scheduler(None)  # type: ignore[arg-type]  # no API calls in this mode
    sched.dra.set_class(DEVICE_CLASS)
    for i in range(nodes):
        sched.cache.set_node(node(i))
        sched.dra.set_slice(resource_slice(i))
    work = []
    for i in range(pods):
        p = pod(i, direct=True)
        p["metadata"]["uid"] = f"pod-uid-{i}"
        c = claim(i)
        c["metadata"]["uid"] = f"claim-uid-{i}"
        sched.dra.set_claim(c)
        work.append((p, c))
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    start = time.perf_counter()
    for p, c in work:
        result = sched.scheduling_cycle(p)
        assert result.node_name, result.message
        sched.dra.set_claim(sched.dra.assumed_claim(c["metadata"]["uid"]))
        sched.cache.add_pod({**p, "spec": {**p["spec"], "nodeName": result.node_name}})
    elapsed = time.perf_counter() - start
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    cache = sched.dra.cache
    print(f"allocation cache: {cache.hits} hits, {cache.misses} misses", flush=True)
    return {"nodes": nodes, "pods": pods, "seconds": elapsed, "pods_per_second": pods / elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100,500",
                        help="comma-separated node counts (default: 100,500)")
    parser.add_argument("--pods", type=int, default=0,
                        help="pods per run (default: min(1000, 4 per node))")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the scheduler process while pods are scheduled")
    parser.add_argument("--profile-server", action="store_true",
                        help="cProfile the apiserver process while pods are scheduled")
    parser.add_argument("--direct-claims", action="store_true",
                        help="pods name claims created beforehand (no claim controller in "
                        "the measured path) instead of using a template")
    parser.add_argument("--timeline", action="store_true",
                        help="print progress and the scheduler's queue every second")
    parser.add_argument("--cycle-only", action="store_true",
                        help="measure the scheduling cycle alone, without apiserver and HTTP")
    args = parser.parse_args()
    from draemu import aio, log

    log.configure("console", "warning")
    for n in (int(x) for x in args.nodes.split(",")):
        pods = args.pods or min(1000, 4 * n)
        if args.cycle_only:
            r = cycle_only(n, pods, args.profile)
            print(f"cycle only: nodes={n:5d} pods={pods:5d} time={r['seconds']:6.2f}s  "
                  f"{r['pods_per_second']:7.1f} pods/s", flush=True)
            continue
        with tempfile.TemporaryDirectory(prefix="draemu-bench-") as tmp:
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe()
            server = ctx.Process(target=_serve, args=(tmp, child, args.profile_server),
                                 daemon=True)
            server.start()
            try:
                if not parent.poll(120):
                    print("apiserver did not start", file=sys.stderr)
                    return 1
                kubeconfig = parent.recv()
                result = aio.run(run_one(kubeconfig, server.pid, n, pods, args.profile,
                                             args.direct_claims, args.timeline))
                parent.send("stop")
                parent.poll(60)
            finally:
                server.terminate()
                server.join(10)
        print(f"nodes={result['nodes']:5d} pods={result['pods']:5d} "
              f"time={result['seconds']:6.2f}s  {result['pods_per_second']:7.1f} pods/s "
              f"(pods created in {result['create_seconds']:.2f}s; this process, i.e. "
              f"scheduler and pod creation, used {result['cpu']:.2f}s CPU, apiserver and "
              f"claim controller {result['server_cpu']:.2f}s; {aio.loop_name()} loop)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
