"""The controllers' names, as `--controllers` takes them (without importing them: the
command line checks a selection before anything starts)."""

from __future__ import annotations

NAMES = (
    "resourceclaim", "device-taint-eviction", "node-lifecycle", "job", "replicaset",
    "deployment", "replicationcontroller", "daemonset", "statefulset", "cronjob",
    "endpoints", "endpointslice", "resourcequota", "disruption", "ttl-after-finished",
    "resourcepoolstatus", "serviceaccount", "root-ca-cert-publisher",
    "clusterrole-aggregation", "serviceaccount-token", "garbagecollector", "namespace",
)


def select(spec: str) -> list[str] | None:
    """The controllers a `--controllers` value names, as kube-controller-manager reads
    it: a comma-separated list where `*` is every controller, `NAME` adds one and
    `-NAME` leaves one out; upstream's names (`node-lifecycle-controller`) are taken
    too. None (every controller) for an empty value. ValueError for an unknown name."""
    items = [i.strip() for i in spec.split(",") if i.strip()]
    if not items:
        return None
    chosen: list[str] = []
    dropped: set[str] = set()
    unknown: list[str] = []
    for item in items:
        if item == "*":
            chosen.extend(NAMES)
            continue
        off = item.startswith("-")
        name = item.removeprefix("-")
        if name not in NAMES:
            name = name.removesuffix("-controller")
        if name not in NAMES:
            unknown.append(item.removeprefix("-"))
        elif off:
            dropped.add(name)
        else:
            chosen.append(name)
    if unknown:
        raise ValueError(f"unknown controllers: {', '.join(unknown)}; known: {', '.join(NAMES)}")
    return [name for name in dict.fromkeys(chosen) if name not in dropped]
