"""The disruption controller (upstream's pkg/controller/disruption): PodDisruptionBudget
status, which evictions consult.

`expectedPods` is the number of selected pods for an integer minAvailable, else the
sum of the scales of the pods' controllers (ReplicaSets, Deployments, StatefulSets,
ReplicationControllers, read from their spec.replicas); `desiredHealthy` is minAvailable
or expected minus maxUnavailable (percentages round up); `currentHealthy` counts ready
pods not being deleted nor recently evicted (`disruptedPods`, kept 2 minutes);
`disruptionsAllowed` = currentHealthy - desiredHealthy, at least 0; the
`DisruptionAllowed` condition says SufficientPods or InsufficientPods.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from draemu.api.labels import matches
from draemu.api.meta import (
    controller_of,
    format_time,
    meta,
    name_of,
    namespace_of,
    now,
    parse_time,
    pod_is_ready,
)
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller
from draemu.controllers.deployment import resolve

DELETION_TIMEOUT = timedelta(minutes=2)
# Controller kind -> (apiVersion, resource) whose spec.replicas is the scale.
SCALED = {"ReplicaSet": ("apps/v1", "replicasets"), "Deployment": ("apps/v1", "deployments"),
          "StatefulSet": ("apps/v1", "statefulsets"),
          "ReplicationController": ("v1", "replicationcontrollers")}


class DisruptionController(Controller):
    name = "disruption"
    workers = 2

    def component(self) -> str:
        return "controllermanager"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.pdbs = inf.informer("policy/v1", "poddisruptionbudgets")
        self.pods = inf.informer("v1", "pods")
        self.scaled = {kind: inf.informer(v, r) for kind, (v, r) in SCALED.items()}
        self.handlers_enqueue(self.pdbs)
        self.pods.add_handler(on_add=self._pod_changed,
                              on_update=lambda o, n: self._pod_changed(n),
                              on_delete=self._pod_changed)

    def primary(self) -> Any:
        return self.pdbs

    def _pod_changed(self, pod: Obj) -> None:
        for pdb in self.pdbs.list():
            if namespace_of(pdb) == namespace_of(pod) and self._selects(pdb, pod):
                self.queue.add(key_of(pdb))

    @staticmethod
    def _selects(pdb: Obj, pod: Obj) -> bool:
        selector = (pdb.get("spec") or {}).get("selector")
        return selector is not None and matches(selector, meta(pod).get("labels"))

    def _expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """The summed scale of the pods' controllers, and the pods without one."""
        scales: dict[str, int] = {}
        unmanaged = []
        for pod in pods:
            ref = controller_of(pod)
            owner = None
            if ref is not None and ref.get("kind") in self.scaled:
                owner = self.scaled[ref["kind"]].get(f"{namespace_of(pod)}/{ref.get('name')}")
            if owner is not None and owner["kind"] == "ReplicaSet":
                parent = controller_of(owner)
                if parent is not None and parent.get("kind") == "Deployment":
                    deployment = self.scaled["Deployment"].get(
                        f"{namespace_of(owner)}/{parent.get('name')}")
                    owner = deployment or owner
            if owner is None:
                unmanaged.append(name_of(pod))
                continue
            scales[meta(owner).get("uid", key_of(owner))] = int(
                (owner.get("spec") or {}).get("replicas", 1))
        return sum(scales.values()), unmanaged

    async def reconcile(self, key: str) -> float | None:
        pdb = self.pdbs.get(key)
        if pdb is None:
            return None
        spec = pdb.get("spec") or {}
        pods = [p for p in self.pods.list() if namespace_of(p) == namespace_of(pdb)
                and self._selects(pdb, p)]
        if not pods:
            await self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        expected, desired, unmanaged = 0, 0, []
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self._expected_scale(pods)
            desired = max(0, expected - resolve(spec["maxUnavailable"], expected, True))
        elif spec.get("minAvailable") is not None:
            min_available = spec["minAvailable"]
            if isinstance(min_available, int):
                expected, desired = len(pods), min_available
            else:
                expected, unmanaged = self._expected_scale(pods)
                desired = resolve(min_available, expected, True)
        if unmanaged:
            await self.recorder.event(
                pdb, "Warning", "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {spec.get('selector')}) "
                "were found to be unmanaged. As a result, the status of the PDB cannot be "
                "calculated correctly, which may result in undefined behavior. To account for "
                'these pods please set ".spec.minAvailable" field of the PDB to an integer '
                "value.")
        at = now()
        by_name = {name_of(p): p for p in pods}
        disrupted: dict[str, str] = {}
        recheck: float | None = None
        for name, stamp in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            pod, when = by_name.get(name), parse_time(stamp)
            if pod is None or when is None or meta(pod).get("deletionTimestamp"):
                continue
            expires = when + DELETION_TIMEOUT
            if expires > at:
                disrupted[name] = format_time(when)
                left = (expires - at).total_seconds()
                recheck = left if recheck is None else min(recheck, left)
        healthy = sum(1 for p in pods if not meta(p).get("deletionTimestamp")
                      and name_of(p) not in disrupted and pod_is_ready(p))
        allowed = healthy - desired if expected > 0 and healthy > desired else 0
        await self._write(pdb, healthy, desired, expected, allowed, disrupted)
        return recheck

    async def _write(self, pdb: Obj, healthy: int, desired: int, expected: int,
                     allowed: int, disrupted: dict[str, str]) -> None:
        generation = meta(pdb).get("generation") or 1
        old = pdb.get("status") or {}
        reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
        cond = next((c for c in old.get("conditions") or []
                     if c.get("type") == "DisruptionAllowed"), None)
        same = (old.get("currentHealthy", 0), old.get("desiredHealthy", 0),
                old.get("expectedPods", 0), old.get("disruptionsAllowed", 0),
                old.get("disruptedPods") or {}, old.get("observedGeneration")) == (
            healthy, desired, expected, allowed, disrupted, generation)
        if same and cond is not None and cond.get("reason") == reason and \
                cond.get("observedGeneration") == generation:
            return
        conditions = copy.deepcopy(old.get("conditions") or [])
        status = "True" if allowed > 0 else "False"
        fresh_cond = {"type": "DisruptionAllowed", "status": status, "reason": reason,
                      "message": "", "observedGeneration": generation,
                      "lastTransitionTime": format_time(now())}
        for i, c in enumerate(conditions):
            if c.get("type") == "DisruptionAllowed":
                if c.get("status") == status:
                    fresh_cond["lastTransitionTime"] = c.get("lastTransitionTime",
                                                             fresh_cond["lastTransitionTime"])
                conditions[i] = fresh_cond
                break
        else:
            conditions.append(fresh_cond)
        fresh = copy.deepcopy(pdb)
        fresh["status"] = {"currentHealthy": healthy, "desiredHealthy": desired,
                           "expectedPods": expected, "disruptionsAllowed": allowed,
                           "observedGeneration": generation, "conditions": conditions}
        if disrupted:
            fresh["status"]["disruptedPods"] = disrupted
        try:
            await self.client.update("policy/v1", "poddisruptionbudgets", fresh,
                                     subresource="status")
        except ApiError as e:
            if e.code != 404:
                raise
