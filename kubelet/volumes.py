"""A pod's volumes on the emulated node, for the process runtime to mount.

Each volume gets a folder `<node root>/volumes/<pod uid>/<volume name>` (emptyDir, mode
0777 as upstream's, and the files of configMap, secret, downwardAPI and projected
volumes, written as the kubelet writes them: one file per key, `defaultMode`/`mode`
permissions; with the pod's `fsGroup`, group-owned by it as upstream's volume ownership
sets them), except `hostPath`, which is the node's path (kubelet/hostpaths.py), looked
up and made with links resolved inside the node's folder. `<node root>/volumes` is 0700:
secrets and tokens are the pods' and root's only. A projected `serviceAccountToken` is
asked for through the TokenRequest API, bound to the pod, as the kubelet does. Volume
types that need what draemu does not have (a CSI driver, a persistent volume, ...) fail
the container's creation with a message naming them.

A volume is given to the runtime as a base folder and a path inside it (`VolumeSource`):
the launcher opens the path with links resolved inside the base, so a link a pod wrote
into a volume (or a subPath through one) cannot point a mount outside it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import posixpath
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from draemu.api.types import Obj
from draemu.client import ApiError, Client
from draemu.kubelet.envvars import EnvError, field_value, resource_value
from draemu.kubelet.hostpaths import (
    device_source,
    in_node,
    lookup,
    machine_path_in_node,
    make,
    node_sysfs,
)
from draemu.log import get_logger
from draemu.nodelayout import NodeLayout

log = get_logger("kubelet.volumes")

SUPPORTED = ("hostPath", "emptyDir", "configMap", "secret", "downwardAPI", "projected")


class VolumeError(Exception):
    pass


@dataclass(frozen=True)
class VolumeSource:
    """A volume on this machine: `path` inside the folder `base` (links resolved inside it)."""
    base: str
    path: str = ""

    @property
    def location(self) -> Path:
        return Path(self.base) / self.path


@dataclass(frozen=True)
class Mount:
    source: VolumeSource
    target: str
    read_only: bool = False

    def spec(self) -> Obj:
        """As the launcher takes it (kubelet/runtime/confine/rootfs.py)."""
        return {"base": self.source.base, "path": self.source.path, "target": self.target,
                "readOnly": self.read_only}


def _write(folder: Path, files: dict[str, tuple[bytes, int]], fs_group: int | None = None
           ) -> None:
    for rel, (data, mode) in files.items():
        target = (folder / rel).resolve()
        if folder.resolve() not in target.parents:
            raise VolumeError(f"volume item path {rel!r} leaves the volume")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data)
        if fs_group is not None:
            os.chown(tmp, -1, fs_group)
            mode |= 0o440
        tmp.chmod(mode)
        os.replace(tmp, target)


def _own(folder: Path, fs_group: int, read_only: bool) -> None:
    """Upstream's volume ownership for fsGroup: group-owned, group-readable (and writable
    unless the volume is read-only), folders setgid."""
    mask = 0o440 if read_only else 0o660
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        os.chown(path, -1, fs_group)
        mode = path.stat().st_mode & 0o7777
        path.chmod(mode | mask | (0o2110 if path.is_dir() else 0))


class VolumeManager:
    def __init__(self, client: Client, layout: NodeLayout) -> None:
        self.client = client
        self.layout = layout
        self._refreshers: dict[str, list[asyncio.Task[None]]] = {}

    def pod_dir(self, uid: str) -> Path:
        return self.layout.root / "volumes" / uid

    def _make_pod_dir(self, uid: str) -> Path:
        top = self.layout.root / "volumes"
        top.mkdir(mode=0o700, parents=True, exist_ok=True)
        top.chmod(0o700)  # also for node folders made before (0755)
        folder = self.pod_dir(uid)
        folder.mkdir(mode=0o700, exist_ok=True)
        return folder

    async def setup(self, pod: Obj, host_ip: str, pod_ip: str | None
                    ) -> dict[str, VolumeSource]:
        """Every volume of the pod, ready: name -> where it is on this machine."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        fs_group = (spec.get("securityContext") or {}).get("fsGroup")
        out: dict[str, VolumeSource] = {}
        for volume in spec.get("volumes") or []:
            name = volume["name"]
            kind = next((k for k in volume if k != "name"), "")
            if kind not in SUPPORTED:
                raise VolumeError(f'volume "{name}": {kind} volumes are not supported by '
                                  f"the process runtime (supported: {', '.join(SUPPORTED)})")
            source = volume[kind] or {}
            if kind == "hostPath":
                out[name] = VolumeSource(str(self.layout.root), self._host_path(name, source))
                continue
            folder = self._make_pod_dir(meta["uid"]) / name
            folder.mkdir(exist_ok=True)
            if kind == "emptyDir":
                folder.chmod(0o777)
            else:
                files = await self._files(pod, kind, source, host_ip, pod_ip)
                _write(folder, files)
            if fs_group is not None:
                _own(folder, int(fs_group), read_only=kind != "emptyDir")
            out[name] = VolumeSource(str(folder))
            if kind == "projected":
                for item in source.get("sources") or []:
                    if "serviceAccountToken" in item:
                        self._refreshers.setdefault(meta["uid"], []).append(
                            asyncio.create_task(self._refresh(
                                pod, folder, item["serviceAccountToken"] or {},
                                source.get("defaultMode", 0o644), fs_group)))
        return out

    def cdi_mounts(self, mounts: list[Obj]) -> list[Mount]:
        """A device's CDI mounts name paths of the node: inside the node's folder (as
        draemu's drivers write them) or node paths mapped as hostPath volumes are; never
        anything else of this machine. Missing sources are left out."""
        out = []
        for m in mounts:
            rel = machine_path_in_node(self.layout, m["hostPath"])
            if rel is None:
                rel = in_node(self.layout, m["hostPath"])
            if lookup(self.layout.root, rel) is None:
                continue
            out.append(Mount(VolumeSource(str(self.layout.root), rel), m["containerPath"],
                             "ro" in (m.get("options") or [])))
        return out

    def cdi_devices(self, nodes: list[Obj]) -> list[Obj]:
        """A device's CDI device nodes as the launcher mounts them (`base`, `path` inside
        it, `target` in the container): the node's own devices (kubelet/hostpaths.py);
        nodes the node does not have are left out, as missing mount sources are."""
        out = []
        for node in nodes:
            found = device_source(self.layout, node.get("hostPath") or node["path"])
            if found is not None:
                out.append({"base": found[0], "path": found[1], "target": node["path"]})
        return out

    def cdi_hooks(self, hooks: list[Obj]) -> list[Obj]:
        """A device's CDI hooks as the launcher runs them (confine/hooks.py): the program
        is a path of the node (`base`, `path` inside it, links resolved there, as a
        container runtime resolves a hook's path on its host), with its arguments (the
        first is its name), environment and timeout exactly as the spec gives them."""
        out = []
        for hook in hooks:
            rel = machine_path_in_node(self.layout, hook["path"])
            if rel is None:
                rel = in_node(self.layout, hook["path"])
            out.append({"hookName": hook.get("hookName", ""), "base": str(self.layout.root),
                        "path": rel, "program": hook["path"],
                        "args": list(hook.get("args") or [hook["path"]]),
                        "env": list(hook.get("env") or []), "timeout": hook.get("timeout")})
        return out

    def sysfs(self, writable: bool) -> Obj | None:
        """The node's own /sys as the container's (a mount for the launcher), or None: the
        container gets this machine's sysfs. Writable for privileged containers, as a
        container runtime mounts /sys for them."""
        rel = node_sysfs(self.layout)
        if rel is None:
            return None
        return Mount(VolumeSource(str(self.layout.root), rel), "/sys", not writable).spec()

    def teardown(self, uid: str) -> None:
        for task in self._refreshers.pop(uid, []):
            task.cancel()
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)

    def close(self) -> None:
        """The kubelet stops: no more token renewals (the files stay for its successor)."""
        for tasks in self._refreshers.values():
            for task in tasks:
                task.cancel()
        self._refreshers.clear()

    async def _refresh(self, pod: Obj, folder: Path, source: Obj, mode: int,
                       fs_group: int | None) -> None:
        """As the kubelet's token manager: a new token when 80% of the old one's life has
        passed (retried every 10 s while the apiserver refuses)."""
        delay = 0.8 * float(source.get("expirationSeconds", 3600))
        while True:
            await asyncio.sleep(delay)
            try:
                token = await self._token(pod, source)
            except VolumeError as err:
                log.warning("token refresh failed", pod=pod["metadata"]["name"],
                            error=str(err))
                delay = 10.0
                continue
            _write(folder, {source.get("path", "token"): (token.encode(), mode)}, fs_group)
            delay = 0.8 * float(source.get("expirationSeconds", 3600))

    def _host_path(self, name: str, source: Obj) -> str:
        """The node's path, relative to the node's folder (checked and made inside it)."""
        path = source.get("path", "")
        kind = source.get("type") or ""
        rel = in_node(self.layout, path)
        found = lookup(self.layout.root, rel)
        mode = found.st_mode if found is not None else 0
        checks = {"Directory": stat.S_ISDIR, "File": stat.S_ISREG, "Socket": stat.S_ISSOCK,
                  "CharDevice": stat.S_ISCHR, "BlockDevice": stat.S_ISBLK}
        if kind in checks and not (found is not None and checks[kind](mode)):
            what = {"Directory": "a directory", "File": "a file", "Socket": "a socket",
                    "CharDevice": "a character device", "BlockDevice": "a block device"}[kind]
            raise VolumeError(f'volume "{name}": hostPath type check failed: {path} is not '
                              f"{what} (on the emulated node: {self.layout.root / rel})")
        if found is None:
            # FileOrCreate; DirectoryOrCreate and no type at all (the container runtime
            # creates a folder).
            try:
                make(self.layout.root, rel, file=kind == "FileOrCreate",
                     mode=0o644 if kind == "FileOrCreate" else 0o755)
            except OSError as err:
                raise VolumeError(f'volume "{name}": hostPath {path}: cannot be made on the '
                                  f"emulated node: {os.strerror(err.errno or 0)}") from err
        return rel

    async def _files(self, pod: Obj, kind: str, source: Obj, host_ip: str,
                     pod_ip: str | None) -> dict[str, tuple[bytes, int]]:
        mode = source.get("defaultMode", 0o644)
        if kind == "projected":
            files: dict[str, tuple[bytes, int]] = {}
            for item in source.get("sources") or []:
                sub_kind = next(iter(item), "")
                files.update(await self._projection(pod, sub_kind, item[sub_kind] or {},
                                                    mode, host_ip, pod_ip))
            return files
        return await self._projection(pod, kind, source, mode, host_ip, pod_ip)

    async def _projection(self, pod: Obj, kind: str, source: Obj, mode: int, host_ip: str,
                          pod_ip: str | None) -> dict[str, tuple[bytes, int]]:
        namespace = pod["metadata"]["namespace"]
        if kind in ("configMap", "secret"):
            name = source.get("name") if kind == "configMap" else \
                source.get("secretName", source.get("name"))
            data = await self._data(kind, namespace, name)
            if data is None:
                if source.get("optional"):
                    return {}
                resource = "configmap" if kind == "configMap" else "secret"
                raise VolumeError(f'{resource} "{name}" not found')
            items = source.get("items")
            if not items:
                return {key: (value, mode) for key, value in data.items()}
            out = {}
            for item in items:
                if item["key"] not in data:
                    if source.get("optional"):
                        continue
                    raise VolumeError(f'configmap references non-existent config key: '
                                      f'{item["key"]}' if kind == "configMap" else
                                      f'references non-existent secret key: {item["key"]}')
                out[item["path"]] = (data[item["key"]], item.get("mode", mode))
            return out
        if kind == "downwardAPI":
            out = {}
            for item in source.get("items") or []:
                try:
                    if "fieldRef" in item:
                        value = _field_file(pod, item["fieldRef"]["fieldPath"], host_ip, pod_ip)
                    else:
                        ref = item.get("resourceFieldRef") or {}
                        container = next(
                            (c for c in (pod.get("spec") or {}).get("containers") or []
                             if c["name"] == ref.get("containerName")), {})
                        value = resource_value(container, ref)
                except EnvError as err:
                    raise VolumeError(str(err)) from err
                out[item["path"]] = (value.encode(), item.get("mode", mode))
            return out
        if kind == "serviceAccountToken":
            token = await self._token(pod, source)
            return {source.get("path", "token"): (token.encode(), mode)}
        raise VolumeError(f"projected volume source {kind} is not supported by the process "
                          "runtime")

    async def _data(self, kind: str, namespace: str, name: str) -> dict[str, bytes] | None:
        resource = "configmaps" if kind == "configMap" else "secrets"
        try:
            obj = await self.client.get("v1", resource, name, namespace)
        except ApiError as err:
            if err.code == 404:
                return None
            raise VolumeError(f"{resource} {name}: {err.message}") from err
        out = {k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}
        if kind == "configMap":
            out.update({k: v.encode() for k, v in (obj.get("data") or {}).items()})
        else:
            out.update({k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()})
        return out

    async def _token(self, pod: Obj, source: Obj) -> str:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        account = spec.get("serviceAccountName") or "default"
        request: Obj = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                        "spec": {"expirationSeconds": source.get("expirationSeconds", 3600),
                                 "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                                    "name": meta["name"], "uid": meta["uid"]}}}
        if source.get("audience"):
            request["spec"]["audiences"] = [source["audience"]]
        try:
            answer = await self.client.create("v1", "serviceaccounts", request,
                                              namespace=meta["namespace"], name=account,
                                              subresource="token")
        except ApiError as err:
            raise VolumeError(f'failed to fetch token: serviceaccounts "{account}" token: '
                              f"{err.message}") from err
        return str((answer.get("status") or {}).get("token", ""))


def _field_file(pod: Obj, path: str, host_ip: str, pod_ip: str | None) -> str:
    meta = pod["metadata"]
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    return field_value(pod, path, host_ip, pod_ip)


def container_mounts(container: Obj, volumes: dict[str, VolumeSource]) -> list[Mount]:
    mounts = []
    for vm in container.get("volumeMounts") or []:
        source = volumes.get(vm["name"])
        if source is None:
            raise VolumeError(f'volumeMount "{vm["name"]}": no volume of that name')
        sub_path = vm.get("subPath") or ""
        if sub_path:
            if sub_path.startswith("/") or ".." in sub_path.split("/"):
                raise VolumeError(f'volumeMount "{vm["name"]}": subPath {sub_path!r} '
                                  "leaves the volume")
            rel = posixpath.join(source.path, sub_path)
            # As upstream: a missing subPath is made (a folder), inside the volume only.
            base = Path(source.base)
            if lookup(base, rel) is None:
                try:
                    make(base, rel, mode=0o755)
                except OSError as err:
                    raise VolumeError(f'volumeMount "{vm["name"]}": subPath {sub_path!r}: '
                                      f"{os.strerror(err.errno or 0)}") from err
            source = VolumeSource(source.base, rel)
        mounts.append(Mount(source, vm["mountPath"], bool(vm.get("readOnly"))))
    return mounts
