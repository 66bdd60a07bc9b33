"""Device metadata files (KEP-5304, the DRA device attributes downward API), as 1.37's
`kubeletplugin` helper writes them (k8s.io/dynamic-resource-allocation/kubeletplugin).

For each request of a prepared claim the plugin writes, under its data directory,
`dra-device-metadata/<ns>_<claim>/<request>/metadata.json`: a JSON stream with one
`DeviceMetadata` object (group `metadata.resource.k8s.io`) per supported version, newest
first. A CDI spec `<cdi dir>/<driver>_metadata_<claim uid>_<request>.json` bind-mounts it
read-only into the containers at
`/var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/<driver>-metadata.json`
(`resourceclaimtemplates/<pod claim name>/...` for claims made from a template), and the
plugin adds that CDI device to the first device it returns for the request. Subrequests
share their request's file. Unprepare removes both.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draemu.api.types import Obj

GROUP = "metadata.resource.k8s.io"
VERSIONS = ("v1beta1", "v1alpha1")  # newest first, as the stream lists them
CONTAINER_DIR = "/var/run/kubernetes.io/dra-device-attributes"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
METADATA_SUB_DIR = "dra-device-metadata"


@dataclass
class DeviceMetadata:
    """What a container learns about one device: attributes as in a ResourceSlice
    (unqualified names belong to the driver) and, for network devices, networkData."""

    attributes: dict[str, Obj] = field(default_factory=dict)
    network_data: Obj | None = None


def container_file_path(driver: str, claim_name: str, request: str,
                        pod_claim_name: str | None = None) -> str:
    """Where a container finds the metadata file of a request (upstream's
    ResourceClaimFilePath / ResourceClaimTemplateFilePath)."""
    if pod_claim_name:
        return f"{CONTAINER_DIR}/resourceclaimtemplates/{pod_claim_name}/{request}/" \
               f"{driver}-metadata.json"
    return f"{CONTAINER_DIR}/resourceclaims/{claim_name}/{request}/{driver}-metadata.json"


def _base_request(ref: str) -> str:
    return ref.split("/", 1)[0]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    fd, tmp = tempfile.mkstemp(prefix=".metadata.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


class MetadataWriter:
    def __init__(self, driver_name: str, plugin_data_dir: str | Path, cdi_dir: str | Path,
                 versions: tuple[str, ...] = VERSIONS[:1]) -> None:
        unknown = [v for v in versions if v not in VERSIONS]
        if unknown or not versions:
            raise ValueError(f"none of the requested metadata API versions {list(versions)} "
                             "are supported" if not set(versions) & set(VERSIONS) else
                             f"unsupported metadata API versions {unknown}")
        self.driver = driver_name
        self.root = Path(plugin_data_dir) / METADATA_SUB_DIR
        self.cdi_dir = Path(cdi_dir)
        self.versions = [v for v in VERSIONS if v in versions]

    # ---- paths

    def claim_dir(self, namespace: str, name: str) -> Path:
        return self.root / f"{namespace}_{name}"

    def file_path(self, namespace: str, name: str, request: str) -> Path:
        return self.claim_dir(namespace, name) / request / "metadata.json"

    def cdi_spec_path(self, claim_uid: str, request: str) -> Path:
        return self.cdi_dir / f"{self.driver}_metadata_{claim_uid}_{request}.json"

    # ---- writing

    def write_prepared(self, claim: Obj, devices: list[Any]) -> dict[str, str]:
        """Write the files of a prepared claim; returns the CDI device ID per request.
        `devices` are the driver's PreparedDevices (their `metadata` may be None)."""
        meta = claim["metadata"]
        pod_claim = (meta.get("annotations") or {}).get(POD_CLAIM_NAME)
        by_request: dict[str, list[Any]] = {}
        for device in devices:
            for ref in device.requests:
                by_request.setdefault(ref, []).append(device)
        ids: dict[str, str] = {}
        for ref, devs in by_request.items():
            base = _base_request(ref)
            self._write_file(meta, pod_claim, ref, devs, generation=1)
            ids[base] = self._write_cdi(meta, pod_claim, base)
        return ids

    def update_request(self, namespace: str, name: str, uid: str, request: str,
                       devices: list[Any]) -> None:
        """Rewrite a request's file with the devices' metadata, one generation later (for
        drivers that learn attributes only after the sandbox exists)."""
        path = self.file_path(namespace, name, _base_request(request))
        try:
            first = json.JSONDecoder().raw_decode(path.read_text())[0]
        except FileNotFoundError:
            raise KeyError(f"request {request!r} not found in prepared claim "
                           f"{namespace}/{name}") from None
        meta = {"name": name, "namespace": namespace, "uid": uid}
        self._write_file(meta, first.get("podClaimName"), request, devices,
                         generation=int((first.get("metadata") or {}).get("generation", 0)) + 1)

    def cleanup(self, namespace: str, name: str, uid: str) -> None:
        shutil.rmtree(self.claim_dir(namespace, name), ignore_errors=True)
        for spec in self.cdi_dir.glob(f"{self.driver}_metadata_{uid}_*.json"):
            spec.unlink(missing_ok=True)

    def _document(self, meta: Obj, pod_claim: str | None, request: str, devices: list[Any],
                  generation: int, version: str) -> Obj:
        out_devices = []
        for device in devices:
            d: Obj = {"driver": self.driver, "pool": device.pool_name,
                      "name": device.device_name}
            info: DeviceMetadata | None = getattr(device, "metadata", None)
            if info is not None:
                if info.attributes:
                    d["attributes"] = dict(info.attributes)
                if info.network_data is not None:
                    d["networkData"] = info.network_data
            out_devices.append(d)
        doc: Obj = {"kind": "DeviceMetadata", "apiVersion": f"{GROUP}/{version}",
                    "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                                 "uid": meta["uid"], "generation": generation}}
        if pod_claim is not None:
            doc["podClaimName"] = pod_claim
        doc["requests"] = [{"name": request, "devices": out_devices}]
        return doc

    def _write_file(self, meta: Obj, pod_claim: str | None, request: str, devices: list[Any],
                    generation: int) -> None:
        stream = "".join(json.dumps(self._document(meta, pod_claim, request, devices,
                                                   generation, v), indent=2) + "\n"
                         for v in self.versions)
        _write(self.file_path(meta["namespace"], meta["name"], _base_request(request)), stream)

    def _write_cdi(self, meta: Obj, pod_claim: str | None, request: str) -> str:
        name = f"{meta['uid']}_{request}"
        spec = {
            # The CDI library's minimum version for the content: device names that start
            # with a digit need 0.5.0.
            "cdiVersion": "0.5.0" if name[:1].isdigit() else "0.3.0",
            "kind": f"{self.driver}/metadata",
            "devices": [{"name": name, "containerEdits": {"mounts": [{
                "hostPath": str(self.file_path(meta["namespace"], meta["name"], request)),
                "containerPath": container_file_path(self.driver, meta["name"], request,
                                                     pod_claim),
                "options": ["ro", "bind"]}]}}],
        }
        _write(self.cdi_spec_path(meta["uid"], request), json.dumps(spec, indent=2))
        return f"{self.driver}/metadata={name}"
