"""`draemu why pod/NAME`: why a pod's DRA claims can or cannot be allocated, node by
node and device by device, from what an apiserver holds (read through the API)."""

from __future__ import annotations

from typing import Any

from draemu.api.nodeselector import selector_matches
from draemu.client import Client
from draemu.cmd.explain.decisions import decision_table
from draemu.cmd.explain.snapshot import Cluster, PodClaims, load
from draemu.features import FeatureGates
from draemu.scheduler.dra.allocator import Allocator
from draemu.scheduler.dra.inventory import Inventory, claim_key


async def explain_pod(client: Client, namespace: str, name: str,
                      gates: FeatureGates | None = None) -> str:
    c = await load(client, namespace, name, gates)
    return render(c.pod, c.pod_claims, c.inventory, c.nodes)


async def why_report(client: Client, namespace: str, name: str,
                     gates: FeatureGates | None = None) -> str:
    """What `draemu why` prints: the explanation and, for a pod placed with claims, the
    decision replayed device by device (the demo and the web view show the same)."""
    return report(await load(client, namespace, name, gates))


def report(c: Cluster) -> str:
    text = render(c.pod, c.pod_claims, c.inventory, c.nodes)
    if (c.pod.get("spec") or {}).get("nodeName") and c.pod_claims.claims:
        text += ("\n\nThe decision, replayed device by device (this pod's claims taken as "
                 "not yet allocated):\n" + decision_table(c))
    return text


def _pod_status(pod: dict[str, Any]) -> str:
    phase = (pod.get("status") or {}).get("phase", "Pending")
    node = (pod.get("spec") or {}).get("nodeName")
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return f"{phase}, unschedulable: {c.get('message', '')}".rstrip(": ")
    return f"{phase}, on node {node}" if node else phase


def render(pod: dict[str, Any], pod_claims: PodClaims, inv: Inventory,
           nodes: list[dict[str, Any]]) -> str:
    meta = pod["metadata"]
    lines = [f"Pod {meta.get('namespace', 'default')}/{meta['name']}: {_pod_status(pod)}"]
    pending: list[dict[str, Any]] = []
    allocated: list[dict[str, Any]] = []
    for claim in pod_claims.claims:
        allocation = (claim.get("status") or {}).get("allocation")
        (allocated if allocation else pending).append(claim)
        devices = ", ".join(f"{r['driver']}/{r['pool']}/{r['device']}" for r in
                            ((allocation or {}).get("devices") or {}).get("results") or [])
        state = f"allocated: {devices}" if allocation else "not allocated"
        lines.append(f"  claim {claim_key(claim)}: {state}")
    lines += [f"  claim {m}" for m in pod_claims.missing]
    if not pod_claims.claims and not pod_claims.missing:
        lines.append("  the pod uses no ResourceClaims; DRA does not constrain it")
        return "\n".join(lines)
    if pod_claims.missing:
        lines.append("The pod waits until all its claims exist.")
    if not nodes:
        lines.append("There are no nodes.")
        return "\n".join(lines)
    allocator = Allocator(inv)
    for node in nodes:
        node_name = node["metadata"]["name"]
        blocked = [claim_key(c) for c in allocated if not _usable_on(c, node)]
        if blocked:
            lines.append(f"❌ node {node_name}: claim {', '.join(blocked)} is allocated to "
                         "devices not available on this node")
            continue
        if not pending:
            lines.append(f"✅ node {node_name}: every claim is allocated and usable here")
            continue
        outcome = allocator.allocate(node, pending)
        lines.append(outcome.explanation.text())
    return "\n".join(lines)


def _usable_on(claim: dict[str, Any], node: dict[str, Any]) -> bool:
    selector = ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector")
    if not selector:
        return True
    meta = node["metadata"]
    return selector_matches(selector, meta.get("labels") or {}, meta["name"])
