"""The DRA manager's claim cache and its checkpoint file (`dra_manager_state`).

The file has upstream's shape: `{"Data": "<json>", "Checksum": <CRC-32 of Data>}`, with
Data a `DRACheckpoint` listing each claim's UID, name, namespace, the pods using it and
the devices every driver returned. Entries come back with `prepared = False`, so a
restarted kubelet prepares again (drivers are idempotent) before starting a container.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHECKPOINT_KIND = "DRACheckpoint"
CHECKPOINT_API_VERSION = "checkpoint.dra.kubelet.k8s.io/v1"


class CheckpointError(Exception):
    pass


@dataclass
class DeviceState:
    pool_name: str
    device_name: str
    request_names: list[str] = field(default_factory=list)
    cdi_device_ids: list[str] = field(default_factory=list)
    share_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"PoolName": self.pool_name, "DeviceName": self.device_name,
                               "RequestNames": self.request_names,
                               "CDIDeviceIDs": self.cdi_device_ids}
        if self.share_id is not None:
            out["ShareID"] = self.share_id
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeviceState:
        return cls(data["PoolName"], data["DeviceName"], list(data.get("RequestNames") or []),
                   list(data.get("CDIDeviceIDs") or []), data.get("ShareID"))


@dataclass
class ClaimInfo:
    claim_uid: str
    claim_name: str
    namespace: str
    pod_uids: set[str] = field(default_factory=set)
    driver_state: dict[str, list[DeviceState]] = field(default_factory=dict)
    # DRAOptionalNodeOperations: per driver, the node operations its results all skip
    # ("*", "NodePrepareResources", "NodeUnprepareResources").
    skip: dict[str, list[str]] = field(default_factory=dict)
    prepared: bool = False  # in memory only

    def skips(self, driver: str, operation: str) -> bool:
        ops = self.skip.get(driver) or []
        return "*" in ops or operation in ops

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.claim_name}"

    def to_json(self) -> dict[str, Any]:
        return {"ClaimUID": self.claim_uid, "ClaimName": self.claim_name,
                "Namespace": self.namespace,
                "PodUIDs": {uid: {} for uid in sorted(self.pod_uids)},
                "DriverState": {driver: {"Devices": [d.to_json() for d in devices],
                                         **({"skipNodeOperations": self.skip[driver]}
                                            if self.skip.get(driver) else {})}
                                for driver, devices in self.driver_state.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaimInfo:
        states = data.get("DriverState") or {}
        return cls(data["ClaimUID"], data["ClaimName"], data["Namespace"],
                   set(data.get("PodUIDs") or {}),
                   {driver: [DeviceState.from_json(d) for d in state.get("Devices") or []]
                    for driver, state in states.items()},
                   {driver: list(state["skipNodeOperations"])
                    for driver, state in states.items() if state.get("skipNodeOperations")})


def skipped_operations(results: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per driver, the node operations every one of its results skips (upstream's
    computeDriverStates): "*" when all skip everything, else the operations each result
    skips by name or by "*"."""
    totals: dict[str, int] = {}
    counts: dict[str, dict[str, int]] = {}
    for result in results:
        driver = result.get("driver", "")
        totals[driver] = totals.get(driver, 0) + 1
        ops = result.get("skipNodeOperations") or []
        if not ops:
            continue
        per = counts.setdefault(driver, {})
        for op in ["*"] if "*" in ops else ops:
            per[op] = per.get(op, 0) + 1
    out: dict[str, list[str]] = {}
    for driver, total in totals.items():
        per = counts.get(driver, {})
        everything = per.get("*", 0)
        if everything == total:
            out[driver] = ["*"]
            continue
        ops = sorted(op for op, n in per.items() if op != "*" and n + everything == total)
        if ops:
            out[driver] = ops
    return out


class ClaimCache:
    """Claims by `namespace/name`, persisted on every change that matters after a restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.claims: dict[str, ClaimInfo] = {}

    def load(self) -> None:
        if not self.path.exists():
            return
        try:
            outer = json.loads(self.path.read_text())
            data = outer["Data"]
            if zlib.crc32(data.encode()) != outer["Checksum"]:
                raise CheckpointError("checkpoint is corrupted (checksum mismatch)")
            inner = json.loads(data)
            if inner.get("kind") != CHECKPOINT_KIND:
                raise CheckpointError(f"unexpected checkpoint kind {inner.get('kind')!r}")
            entries = [ClaimInfo.from_json(e) for e in inner.get("Entries") or []]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise CheckpointError(
                f"failed to get checkpoint {self.path}: {err}; drain the node and remove "
                "the state file to recover") from err
        self.claims = {c.key: c for c in entries}

    def save(self) -> None:
        data = json.dumps({"kind": CHECKPOINT_KIND, "apiVersion": CHECKPOINT_API_VERSION,
                           "Entries": [c.to_json() for c in self.claims.values()]},
                          separators=(",", ":"))
        body = json.dumps({"Data": data, "Checksum": zlib.crc32(data.encode())})
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(body)
        os.replace(tmp, self.path)

    def for_pod(self, pod_uid: str) -> list[ClaimInfo]:
        return [c for c in self.claims.values() if pod_uid in c.pod_uids]

    def pod_uids(self) -> set[str]:
        return {uid for c in self.claims.values() for uid in c.pod_uids}
