"""A DRA kubelet plugin: registration and DRA gRPC servers on unix sockets, claim checks,
serialised calls, ResourceSlice publishing and health reporting.

The Python counterpart of upstream's `kubeletplugin` helper: the kubelet finds
`<registrar_dir>/<driver>-reg.sock`, asks `GetInfo`, and then calls
NodePrepareResources / NodeUnprepareResources (v1 or v1beta1) on
`<plugin_data_dir>/dra.sock`.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc

from draemu.api.types import Obj
from draemu.client import ApiError, Client
from draemu.drivers.sdk.health import HealthReporter
from draemu.drivers.sdk.metadata import MetadataWriter
from draemu.drivers.sdk.slices import ResourceSliceController
from draemu.drivers.sdk.types import ClaimRef, Driver, DriverResources, PrepareResult
from draemu.kubeletapi import dra, health, rpc
from draemu.kubeletapi import pluginregistration as reg
from draemu.log import get_logger

log = get_logger("kubeletplugin")

DEFAULT_REGISTRAR_DIR = "/var/lib/kubelet/plugins_registry"
DEFAULT_PLUGINS_DIR = "/var/lib/kubelet/plugins"
DEFAULT_CDI_DIR = "/var/run/cdi"
UNIX_PATH_MAX = 108


class KubeletPlugin:
    def __init__(self, driver: Driver, *, driver_name: str, node_name: str, client: Client,
                 registrar_dir: str | Path = DEFAULT_REGISTRAR_DIR,
                 plugin_data_dir: str | Path | None = None,
                 serialize: bool = True, rolling_update_uid: str | None = None,
                 node_v1: bool = True, node_v1beta1: bool = True,
                 health_service: bool = True, device_metadata: bool = False,
                 cdi_dir: str | Path = DEFAULT_CDI_DIR,
                 metadata_versions: tuple[str, ...] = ("v1beta1",)) -> None:
        """`device_metadata`: write KEP-5304 device metadata files for prepared claims
        and mount them into containers through CDI (upstream's EnableDeviceMetadata)."""
        self.driver = driver
        self.driver_name = driver_name
        self.node_name = node_name
        self.client = client
        self.registrar_dir = Path(registrar_dir)
        self.plugin_data_dir = Path(plugin_data_dir or Path(DEFAULT_PLUGINS_DIR, driver_name))
        self.serialize = serialize
        self.rolling_update_uid = rolling_update_uid
        suffix = f"-{rolling_update_uid}" if rolling_update_uid else ""
        self.registration_socket = self.registrar_dir / f"{driver_name}{suffix}-reg.sock"
        self.dra_socket = self.plugin_data_dir / f"dra{suffix}.sock"
        self.versions = [v for v, on in ((dra.V1, node_v1), (dra.V1BETA1, node_v1beta1)) if on]
        self.health = HealthReporter() if health_service else None
        self.metadata = (MetadataWriter(driver_name, self.plugin_data_dir, cdi_dir,
                                        metadata_versions) if device_metadata else None)
        self.registration_status: Any = None
        self.registered = asyncio.Event()
        self.slices = ResourceSliceController(client, driver_name, node_name)
        self._lock = asyncio.Lock()
        self._servers: list[grpc.aio.Server] = []
        self._publishing = False

    # ---- lifecycle

    async def start(self) -> None:
        for path in (self.registration_socket, self.dra_socket):
            if len(str(path)) >= UNIX_PATH_MAX:
                raise ValueError(f"socket path {path} exceeds the {UNIX_PATH_MAX}-byte limit")
        self.plugin_data_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
        self.registrar_dir.mkdir(parents=True, exist_ok=True)
        handlers = [rpc.dra_handler(v, self._prepare_handler(v), self._unprepare_handler(v))
                    for v in self.versions]
        if self.health:
            handlers += [rpc.health_handler(v, self.health.watcher(v))
                         for v in health.VERSIONS.values()]
        # The DRA service first: the kubelet may call it as soon as registration answers.
        self._servers.append(await self._serve(self.dra_socket, handlers))
        self._servers.append(await self._serve(self.registration_socket, [
            rpc.registration_handler(self._get_info, self._notify)]))
        log.info("kubelet plugin started", driver=self.driver_name,
                 registration=str(self.registration_socket), endpoint=str(self.dra_socket))

    @staticmethod
    async def _serve(path: Path, handlers: list[grpc.GenericRpcHandler]) -> grpc.aio.Server:
        path.unlink(missing_ok=True)
        server = grpc.aio.server(handlers=handlers)
        server.add_insecure_port(rpc.unix_target(str(path)))
        await server.start()
        return server

    async def stop(self) -> None:
        # Removing the registration socket first is how a plugin deregisters.
        for server in reversed(self._servers):
            await server.stop(grace=0.5)
        self._servers.clear()
        self.registration_socket.unlink(missing_ok=True)
        self.dra_socket.unlink(missing_ok=True)
        if self._publishing:
            await self.slices.stop()
            self._publishing = False

    async def publish_resources(self, resources: DriverResources) -> None:
        """Publish (or change) the node's ResourceSlices; returns at once, syncs behind."""
        self.slices.update(resources)
        if not self._publishing:
            await self.slices.start()
            self._publishing = True

    # ---- registration service

    def supported_versions(self) -> list[str]:
        names = [v.registration_name for v in self.versions]
        if self.health:
            names += health.KUBELET_PREFERENCE
        return names

    async def _get_info(self, _request: Any, _context: Any) -> Any:
        return reg.PluginInfo(type=reg.DRA_PLUGIN, name=self.driver_name,
                              endpoint=str(self.dra_socket),
                              supported_versions=self.supported_versions())

    async def _notify(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.registration_status = request
        if not request.plugin_registered:
            log.error("kubelet rejected plugin", driver=self.driver_name, error=request.error)
            await context.abort(grpc.StatusCode.UNKNOWN,
                                f"failed registration process: {request.error}")
        self.registered.set()
        return reg.RegistrationStatusResponse()

    # ---- DRA service

    @asynccontextmanager
    async def _serialized(self) -> AsyncIterator[None]:
        if not self.serialize:
            yield
            return
        async with self._lock:
            if not self.rolling_update_uid:
                yield
                return
            # Two instances of a driver overlap during a rolling update: a file lock in
            # the shared data directory keeps their calls apart.
            fd = os.open(self.plugin_data_dir / "serialize.lock", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    async def _fetch_claim(self, ref: Any) -> Obj:
        """The claim from the API, checked: drivers never trust the kubelet's copy."""
        try:
            claim = await self.client.get("resource.k8s.io/v1", "resourceclaims", ref.name,
                                          ref.namespace)
        except ApiError as err:
            raise RuntimeError(f"retrieve claim {ref.namespace}/{ref.name}: {err.message}") \
                from err
        if claim["metadata"]["uid"] != ref.uid:
            raise RuntimeError(f"claim {ref.namespace}/{ref.name}: got replaced")
        if not (claim.get("status") or {}).get("allocation"):
            raise RuntimeError(f"claim {ref.namespace}/{ref.name}: not allocated")
        return claim

    def _prepare_handler(self, version: dra.DRAVersion) -> rpc.Unary:
        async def prepare(request: Any, _context: Any) -> Any:
            response = version.NodePrepareResourcesResponse()
            claims: list[Obj] = []
            for ref in request.claims:
                try:
                    claims.append(await self._fetch_claim(ref))
                except RuntimeError as err:
                    response.claims[ref.uid].error = str(err)
            if claims:
                async with self._serialized():
                    results = await self.driver.prepare_resource_claims(claims)
                for claim in claims:
                    uid = claim["metadata"]["uid"]
                    result = results.get(uid) or PrepareResult(
                        error="driver returned no result for this claim")
                    metadata_ids = self._write_metadata(claim, result)
                    _fill_prepare(version, response.claims[uid], result, metadata_ids)
            return response
        return prepare

    def _unprepare_handler(self, version: dra.DRAVersion) -> rpc.Unary:
        async def unprepare(request: Any, _context: Any) -> Any:
            refs = [ClaimRef(c.namespace, c.name, c.uid) for c in request.claims]
            async with self._serialized():
                errors = await self.driver.unprepare_resource_claims(refs)
            if self.metadata is not None:
                for ref in refs:
                    if not errors.get(ref.uid):
                        self.metadata.cleanup(ref.namespace, ref.name, ref.uid)
            response = version.NodeUnprepareResourcesResponse()
            for ref in refs:
                error = errors.get(ref.uid)
                response.claims[ref.uid].error = error or ""
            return response
        return unprepare

    def _write_metadata(self, claim: Obj, result: PrepareResult) -> dict[str, str]:
        """The device metadata files of a prepared claim; CDI device IDs by request. A
        failure is logged and leaves the claim without them, as upstream."""
        if self.metadata is None or result.error:
            return {}
        try:
            return self.metadata.write_prepared(claim, result.devices)
        except OSError as err:
            log.error("failed to write device metadata", claim=claim["metadata"]["name"],
                      error=str(err))
            return {}

    async def update_request_metadata(self, namespace: str, name: str, uid: str,
                                      request: str, devices: list[Any]) -> None:
        """Rewrite a prepared request's metadata file with the devices' `metadata` (e.g.
        network data known only once the pod's sandbox exists); bumps its generation."""
        if self.metadata is None:
            raise RuntimeError("device metadata is not enabled")
        self.metadata.update_request(namespace, name, uid, request, devices)


def _fill_prepare(version: dra.DRAVersion, out: Any, result: PrepareResult,
                  metadata_ids: dict[str, str]) -> None:
    if result.error:
        out.error = result.error
        return
    injected: set[str] = set()
    for device in result.devices:
        # Subrequests are an allocation detail; containers name main requests.
        requests = [r.split("/", 1)[0] for r in device.requests]
        cdi_ids = list(device.cdi_device_ids)
        for request in requests:  # the metadata mount rides on the request's first device
            if request in metadata_ids and request not in injected:
                cdi_ids.append(metadata_ids[request])
                injected.add(request)
        item = out.devices.add(request_names=requests, pool_name=device.pool_name,
                               device_name=device.device_name, cdi_device_ids=cdi_ids)
        if device.share_id is not None and version.has_share_id:
            item.share_id = device.share_id
