"""What the built-in drivers (`gpu`, `nic`) share: the devices of one node in one pool
named after the node, built from a preset's device list; a CDI spec per prepared claim
besides a common one; unprepare deletes the claim's spec. A driver adds how its devices
are built (`build_pool`), its common environment and how one claim is prepared."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from draemu.api.types import Obj
from draemu.drivers.sdk import CDIWriter, ClaimRef, DriverResources, Pool
from draemu.drivers.sdk import PrepareResult as Result


class NodeDriver:
    cdi_class: ClassVar[str]  # the CDI kind is k8s.<driver name>/<cdi_class>

    def __init__(self, driver_name: str, node_name: str, cdi_dir: Path,
                 entries: list[Obj]) -> None:
        self.driver_name = driver_name
        self.node_name = node_name
        self.pool = self.build_pool(driver_name, node_name, entries)
        self.devices = {d["name"]: d for d in self.pool.devices}
        self.cdi = CDIWriter(cdi_dir, f"k8s.{driver_name}/{self.cdi_class}")

    @staticmethod
    def build_pool(driver_name: str, node_name: str, entries: list[Obj]) -> Pool:
        raise NotImplementedError

    def common_env(self) -> list[str]:
        raise NotImplementedError

    def prepare(self, claim: Obj) -> Result:
        raise NotImplementedError

    def resources(self) -> DriverResources:
        return DriverResources(pools={self.node_name: self.pool})

    def write_common_spec(self) -> None:
        self.cdi.write("common", {"common": {"env": self.common_env()}})

    async def prepare_resource_claims(self, claims: list[Obj]) -> dict[str, Result]:
        return {c["metadata"]["uid"]: self.prepare(c) for c in claims}

    async def unprepare_resource_claims(self, claims: list[ClaimRef]) -> dict[str, str | None]:
        for ref in claims:
            self.cdi.delete(ref.uid)
        return {ref.uid: None for ref in claims}
