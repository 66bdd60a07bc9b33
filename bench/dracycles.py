"""The scheduler's scheduling cycles alone, on the DRA workloads of bench/realk8s.py
(upstream's scheduler_perf DRA test cases, bench/draworkloads.py).

No apiserver, no HTTP, no other process: the scheduler's caches are fed directly with the
workload's objects (nodes, slices, classes, taint rules; the claims allocated beforehand,
allocated as realk8s.py allocates them), and what the controllers and the informers would
do is simulated: each pod's claims made from its templates (owned by the pod, or by its
PodGroup for a group's claim), and once a pod is scheduled its claims allocated and the
pod bound. Pods scheduled before the measurement go through the cycles too; in a
steady-state workload each pod (with the claims it alone used) goes as soon as it is
scheduled, so that every pod sees the cluster in its starting state, as upstream's deletes
intend. What is left is the scheduler's own computation of the workloads, without the
noise of the rest.

Printed per workload: share IDs given to two allocations of one device (must be 0),
wall and CPU seconds of the measured cycles, pods/s, the allocation cache's hits/misses,
and a digest of every decision of every cycle (node, devices, requests; share IDs left
out; messages of unschedulable pods), random tie-breaking seeded: two trees that decide
the same print the same digest.

    .venv/bin/python bench/dracycles.py [--workload template,churn,...] [--nodes 500]
        [--pods N] [--profile]
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
STEADY_PODS = 1000  # pods scheduled in a steady-state workload (default)


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


class Cluster:
    """The scheduler fed as its informers would feed it, and the decisions so far."""

    def __init__(self, wl: Any, profile: bool) -> None:
        from draemu.features import FeatureGates
        from draemu.scheduler import Scheduler

        random.seed(1)
        self.wl = wl
        self.sched = Scheduler(None, FeatureGates({g: True for g in wl.gates}))  # type: ignore[arg-type]
        self.nodes: list[dict] = []
        self.slices: list[dict] = []
        self.classes: list[dict] = []
        self.claims: dict[str, dict] = {}       # namespace/name -> claim
        self.templates: dict[str, dict] = {}    # namespace/name -> template
        self.uids = 0
        self.names = random.Random(2)           # token volume names
        self.digest = hashlib.sha256()
        self.failed = 0
        self.shares: set[tuple[str, str, str, str]] = set()
        self.reused_shares = 0
        self.profiler = cProfile.Profile() if profile else None

    def uid(self, what: str) -> str:
        self.uids += 1
        return f"{what}-uid-{self.uids}"

    def add(self, obj: dict, namespace: str | None) -> None:
        kind, dra = obj["kind"], self.sched.dra
        meta = obj["metadata"]
        meta.setdefault("uid", self.uid(kind.lower()))
        if namespace:
            meta["namespace"] = namespace
        if kind == "Node":
            status = obj.setdefault("status", {})
            # as the apiserver defaults it: no allocatable means all of the capacity
            status.setdefault("allocatable", dict(status.get("capacity") or {}))
            self.nodes.append(obj)
            self.sched.cache.set_node(obj)
        elif kind == "ResourceSlice":
            self.slices.append(obj)
            dra.set_slice(obj)
        elif kind == "DeviceClass":
            self.classes.append(obj)
            dra.set_class(obj)
        elif kind == "DeviceTaintRule":
            dra.set_taint_rule(obj)
        elif kind == "ResourceClaim":
            self.claims[f"{namespace}/{meta['name']}"] = obj
            dra.set_claim(obj)
        elif kind == "ResourceClaimTemplate":
            self.templates[f"{namespace}/{meta['name']}"] = obj
        elif kind != "PodGroup":
            raise ValueError(f"dracycles: no place for a {kind}")

    def allocate(self, namespace: str) -> None:
        mine = [c for k, c in self.claims.items() if k.startswith(namespace + "/")]
        others = [c for k, c in self.claims.items() if not k.startswith(namespace + "/")
                  and (c.get("status") or {}).get("allocation")]
        for claim, allocation in draworkloads.allocate_claims(
                mine, self.nodes, self.classes, self.slices, others, self.wl.gates):
            claim["status"] = {"allocation": allocation}
            self.sched.dra.set_claim(claim)

    def pod(self, op: Any, index: int) -> tuple[dict, list[dict]]:
        """Pod number `index` as admission and the resource claim controller leave it,
        and the claims made for it."""
        pod = draworkloads.objects(op, index)
        meta = pod["metadata"]
        meta.setdefault("name", f"{meta.pop('generateName', 'pod-')}{index:05d}")
        meta.update(namespace=op.namespace, uid=self.uid("pod"))
        admitted(pod, self.names)
        made = []
        statuses = []
        group = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName")
        for entry in pod["spec"].get("resourceClaims") or []:
            template = entry.get("resourceClaimTemplateName")
            if not template:
                continue
            owner = ("PodGroup", group) if group else ("Pod", meta["name"])
            name = f"{owner[1]}-{entry['name']}"
            key = f"{op.namespace}/{name}"
            if key not in self.claims:
                claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                         "metadata": {"name": name, "namespace": op.namespace,
                                      "uid": self.uid("claim"), "ownerReferences": [{
                                          "apiVersion": "scheduling.k8s.io/v1beta1"
                                          if group else "v1", "kind": owner[0],
                                          "name": owner[1], "controller": True,
                                          "uid": meta["uid"] if not group else group}]},
                         "spec": copy.deepcopy(
                             self.templates[f"{op.namespace}/{template}"]["spec"]["spec"])}
                self.claims[key] = claim
                self.sched.dra.set_claim(claim)
                made.append(claim)
            statuses.append({"name": entry["name"], "resourceClaimName": name})
        if statuses:
            pod["status"] = {"resourceClaimStatuses": statuses}
        return pod, made

    def schedule(self, pod: dict) -> bool:
        result = self.sched.scheduling_cycle(pod)
        if not result.node_name:
            self.failed += 1
            self.digest.update(f"unschedulable: {result.message}\n".encode())
            return False
        decided = []
        for entry in pod["spec"].get("resourceClaims") or []:
            name = next((s["resourceClaimName"] for s in (pod.get("status") or {}).get(
                "resourceClaimStatuses") or [] if s["name"] == entry["name"]),
                entry.get("resourceClaimName"))
            claim = self.claims[f"{pod['metadata']['namespace']}/{name}"]
            assumed = self.sched.dra.assumed_claim(claim["metadata"]["uid"])
            if assumed is None:
                continue  # allocated already (shared)
            results = assumed["status"]["allocation"]["devices"]["results"]
            for r in results:
                if r.get("shareID"):
                    share = (r["driver"], r["pool"], r["device"], r["shareID"])
                    self.reused_shares += share in self.shares
                    self.shares.add(share)
            decided.append([{k: v for k, v in r.items() if k != "shareID"} for r in results])
            self.claims[f"{pod['metadata']['namespace']}/{name}"] = assumed
            self.sched.dra.set_claim(assumed)
        self.digest.update(json.dumps([result.node_name, decided], sort_keys=True).encode())
        pod["spec"]["nodeName"] = result.node_name
        self.sched.cache.add_pod(pod)
        return True

    def remove(self, pod: dict, claims: list[dict]) -> None:
        self.sched.cache.remove_pod(pod)
        self.drop(claims)

    def drop(self, claims: list[dict]) -> None:
        for claim in claims:
            key = f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"
            self.sched.dra.remove_claim(self.claims.pop(key))


def run(name: str, nodes: int, pods: int, profile: bool) -> dict[str, Any]:
    wl = draworkloads.WORKLOADS[name]
    plan = wl.plan(nodes, 0)
    cluster = Cluster(wl, profile)
    measured: dict[str, Any] = {}
    for op in plan:
        if op.opcode in ("createNodes", "createAny", "createPodGroups"):
            for i in range(op.count):
                cluster.add(draworkloads.objects(op, i), op.namespace)
        elif op.opcode == "allocResourceClaims":
            cluster.allocate(op.namespace)
        elif op.opcode == "createPods":
            if op.collect_metrics:
                count = pods or (STEADY_PODS if op.steady_state else op.count)
                measured = _cycles(cluster, op, count)
            else:
                for i in range(op.count):
                    pod, _ = cluster.pod(op, i)
                    cluster.schedule(pod)
    cache = cluster.sched.dra.cache
    return {"workload": name, "nodes": nodes, **measured, "unschedulable": cluster.failed,
            "reused_shares": cluster.reused_shares, "cache": f"{cache.hits}/{cache.misses}",
            "digest": cluster.digest.hexdigest()[:16]}


def _cycles(cluster: Cluster, op: Any, count: int) -> dict[str, Any]:
    work = [cluster.pod(op, i) for i in range(count)] if not op.steady_state else []
    # As the scheduler does once its informers are synced.
    gc.collect()
    gc.freeze()
    if cluster.profiler:
        cluster.profiler.enable()
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(count):
        pod, made = work[i] if work else cluster.pod(op, i)
        if cluster.schedule(pod) and op.steady_state:
            cluster.remove(pod, made)
        elif op.steady_state:
            cluster.drop(made)  # an unschedulable pod is not retried here
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if cluster.profiler:
        cluster.profiler.disable()
        pstats.Stats(cluster.profiler).sort_stats("tottime").print_stats(25)
    gc.unfreeze()
    return {"pods": count, "seconds": elapsed, "cpu": cpu, "pods_per_second": count / elapsed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="template,churn,partitionable,consumable",
                        help=f"comma-separated, of: {', '.join(draworkloads.WORKLOADS)}")
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=0,
                        help="measured pods (default: upstream's burst, or "
                        f"{STEADY_PODS} in a steady state)")
    parser.add_argument("--profile", action="store_true", help="cProfile the cycles")
    args = parser.parse_args()
    for name in args.workload.split(","):
        r = run(name, args.nodes, args.pods, args.profile)
        print(f"{r['workload']:16s} nodes={r['nodes']} pods={r['pods']} "
              f"unschedulable={r['unschedulable']} shareIDs-given-twice={r['reused_shares']} "
              f"{r['seconds']:6.2f}s cpu={r['cpu']:6.2f}s "
              f"{r['pods_per_second']:7.1f} pods/s cache {r['cache']} digest {r['digest']}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
