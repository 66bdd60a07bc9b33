"""What the web view shows, kept current by informers (list+watch), as one JSON snapshot:
nodes with their devices (capacity consumed and left, sharing, partitions, taints), the
claims holding them, the pods using those claims, pending pods with the scheduler's
reason, DeviceClasses and recent events; and each claim's timeline (created, allocated,
reserved, prepared, released), from what the claim records and the transitions this view
saw, with the events of the pods that used it.

The view is an API client like any other: it reads what it shows through the API. The
snapshot is cheap (it runs on every change, in `draemu up`'s apiserver process);
explanations of decisions run in the worker process (worker.py), one pod at a time, when
asked for.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from draemu.api.meta import time_now
from draemu.api.quantity import Quantity
from draemu.api.types import Obj
from draemu.client import Client, Informer, SharedInformers, key_of
from draemu.cmd.explain.devices import build as device_rows
from draemu.features import FeatureGates

V1 = "resource.k8s.io/v1"
RESOURCES = {
    "nodes": ("v1", "nodes"), "pods": ("v1", "pods"), "events": ("v1", "events"),
    "slices": (V1, "resourceslices"), "claims": (V1, "resourceclaims"),
    "classes": (V1, "deviceclasses"), "rules": ("resource.k8s.io/v1alpha3", "devicetaintrules"),
}
MAX_EVENTS = 60
MAX_HISTORY = 32  # transitions kept per claim
MAX_CLAIMS_REMEMBERED = 2000  # claims whose transitions are kept (deleted ones included)


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
        # claim key -> the transitions seen (time, step, detail), oldest first
        self.history: dict[str, list[dict[str, str]]] = {}
        for name, (api_version, resource) in RESOURCES.items():
            inf = self.informers.informer(api_version, resource)
            inf.add_handler(on_add=self._bump, on_update=lambda _o, _n: self._bump(),
                            on_delete=self._bump)
            self.inf[name] = inf
        self.inf["claims"].add_handler(
            on_add=lambda c: self._claim_changed(None, c),
            on_update=self._claim_changed, on_delete=lambda c: self._claim_changed(c, None))

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
        out_pods = [_pod(pod, holders) for pod in pods]
        return {
            "version": self.version,
            "nodes": out_nodes,
            "claims": [_claim(c, pods_of_claim) for c in sorted(claims, key=key_of)],
            "pods": out_pods,
            "classes": [_class(c) for c in sorted(self.items("classes"), key=key_of)],
            "events": _events(self.items("events")),
        }

    def pod(self, namespace: str, name: str) -> Obj | None:
        return self.inf["pods"].get(f"{namespace}/{name}")

    # A claim's timeline -----------------------------------------------------------------
    def _claim_changed(self, old: Obj | None, new: Obj | None) -> None:
        claim = new or old
        assert claim is not None
        key = key_of(claim)
        if key not in self.history and len(self.history) >= MAX_CLAIMS_REMEMBERED:
            del self.history[next(iter(self.history))]  # the claim seen longest ago
        steps = self.history.setdefault(key, [])
        steps += transitions(old, new, time_now())
        del steps[:-MAX_HISTORY]

    def timeline(self, namespace: str, name: str) -> list[dict[str, str]]:
        """The claim's steps in time order: those this view saw happen, and before it
        started, what the claim records (its creation, its status writes), with the
        events of the pods that reserved it (scheduled, started: its devices prepared)."""
        key = f"{namespace}/{name}"
        steps = list(self.history.get(key, []))
        pods = {p for s in steps for p in [s.get("pod", "")] if p}
        claim = self.inf["claims"].get(key)
        if claim is not None:
            pods |= {f"{namespace}/{r.get('name')}"
                     for r in (claim.get("status") or {}).get("reservedFor") or []
                     if r.get("resource") == "pods"}
        steps += _pod_steps(self.items("events"), pods)
        return sorted(steps, key=lambda s: s["time"])

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


def transitions(old: Obj | None, new: Obj | None, now: str) -> list[dict[str, str]]:
    """What happened to a claim between two of its states (None: not there), as timeline
    steps. A claim first seen already allocated gets its steps from what it records:
    its creation time and the time of the last status write (managedFields)."""
    if new is None:
        return [{"time": now, "step": "released", "detail": "the claim was deleted"}]
    before = _claim_state(old)
    after = _claim_state(new)
    steps = []
    when = now
    if old is None:
        meta = new["metadata"]
        steps.append({"time": meta.get("creationTimestamp") or now, "step": "created",
                      "detail": f"by {_manager(new, '') or 'its author'}"})
        when = _status_written(new) or now
    if after["devices"] and not before["devices"]:
        steps.append({"time": when, "step": "allocated",
                      "detail": f"{', '.join(after['devices'])} by "
                                f"{_manager(new, 'status') or 'the scheduler'}"})
    for pod in sorted(after["pods"] - before["pods"]):
        steps.append({"time": when, "step": "reserved", "detail": f"for pod {pod}",
                      "pod": pod})
    for pod in sorted(before["pods"] - after["pods"]):
        steps.append({"time": now, "step": "released", "detail": f"by pod {pod}", "pod": pod})
    if before["devices"] and not after["devices"]:
        steps.append({"time": now, "step": "deallocated",
                      "detail": f"{', '.join(before['devices'])} free again"})
    if new["metadata"].get("deletionTimestamp") and not (old or {}).get(
            "metadata", {}).get("deletionTimestamp"):
        steps.append({"time": now, "step": "deleting", "detail": "deletion requested"})
    return steps


def _claim_state(claim: Obj | None) -> dict[str, Any]:
    if claim is None:
        return {"devices": [], "pods": set()}
    ns = claim["metadata"].get("namespace", "default")
    return {"devices": [f"{r['driver']}/{r['pool']}/{r['device']}" for r in _allocated(claim)],
            "pods": {f"{ns}/{r.get('name')}"
                     for r in (claim.get("status") or {}).get("reservedFor") or []
                     if r.get("resource") == "pods"}}


def _manager(obj: Obj, subresource: str) -> str:
    """Who last wrote the object (subresource "") or its status ("status")."""
    entries = [m for m in obj["metadata"].get("managedFields") or []
               if (m.get("subresource") or "") == subresource]
    return max(entries, key=lambda m: m.get("time") or "").get("manager", "") if entries else ""


def _status_written(obj: Obj) -> str:
    times = [m.get("time") or "" for m in obj["metadata"].get("managedFields") or []
             if m.get("subresource") == "status"]
    return max(times, default="")


# What the kubelet and the scheduler say of a pod, as steps of its claims' timelines.
_POD_STEPS = {"Scheduled": "scheduled", "Started": "prepared",
              "FailedPrepareDynamicResources": "prepare failed",
              "FailedUnprepareDynamicResources": "unprepare failed", "Killing": "stopping"}


def _pod_steps(events: list[Obj], pods: set[str]) -> list[dict[str, str]]:
    out = []
    for e in events:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        key = f"{obj.get('namespace', '')}/{obj.get('name', '')}"
        step = _POD_STEPS.get(e.get("reason", ""))
        if obj.get("kind") != "Pod" or key not in pods or step is None:
            continue
        detail = e.get("message") or e.get("note") or ""
        if step == "prepared":  # the kubelet prepares a pod's claims before it starts it
            detail = f"pod {key} started, its claims' devices prepared: {detail}"
        out.append({"time": e.get("lastTimestamp") or e.get("eventTime")
                    or e["metadata"].get("creationTimestamp") or "", "step": step,
                    "detail": detail})
    return out


def _pod(pod: Obj, holders: dict[str, list[str]]) -> dict[str, Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    ns = pod["metadata"].get("namespace", "default")
    generated = {s.get("name"): s.get("resourceClaimName")
                 for s in status.get("resourceClaimStatuses") or []}
    claims = [f"{ns}/{name}" for ref in spec.get("resourceClaims") or []
              if (name := ref.get("resourceClaimName") or generated.get(ref.get("name")))]
    devices = sorted(d for d, keys in holders.items() if set(keys) & set(claims))
    phase = status.get("phase", "Pending")
    reason = next((c.get("message", "") for c in status.get("conditions") or []
                   if c.get("type") == "PodScheduled" and c.get("status") == "False"), "")
    return {"key": key_of(pod), "namespace": ns, "name": pod["metadata"]["name"],
            "phase": phase, "node": spec.get("nodeName"), "claims": claims,
            "devices": devices, "pending": phase == "Pending" and not spec.get("nodeName"),
            "deleting": bool(pod["metadata"].get("deletionTimestamp")), "reason": reason}


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
