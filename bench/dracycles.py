"""The scheduler's scheduling cycles alone, on the DRA workloads of bench/realk8s.py.

No apiserver, no HTTP, no other process: the scheduler's caches are fed directly (nodes,
slices, classes, and for churn the standalone claims that fill the cluster), and binding
is simulated by feeding back what the informers would show (the claim allocated, the pod
bound; for churn the oldest of `--inflight` live pods deleted with its claim, so that
the next pod needs the device it held). What is left is the scheduler's own computation
of `realk8s.py`'s workloads, on one core, without the noise of the rest.

Printed per workload: share IDs given to two allocations of one device (must be 0),
wall and CPU seconds of the cycles, pods/s, the allocation cache's hits/misses, and a
digest of every decision (node, devices, requests; share IDs
left out, random tie-breaking seeded): two trees that decide the same print the same
digest.

    .venv/bin/python bench/dracycles.py [--workload churn,partitionable,consumable]
        [--nodes 500] [--pods N] [--profile]
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import hashlib
import json
import pstats
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import draworkloads

TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def admitted(pod: dict[str, Any], names: random.Random) -> None:
    """The pod as the apiserver's ServiceAccount admission leaves it, which is what the
    scheduler sees: a projected `kube-api-access-<5>` volume of a random name, mounted in
    every container."""
    name = "kube-api-access-" + "".join(names.choice("bcdfghjklmnpqrstvwxz2456789")
                                        for _ in range(5))
    pod["spec"].setdefault("volumes", []).append({"name": name, "projected": {
        "defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}})
    for container in pod["spec"]["containers"]:
        container.setdefault("volumeMounts", []).append(
            {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT})


def run(name: str, nodes: int, pods: int, inflight: int, profile: bool) -> dict[str, Any]:
    from draemu.scheduler import Scheduler

    random.seed(1)
    wl = draworkloads.WORKLOADS[name]
    sched = Scheduler(None)  # type: ignore[arg-type]  # no API calls in this mode
    for c in wl.device_classes:
        sched.dra.set_class(c)
    for i in range(nodes):
        sched.cache.set_node(draworkloads.node(i))
        for s in wl.slices(i):
            sched.dra.set_slice(s)
    if wl.churn:
        for k, (claim, status) in enumerate(draworkloads.prefill_claims(nodes, inflight)):
            sched.dra.set_claim({**claim, "metadata": {**claim["metadata"], "uid": f"fill-{k}"},
                                 "status": status})
    work = []
    names = random.Random(2)  # the token volumes' names (the scheduler's draws stay as they were)
    for i in range(pods):
        pod = copy.deepcopy(draworkloads.pod(i))
        pod["metadata"]["uid"] = f"pod-uid-{i}"
        claim_name = f"{pod['metadata']['name']}-gpu"
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        admitted(pod, names)
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": claim_name, "namespace": draworkloads.NS,
                              "uid": f"claim-uid-{i}"},
                 "spec": copy.deepcopy(wl.template["spec"]["spec"])}
        work.append((pod, claim))
    # As the scheduler does once its informers are synced.
    gc.collect()
    gc.freeze()
    digest = hashlib.sha256()
    live: list[tuple[dict, dict]] = []
    failed = 0
    shares: set[tuple[str, str, str, str]] = set()
    reused_shares = 0
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    started, cpu = time.perf_counter(), time.process_time()
    for pod, claim in work:
        sched.dra.set_claim(claim)
        result = sched.scheduling_cycle(pod)
        if not result.node_name:
            failed += 1
            digest.update(f"unschedulable: {result.message}\n".encode())
            sched.dra.remove_claim(claim)
            continue
        assumed = sched.dra.assumed_claim(claim["metadata"]["uid"])
        results = assumed["status"]["allocation"]["devices"]["results"]
        for r in results:
            if r.get("shareID"):
                share = (r["driver"], r["pool"], r["device"], r["shareID"])
                reused_shares += share in shares
                shares.add(share)
        digest.update(json.dumps([result.node_name, [
            {k: v for k, v in r.items() if k != "shareID"} for r in results]],
            sort_keys=True).encode())
        sched.dra.set_claim(assumed)
        bound = {**pod, "spec": {**pod["spec"], "nodeName": result.node_name}}
        sched.cache.add_pod(bound)
        live.append((assumed, bound))
        if wl.churn and len(live) >= inflight:
            gone, gone_pod = live.pop(0)
            sched.dra.remove_claim(gone)
            sched.cache.remove_pod(gone_pod)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    gc.unfreeze()
    cache = sched.dra.cache
    return {"workload": name, "nodes": nodes, "pods": pods, "unschedulable": failed,
            "reused_shares": reused_shares,
            "seconds": elapsed, "cpu": cpu, "pods_per_second": pods / elapsed,
            "cache": f"{cache.hits}/{cache.misses}", "digest": digest.hexdigest()[:16]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="churn,partitionable,consumable",
                        help=f"comma-separated, of: {', '.join(draworkloads.WORKLOADS)}")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=0,
                        help="default: what realk8s.py runs (1000 for most)")
    parser.add_argument("--inflight", type=int, default=10,
                        help="churn: live pods at a time, and devices left free")
    parser.add_argument("--profile", action="store_true", help="cProfile the cycles")
    args = parser.parse_args()
    for name in args.workload.split(","):
        wl = draworkloads.WORKLOADS[name]
        r = run(name, args.nodes, args.pods or wl.default_pods(args.nodes), args.inflight,
                args.profile)
        print(f"{r['workload']:14s} nodes={r['nodes']} pods={r['pods']} "
              f"unschedulable={r['unschedulable']} shareIDs-given-twice={r['reused_shares']} "
              f"{r['seconds']:6.2f}s cpu={r['cpu']:6.2f}s "
              f"{r['pods_per_second']:7.1f} pods/s cache {r['cache']} digest {r['digest']}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
