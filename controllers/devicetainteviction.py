"""Device taint eviction: the DRA counterpart of NoExecute node taints.

Devices get taints from their ResourceSlice (`devices[].taints`) and from
DeviceTaintRules (`spec.deviceSelector` naming a driver, pool and/or device). A pod
that uses a claim allocated with a device tainted `NoExecute` is deleted unless the
claim's allocation tolerates the taint (the tolerations recorded per device result),
at once or after `tolerationSeconds`. Each DeviceTaintRule's `EvictionInProgress`
condition says how many pods are still to go and how many it evicted.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from draemu.api.meta import (
    meta,
    name_of,
    namespace_of,
    now,
    parse_time,
    pod_is_terminal,
    set_condition,
    toleration_matches,
)
from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import Controller

RESOURCE = "resource.k8s.io/v1"
Device = tuple[str, str, str]  # driver, pool, device


def rule_selects(rule: Obj, device: Device) -> bool:
    """As the API says of a rule's deviceSelector: all its criteria must hold; an empty
    selector matches every device, a rule without one matches none."""
    sel = (rule.get("spec") or {}).get("deviceSelector")
    if sel is None:
        return False
    driver, pool, name = device
    return ((not sel.get("driver") or sel["driver"] == driver)
            and (not sel.get("pool") or sel["pool"] == pool)
            and (not sel.get("device") or sel["device"] == name))


def pod_claim_names(pod: Obj) -> list[str]:
    statuses = {s.get("name"): s.get("resourceClaimName")
                for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    names = []
    for pc in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = pc.get("resourceClaimName") or statuses.get(pc.get("name"))
        if name:
            names.append(name)
    return names


class DeviceTaintEvictionController(Controller):
    name = "device-taint-eviction"
    resync_seconds = 10.0

    def setup(self) -> None:
        inf = self.ctx.informers
        self.pods = inf.informer("v1", "pods")
        self.claims = inf.informer(RESOURCE, "resourceclaims")
        self.slices = inf.informer(RESOURCE, "resourceslices")
        self.rules = inf.informer(RESOURCE, "devicetaintrules")
        self.evicted: dict[str, set[str]] = {}  # rule name -> uids of pods it evicted
        # The slices with a tainted device, by key: device_taints() runs for every device
        # of every pod, and most slices (often all) have no taints.
        self.tainted_slices: dict[str, Obj] = {}
        self.pods.add_handler(on_add=self._pod, on_update=lambda _o, n: self._pod(n))
        self.claims.add_handler(on_add=self._claim, on_update=lambda _o, n: self._claim(n))
        self.slices.add_handler(on_add=self._slice, on_update=lambda _o, n: self._slice(n),
                                on_delete=self._slice_deleted)
        self.rules.add_handler(on_add=self._everything, on_update=lambda _o, _n:
                               self._everything(None), on_delete=self._everything)

    def primary(self) -> Any:
        return self.pods

    def _pod(self, pod: Obj) -> None:
        if (pod.get("spec") or {}).get("resourceClaims"):
            self.queue.add(key_of(pod))

    def _claim(self, claim: Obj) -> None:
        for ref in (claim.get("status") or {}).get("reservedFor") or []:
            if ref.get("resource") == "pods":
                self.queue.add(f"{namespace_of(claim)}/{ref.get('name')}")

    def _slice(self, obj: Obj) -> None:
        if any(dev.get("taints") for dev in (obj.get("spec") or {}).get("devices") or []):
            self.tainted_slices[key_of(obj)] = obj
        else:
            self.tainted_slices.pop(key_of(obj), None)
        self._everything(obj)

    def _slice_deleted(self, obj: Obj) -> None:
        self.tainted_slices.pop(key_of(obj), None)
        self._everything(obj)

    def _everything(self, _obj: Obj | None) -> None:
        for pod in self.pods.list():
            self._pod(pod)
        self.queue.add("rules:")

    # Taints ------------------------------------------------------------------------
    def device_taints(self, device: Device) -> list[tuple[Obj, str]]:
        """(taint, rule name or "") for every taint on the device."""
        driver, pool, name = device
        found: list[tuple[Obj, str]] = []
        for s in self.tainted_slices.values():
            spec = s.get("spec") or {}
            if spec.get("driver") != driver or (spec.get("pool") or {}).get("name") != pool:
                continue
            for dev in spec.get("devices") or []:
                if dev.get("name") == name:
                    found.extend((t, "") for t in dev.get("taints") or [])
        for rule in self.rules.list():
            if rule_selects(rule, device):
                taint = (rule.get("spec") or {}).get("taint") or {}
                found.append((taint, name_of(rule)))
        return found

    def _pod_devices(self, pod: Obj) -> list[tuple[Device, list[Obj]]]:
        """Devices allocated to the pod's claims, each with the tolerations of its result."""
        out = []
        for claim_name in pod_claim_names(pod):
            claim = self.claims.get(f"{namespace_of(pod)}/{claim_name}")
            alloc = ((claim or {}).get("status") or {}).get("allocation") or {}
            for res in (alloc.get("devices") or {}).get("results") or []:
                out.append(((res.get("driver", ""), res.get("pool", ""), res.get("device", "")),
                            res.get("tolerations") or []))
        return out

    def eviction(self, pod: Obj) -> tuple[float | None, list[str]]:
        """Seconds until the pod must be evicted (None: never), and the rules involved."""
        delay: float | None = None
        rules: list[str] = []
        for device, tolerations in self._pod_devices(pod):
            for taint, rule in self.device_taints(device):
                if taint.get("effect") != "NoExecute":
                    continue
                matching = [t for t in tolerations if toleration_matches(t, taint)]
                if not matching:
                    remaining = 0.0
                else:
                    seconds = [t["tolerationSeconds"] for t in matching
                               if t.get("tolerationSeconds") is not None]
                    if not seconds:
                        continue
                    added = parse_time(taint.get("timeAdded")) or now()
                    remaining = max(0.0, (added + timedelta(seconds=max(0, min(seconds)))
                                          - now()).total_seconds())
                delay = remaining if delay is None else min(delay, remaining)
                if rule:
                    rules.append(rule)
        return delay, rules

    # Reconcile ---------------------------------------------------------------------
    async def reconcile(self, key: str) -> float | None:
        if key == "rules:":
            await self._update_rule_status()
            return None
        pod = self.pods.get(key)
        if pod is None or pod_is_terminal(pod) or meta(pod).get("deletionTimestamp"):
            return None
        delay, rules = self.eviction(pod)
        if delay is None:
            return None
        if delay > 0:
            self.queue.add("rules:")
            return delay
        if not await self._mark_and_delete(pod, key):
            return None
        for rule in rules:
            self.evicted.setdefault(rule, set()).add(meta(pod).get("uid", ""))
        self.log.info("evicted pod for NoExecute device taint", pod=key)
        self.queue.add("rules:")
        return None

    async def _mark_and_delete(self, pod: Obj, key: str) -> bool:
        """As upstream's device taint manager evicts: the pod as it is now (the same
        UID, not being deleted yet), the event, the DisruptionTarget condition
        (DeletionByDeviceTaintManager) in its status, then the deletion with a UID
        precondition. False when there was nothing to evict."""
        uid = meta(pod).get("uid", "")
        try:
            current = await self.client.get("v1", "pods", name_of(pod), namespace_of(pod))
        except ApiError as e:
            if e.code != 404:
                raise
            return False
        if meta(current).get("uid") != uid or meta(current).get("deletionTimestamp"):
            return False
        await self.recorder.event(current, "Normal", "DeviceTaintManagerEviction",
                                  f"Marking for deletion Pod {key}")
        conditions = copy.deepcopy((current.get("status") or {}).get("conditions") or [])
        if set_condition(conditions, "DisruptionTarget", "True", "DeletionByDeviceTaintManager",
                         "Device Taint manager: deleting due to NoExecute taint"):
            changed = [c for c in conditions if c.get("type") == "DisruptionTarget"]
            try:  # conditions merge by type: the kubelet's stay as they are
                await self.client.patch("v1", "pods", name_of(pod),
                                        {"status": {"conditions": changed}},
                                        patch_type="strategic", namespace=namespace_of(pod),
                                        subresource="status")
            except ApiError as e:
                if e.code not in (404, 409):
                    raise
                return False
        try:
            await self.client.delete("v1", "pods", name_of(pod), namespace_of(pod),
                                     preconditions={"uid": uid})
        except ApiError as e:
            if e.code not in (404, 409):
                raise
            return False
        return True

    async def _update_rule_status(self) -> None:
        pending: dict[str, int] = {}
        for pod in self.pods.list():
            if pod_is_terminal(pod) or meta(pod).get("deletionTimestamp"):
                continue
            delay, rules = self.eviction(pod)
            if delay is not None:
                for rule in set(rules):
                    pending[rule] = pending.get(rule, 0) + 1
        for rule in self.rules.list():
            name = name_of(rule)
            effect = ((rule.get("spec") or {}).get("taint") or {}).get("effect")
            conditions = copy.deepcopy((rule.get("status") or {}).get("conditions") or [])
            n_pending, n_done = pending.get(name, 0), len(self.evicted.get(name, ()))
            if effect == "NoExecute" and n_pending:
                changed = set_condition(conditions, "EvictionInProgress", "True",
                                        "PodsPendingEviction",
                                        f"{n_pending} pods are pending eviction, "
                                        f"{n_done} pods evicted already")
            else:
                changed = set_condition(conditions, "EvictionInProgress", "False",
                                        "NoPodsPendingEviction" if effect == "NoExecute"
                                        else "NotEvicting",
                                        f"{n_done} pods evicted already" if effect ==
                                        "NoExecute" else f"taint effect {effect} evicts no pods")
            if not changed:
                continue
            gen = meta(rule).get("generation")
            for cond in conditions:
                if gen is not None:
                    cond["observedGeneration"] = gen
            try:
                await self.client.patch(RESOURCE, "devicetaintrules", name,
                                        {"status": {"conditions": conditions}},
                                        subresource="status")
            except ApiError as e:
                if e.code != 404:
                    raise
