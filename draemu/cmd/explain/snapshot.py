"""What an explanation reads, once, through the API (or from an informer's cache): the
pod, its claims, and the allocator's inputs with the pod's own claims left out, as when
the scheduler weighed them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from draemu.client import ApiError, Client
from draemu.features import FeatureGates
from draemu.scheduler.dra.inventory import Inventory, claim_key

V1 = "resource.k8s.io/v1"


@dataclass
class PodClaims:
    """The pod's claims: found ones, and references that do not resolve (yet)."""

    claims: list[dict[str, Any]]
    missing: list[str]


def _claim_refs(pod: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    """(reference name, claim name or None when not created yet, template) per claim."""
    generated = {s.get("name"): s.get("resourceClaimName")
                 for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    return [(ref.get("name"), ref.get("resourceClaimName") or generated.get(ref.get("name")),
             ref.get("resourceClaimTemplateName", ""))
            for ref in (pod.get("spec") or {}).get("resourceClaims") or []]


def _not_created(ref: str, template: str) -> str:
    return (f"{ref}: the claim from template {template} does not exist yet (the resource "
            "claim controller creates it)")


async def claims_of(client: Client, pod: dict[str, Any]) -> PodClaims:
    ns = pod["metadata"].get("namespace", "default")
    found: list[dict[str, Any]] = []
    missing: list[str] = []
    for ref, name, template in _claim_refs(pod):
        if not name:
            missing.append(_not_created(ref, template))
            continue
        try:
            found.append(await client.get(V1, "resourceclaims", name, ns))
        except ApiError as e:
            if e.code != 404:
                raise
            missing.append(f"{ref}: resourceclaim {ns}/{name} not found")
    return PodClaims(found, missing)


def claims_from(pod: dict[str, Any], claims: dict[str, dict[str, Any]]) -> PodClaims:
    """`claims_of` from a cache of claims by `namespace/name` (an informer's)."""
    ns = pod["metadata"].get("namespace", "default")
    found: list[dict[str, Any]] = []
    missing: list[str] = []
    for ref, name, template in _claim_refs(pod):
        if not name:
            missing.append(_not_created(ref, template))
        elif f"{ns}/{name}" in claims:
            found.append(claims[f"{ns}/{name}"])
        else:
            missing.append(f"{ref}: resourceclaim {ns}/{name} not found")
    return PodClaims(found, missing)


async def _items(client: Client, resource: str, api_version: str = V1) -> list[dict[str, Any]]:
    return (await client.list_all(api_version, resource)).get("items") or []


# What the scheduler's plugins read beyond nodes, pods and the DRA kinds (PodTopologySpread's
# default constraints follow Services and controllers; InterPodAffinity namespaces).
WORKLOADS = {"services": "v1", "replicationcontrollers": "v1", "namespaces": "v1",
             "replicasets": "apps/v1", "statefulsets": "apps/v1"}


@dataclass
class Cluster:
    """What an explanation reads, once: the pod, its claims, and what the scheduler would
    read (the DRA objects, nodes, pods and the workloads its plugins look at)."""

    pod: dict[str, Any]
    pod_claims: PodClaims
    classes: list[dict[str, Any]]
    slices: list[dict[str, Any]]
    taint_rules: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]] = field(default_factory=list)
    workloads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    gates: FeatureGates | None = None

    @functools.cached_property
    def inventory(self) -> Inventory:
        """The allocator's inputs with the pod's own claims left out (as when the
        scheduler weighed them)."""
        inv = Inventory(self.gates)
        for obj in self.classes:
            inv.set_class(obj)
        for obj in self.slices:
            inv.set_slice(obj)
        for obj in self.taint_rules:
            inv.set_taint_rule(obj)
        own = {claim_key(c) for c in self.pod_claims.claims}
        for obj in self.claims:
            if claim_key(obj) not in own:
                inv.set_claim(obj)
        return inv


def assemble(pod: dict[str, Any], pod_claims: PodClaims, classes: list[dict[str, Any]],
             slices: list[dict[str, Any]], taint_rules: list[dict[str, Any]],
             claims: list[dict[str, Any]], nodes: list[dict[str, Any]],
             gates: FeatureGates | None = None, pods: list[dict[str, Any]] | None = None,
             workloads: dict[str, list[dict[str, Any]]] | None = None) -> Cluster:
    nodes = sorted(nodes, key=lambda n: n["metadata"]["name"])
    return Cluster(pod, pod_claims, classes, slices, taint_rules, claims, nodes, pods or [],
                   workloads or {}, gates)


async def load(client: Client, namespace: str, name: str,
               gates: FeatureGates | None = None) -> Cluster:
    pod = await client.get("v1", "pods", name, namespace)
    workloads = {}
    for resource, api_version in WORKLOADS.items():
        try:
            workloads[resource] = await _items(client, resource, api_version)
        except ApiError as e:  # not served, or not allowed to this user: left out
            if e.code not in (403, 404):
                raise
    taint_rules: list[dict[str, Any]] = []
    try:
        taint_rules = await _items(client, "devicetaintrules")
    except ApiError as e:
        if e.code != 404:  # DeviceTaintRule is not served in every release
            raise
    return assemble(pod, await claims_of(client, pod), await _items(client, "deviceclasses"),
                    await _items(client, "resourceslices"), taint_rules,
                    await _items(client, "resourceclaims"), await _items(client, "nodes", "v1"),
                    gates, await _items(client, "pods", "v1"), workloads)
