"""Boundary fakes for protocol-level tests: an API that serves fixed claims, a driver."""

from __future__ import annotations

from typing import Any

from draemu.client import ApiError
from draemu.drivers.sdk import ClaimRef, PreparedDevice, PrepareResult


class ClaimsAPI:
    """Answers GET for ResourceClaims from a dict; enough for prepare-path tests."""

    def __init__(self, claims: list[dict[str, Any]] | None = None) -> None:
        self.claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): c
                       for c in claims or []}

    async def get(self, api_version: str, resource: str, name: str,
                  namespace: str | None = None, subresource: str | None = None) -> dict:
        claim = self.claims.get((namespace or "", name))
        if resource != "resourceclaims" or claim is None:
            raise ApiError(404, {"reason": "NotFound",
                                 "message": f'resourceclaims "{name}" not found'})
        return claim

    async def list(self, *args: Any, **kwargs: Any) -> dict:
        return {"items": []}


def claim(name: str, uid: str, pod_uid: str = "pod-uid", driver: str = "gpu.example.com",
          devices: tuple[str, ...] = ("gpu-0",), namespace: str = "default",
          owner_pod: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
    if owner_pod:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                    "uid": pod_uid, "controller": True}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": {"devices": {"requests": [{"name": "gpu"}]}},
            "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": pod_uid}],
                       "allocation": {"devices": {"results": [
                           {"request": "gpu", "driver": driver, "pool": "node-1",
                            "device": d} for d in devices]}}}}


class RecordingDriver:
    """Prepares each claim's allocated devices; records calls; can be told to fail."""

    def __init__(self, driver_name: str = "gpu.example.com") -> None:
        self.driver_name = driver_name
        self.prepared: list[list[str]] = []
        self.unprepared: list[list[str]] = []
        self.fail_with: str | None = None

    async def prepare_resource_claims(self, claims: list[dict]) -> dict[str, PrepareResult]:
        self.prepared.append([c["metadata"]["uid"] for c in claims])
        out = {}
        for c in claims:
            if self.fail_with:
                out[c["metadata"]["uid"]] = PrepareResult(error=self.fail_with)
                continue
            results = c["status"]["allocation"]["devices"]["results"]
            out[c["metadata"]["uid"]] = PrepareResult(devices=[
                PreparedDevice(r["pool"], r["device"], [r["request"]],
                               [f"k8s.{self.driver_name}/gpu={c['metadata']['uid']}-{r['device']}"],
                               share_id=r.get("shareID"))
                for r in results if r["driver"] == self.driver_name])
        return out

    async def unprepare_resource_claims(self, claims: list[ClaimRef]) -> dict[str, str | None]:
        self.unprepared.append([c.uid for c in claims])
        return {c.uid: None for c in claims}
