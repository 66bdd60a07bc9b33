"""What the web view shows, kept current by informers (list+watch), as one JSON snapshot:
nodes with their devices (capacity consumed and left, sharing, partitions, taints), the
claims holding them, the pods using those claims, pending pods with the explanation
`draemu why` gives, DeviceClasses and recent events.

The view is an API client like any other: it reads what it shows through the API and
computes explanations with the same allocator the scheduler uses.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from draemu.api.quantity import Quantity
from draemu.api.types import Obj
from draemu.client import Client, Informer, SharedInformers, key_of
from draemu.cmd.explain import snapshot, why
from draemu.cmd.explain.devices import build as device_rows
from draemu.features import FeatureGates

V1 = "resource.k8s.io/v1"
RESOURCES = {
    "nodes": ("v1", "nodes"), "pods": ("v1", "pods"), "events": ("v1", "events"),
    "slices": (V1, "resourceslices"), "claims": (V1, "resourceclaims"),
    "classes": (V1, "deviceclasses"), "rules": ("resource.k8s.io/v1alpha3", "devicetaintrules"),
}
MAX_EXPLAINED = 30  # pending pods explained in each snapshot (the rest on click)
MAX_EVENTS = 60


class LiveModel:
    """Informers over what the view shows; `version` grows on every change."""

    def __init__(self, client: Client, gates: FeatureGates | None = None) -> None:
        self.client = client
        self.gates = gates or FeatureGates()
        self.informers = SharedInformers(client)
        self.inf: dict[str, Informer] = {}
        self.version = 0
        self.changed = asyncio.Event()
        self._served: set[str] = set()
        for name, (api_version, resource) in RESOURCES.items():
            inf = self.informers.informer(api_version, resource)
            inf.add_handler(on_add=self._bump, on_update=lambda _o, _n: self._bump(),
                            on_delete=self._bump)
            self.inf[name] = inf

    def _bump(self, *_: Any) -> None:
        self.version += 1
        self.changed.set()

    async def start(self) -> list[str]:
        served = await _served(self.client)
        skipped = await self.informers.start(served=served)
        self._served = {name for name, key in RESOURCES.items()
                        if f"{key[1]}.{key[0]}" not in skipped}
        return skipped

    async def stop(self) -> None:
        await self.informers.stop()

    def items(self, name: str) -> list[Obj]:
        return self.inf[name].list() if name in self._served else []

    # The snapshot ---------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        nodes = sorted(self.items("nodes"), key=lambda n: n["metadata"]["name"])
        slices, claims = self.items("slices"), self.items("claims")
        pods = sorted(self.items("pods"), key=key_of)
        holders = _holders(claims)
        devices: dict[str, list[dict[str, Any]]] = {}
        published = _devices(slices)
        for row in device_rows(slices, claims):
            dev = published.get(f"{row.driver}/{row.pool}/{row.device}", {})
            devices.setdefault(row.node, []).append(_device(row, dev, holders))
        out_nodes = [_node(n, devices.pop(n["metadata"]["name"], [])) for n in nodes]
        out_nodes += [{"name": name, "ready": None, "labels": {}, "taints": [],
                       "devices": devs} for name, devs in sorted(devices.items())]
        pods_of_claim = _pods_of_claims(claims)
        explained = 0
        out_pods = []
        for pod in pods:
            entry = _pod(pod, holders)
            if entry["pending"] and explained < MAX_EXPLAINED:
                entry["explanation"] = self.explain(pod)
                explained += 1
            out_pods.append(entry)
        return {
            "version": self.version,
            "nodes": out_nodes,
            "claims": [_claim(c, pods_of_claim) for c in sorted(claims, key=key_of)],
            "pods": out_pods,
            "classes": [_class(c) for c in sorted(self.items("classes"), key=key_of)],
            "events": _events(self.items("events")),
        }

    def cluster_for(self, pod: Obj) -> snapshot.Cluster:
        by_key = {key_of(c): c for c in self.items("claims")}
        return snapshot.assemble(pod, snapshot.claims_from(pod, by_key), self.items("classes"),
                            self.items("slices"), self.items("rules"), self.items("claims"),
                            self.items("nodes"), self.gates)

    def explain(self, pod: Obj) -> str:
        """`draemu why` for a pod, from the informers' caches."""
        try:
            return why.report(self.cluster_for(pod))
        except Exception as e:  # an explanation must never break the view
            return f"(no explanation: {type(e).__name__}: {e})"

    def pod(self, namespace: str, name: str) -> Obj | None:
        return self.inf["pods"].get(f"{namespace}/{name}")

    # What if --------------------------------------------------------------------------
    def cluster(self) -> dict[str, list[Obj]]:
        """What a what-if reads (whatif.KINDS), as the informers hold it now."""
        return {name: self.items(name) for name in ("classes", "slices", "rules", "claims",
                                                    "nodes")}

    def gates_spec(self) -> dict[str, Any]:
        return {"overrides": self.gates.overrides(), "version": self.gates.emulated_version}


async def _served(client: Client) -> set[tuple[str, str]]:
    served: set[tuple[str, str]] = set()
    for api_version, resource in RESOURCES.values():
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            doc = await client.get_json(path)
        except Exception:
            continue
        if any(r.get("name") == resource for r in doc.get("resources") or []):
            served.add((api_version, resource))
    return served


def _results(outcome: Any) -> list[dict[str, Any]]:
    out = []
    for allocation in outcome.results or []:
        out += ((allocation or {}).get("devices") or {}).get("results") or []
    return out


def _devices(slices: list[Obj]) -> dict[str, Obj]:
    """The slices' devices by driver/pool/name."""
    out = {}
    for s in slices:
        spec = s.get("spec") or {}
        for dev in spec.get("devices") or []:
            out[f"{spec.get('driver')}/{(spec.get('pool') or {}).get('name')}/{dev['name']}"] = dev
    return out


def _holders(claims: list[Obj]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for claim in claims:
        for r in _allocated(claim):
            out.setdefault(f"{r['driver']}/{r['pool']}/{r['device']}", []).append(key_of(claim))
    return out


def _allocated(claim: Obj) -> list[Obj]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return (allocation.get("devices") or {}).get("results") or []


def _pods_of_claims(claims: list[Obj]) -> dict[str, list[str]]:
    return {key_of(c): [f"{c['metadata'].get('namespace', 'default')}/{r.get('name')}"
                        for r in (c.get("status") or {}).get("reservedFor") or []
                        if r.get("resource") == "pods"] for c in claims}


def _value(value: Any) -> str:
    if isinstance(value, dict):
        for v in value.values():
            return str(v)
    return str(value)


def _fraction_used(total: Quantity, used: Fraction) -> float:
    return float(used / total.value) if total.value else 0.0


def _device(row: Any, dev: Obj, holders: dict[str, list[str]]) -> dict[str, Any]:
    device_id = f"{row.driver}/{row.pool}/{row.device}"
    capacity = {}
    for name, total in sorted(row.capacity.items()):
        used = sum((u.get(name, Fraction(0)) for _, u in row.users), Fraction(0))
        if not row.shared and row.users:
            used = total.value
        capacity[name] = {"total": total.canonical(),
                          "used": Quantity(used, total.format).canonical(),
                          "left": Quantity(total.value - used, total.format).canonical(),
                          "fraction": round(_fraction_used(total, used), 4)}
    return {
        "id": device_id, "driver": row.driver, "pool": row.pool, "name": row.device,
        "model": row.model, "shared": row.shared,
        "attributes": {k.rsplit("/", 1)[-1]: _value(v)
                       for k, v in sorted((dev.get("attributes") or {}).items())},
        "capacity": capacity,
        "consumesCounters": [c.get("counterSet", "") for c in dev.get("consumesCounters") or []],
        "taints": [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"
                   for t in dev.get("taints") or []],
        "claims": holders.get(device_id, []),
        "free": row.free(),
    }


def _node(node: Obj, devices: list[dict[str, Any]]) -> dict[str, Any]:
    status = node.get("status") or {}
    ready = next((c.get("status") == "True" for c in status.get("conditions") or []
                  if c.get("type") == "Ready"), None)
    return {"name": node["metadata"]["name"], "ready": ready,
            "labels": {k: v for k, v in (node["metadata"].get("labels") or {}).items()
                       if not k.startswith(("kubernetes.io/", "beta.kubernetes.io/"))},
            "taints": [f"{t.get('key')}:{t.get('effect')}"
                       for t in (node.get("spec") or {}).get("taints") or []],
            "devices": devices}


def _pod(pod: Obj, holders: dict[str, list[str]]) -> dict[str, Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    ns = pod["metadata"].get("namespace", "default")
    generated = {s.get("name"): s.get("resourceClaimName")
                 for s in status.get("resourceClaimStatuses") or []}
    claims = [f"{ns}/{name}" for ref in spec.get("resourceClaims") or []
              if (name := ref.get("resourceClaimName") or generated.get(ref.get("name")))]
    devices = sorted(d for d, keys in holders.items() if set(keys) & set(claims))
    phase = status.get("phase", "Pending")
    return {"key": key_of(pod), "namespace": ns, "name": pod["metadata"]["name"],
            "phase": phase, "node": spec.get("nodeName"), "claims": claims,
            "devices": devices, "pending": phase == "Pending" and not spec.get("nodeName"),
            "deleting": bool(pod["metadata"].get("deletionTimestamp"))}


def _claim(claim: Obj, pods_of: dict[str, list[str]]) -> dict[str, Any]:
    results = _allocated(claim)
    owner = next((o.get("name") for o in claim["metadata"].get("ownerReferences") or []
                  if o.get("kind") == "Pod"), None)
    return {"key": key_of(claim), "allocated": bool(results), "owner": owner,
            "devices": [{"id": f"{r['driver']}/{r['pool']}/{r['device']}",
                         "request": r.get("request"), "shareID": r.get("shareID"),
                         "consumed": r.get("consumedCapacity") or {}} for r in results],
            "reservedFor": pods_of.get(key_of(claim), [])}


def _class(device_class: Obj) -> dict[str, Any]:
    spec = device_class.get("spec") or {}
    return {"name": device_class["metadata"]["name"],
            "selectors": [" ".join(((s.get("cel") or {}).get("expression") or "").split())
                          for s in spec.get("selectors") or []]}


def _events(events: list[Obj]) -> list[dict[str, Any]]:
    def when(e: Obj) -> str:
        return (e.get("lastTimestamp") or e.get("eventTime")
                or e["metadata"].get("creationTimestamp") or "")

    out = []
    for e in sorted(events, key=lambda e: (when(e), e["metadata"]["name"]))[-MAX_EVENTS:]:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        out.append({"time": when(e), "type": e.get("type", ""), "reason": e.get("reason", ""),
                    "object": f"{obj.get('kind', '')}/{obj.get('name', '')}",
                    "message": e.get("message") or e.get("note") or ""})
    return list(reversed(out))


async def wait_for_change(model: LiveModel, since: int, timeout: float,
                          clock: Callable[[], float] = time.monotonic) -> bool:
    """Until the model's version passes `since` (True) or `timeout` (False)."""
    deadline = clock() + timeout
    while model.version <= since:
        model.changed.clear()
        left = deadline - clock()
        if left <= 0:
            return False
        try:
            await asyncio.wait_for(model.changed.wait(), left)
        except TimeoutError:
            return False
    return True
