"""From a kind cluster config to draemu's nodes: names, labels and taints as kind gives
them, the preset file the background draemu starts from, and readiness checks."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from draemu.api import yamlload
from draemu.client import Client
from draemu.features import known
from draemu.kindcompat.config import KindCluster
from draemu.kindcompat.state import ClusterRecord

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def node_labels(cluster: KindCluster) -> list[tuple[str, str, dict[str, str], list[dict]]]:
    """(name, role, labels, taints) per node. Control-plane nodes keep their NoSchedule
    taint only when the cluster has workers, as kind does."""
    nodes = cluster.nodes()
    has_workers = any(n.role == "worker" for n in nodes)
    out = []
    for n in nodes:
        labels = {"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                  "beta.kubernetes.io/arch": "amd64"}
        taints: list[dict] = []
        if n.role == "control-plane":
            labels["node-role.kubernetes.io/control-plane"] = ""
            labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
            if has_workers:
                taints.append(dict(CONTROL_PLANE_TAINT))
        labels.update(n.labels)
        out.append((n.name, n.role, labels, taints))
    return out


# Built-in drivers kind-compat can put on nodes ($DRAEMU_KIND_DRIVERS=gpu,nic).
DRIVERS = {
    "gpu": ({"name": "gpu.example.com", "type": "gpu",
             "gpus": [{"count": 8, "model": "LATEST-GPU-MODEL", "memory": "80Gi",
                       "driverVersion": "1.0.0"}]},
            {"name": "gpu.example.com", "driver": "gpu.example.com"}),
    "nic": ({"name": "nic.example.com", "type": "nic",
             "nics": [{"model": "ConnectX-7", "speed": 400, "rdmaCapable": True,
                       "numaNode": 0}]},
            {"name": "nic.example.com", "driver": "nic.example.com"}),
}


def preset(cluster: KindCluster, drivers: str) -> dict[str, Any]:
    """The preset document for `draemu up --preset FILE`: kind's nodes, with the
    built-in drivers named in $DRAEMU_KIND_DRIVERS (comma-separated: gpu, nic) on the
    workers (or on the control plane of a single-node cluster)."""
    wanted = [d.strip() for d in drivers.split(",") if d.strip()]
    unknown = [d for d in wanted if d not in DRIVERS]
    if unknown:
        raise ValueError(f"DRAEMU_KIND_DRIVERS: unknown driver(s) {', '.join(unknown)}; "
                         f"known: {', '.join(DRIVERS)}")
    entries = node_labels(cluster)
    has_workers = any(role == "worker" for _, role, _, _ in entries)
    nodes = []
    for name, role, labels, taints in entries:
        node: dict[str, Any] = {"name": name, "labels": labels}
        if taints:
            node["taints"] = taints
        if wanted and (role == "worker" or not has_workers):
            node["drivers"] = [DRIVERS[d][0] for d in wanted]
        nodes.append(node)
    return {"apiVersion": "draemu.io/v1alpha1", "kind": "Preset",
            "description": f"kind cluster {cluster.name}",
            "deviceClasses": [DRIVERS[d][1] for d in wanted], "nodes": nodes}


def supported_gates(gates: dict[str, bool]) -> tuple[str, list[str]]:
    """The --feature-gates value for the gates draemu knows, and the names it does not."""
    names = known()
    flag = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()) if k in names)
    return flag, sorted(k for k in gates if k not in names)


def server_of(kubeconfig: Path) -> str:
    doc = yamlload.load_file_text(kubeconfig.read_text()) or {}
    return ((doc.get("clusters") or [{}])[0].get("cluster") or {}).get("server", "")


def wait_nodes_ready(kubeconfig: Path, names: list[str], timeout: float) -> bool:
    async def check() -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with Client.from_kubeconfig(kubeconfig, user_agent="kind-compat") as client:
            while loop.time() < deadline:
                try:
                    nodes = (await client.list("v1", "nodes")).get("items") or []
                except Exception:  # the apiserver may still be coming up
                    nodes = []
                ready = {n["metadata"]["name"] for n in nodes if any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (n.get("status") or {}).get("conditions") or [])}
                if set(names) <= ready:
                    return True
                await asyncio.sleep(0.1)
        return False

    return asyncio.run(check())


def wait_registered(kubeconfig: Path, names: list[str], drivers: dict[str, list[str]],
                    timeout: float) -> str | None:
    """Until every node is registered and every driver asked for on a node has published
    its ResourceSlices there (as kind returns once its nodes have joined); None when so,
    else what is still missing."""
    async def check() -> str | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        missing = "the apiserver did not answer"
        async with Client.from_kubeconfig(kubeconfig, user_agent="kind-compat") as client:
            while loop.time() < deadline:
                try:
                    nodes = (await client.list("v1", "nodes")).get("items") or []
                    slices = (await client.list("resource.k8s.io/v1", "resourceslices")
                              ).get("items") or []
                except Exception:  # the apiserver may still be coming up
                    await asyncio.sleep(0.1)
                    continue
                registered = {n["metadata"]["name"] for n in nodes}
                published = {(s["spec"].get("nodeName"), s["spec"].get("driver"))
                             for s in slices}
                lacking = [n for n in names if n not in registered]
                lacking += [f"{driver} on {node}" for node, wanted in drivers.items()
                            for driver in wanted if (node, driver) not in published]
                if not lacking:
                    return None
                missing = ", ".join(lacking)
                await asyncio.sleep(0.1)
        return missing

    return asyncio.run(check())


def plugin_dirs(record: ClusterRecord, node: str) -> str:
    """The node's kubelet folders an external DRA driver is pointed at."""
    from draemu.nodelayout import NodeLayout

    layout = NodeLayout(record.data_dir / "nodes" / node)
    return (f"registry={layout.registry_dir} plugins={layout.plugins_dir} "
            f"cdi={layout.cdi_dir}")
