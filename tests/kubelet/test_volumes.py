"""The process runtime's pod volumes, with a stub API client: projected files and the
token refresh."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from draemu.kubelet.volumes import VolumeError, VolumeManager
from draemu.nodelayout import NodeLayout

pytestmark = pytest.mark.unit


class StubClient:
    def __init__(self) -> None:
        self.tokens = 0
        self.requests: list[dict[str, Any]] = []

    async def create(self, _version: str, _resource: str, obj: dict[str, Any],
                     **_kw: Any) -> dict[str, Any]:
        self.tokens += 1
        self.requests.append(obj)
        return {"status": {"token": f"token-{self.tokens}"}}


def pod(expiration: float) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"a": "b"}},
            "spec": {"nodeName": "n1", "serviceAccountName": "driver", "volumes": [{
                "name": "api", "projected": {"defaultMode": 0o600, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": expiration,
                                             "path": "token", "audience": "vault"}},
                    {"downwardAPI": {"items": [
                        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]}}


async def test_a_projected_volume_gets_a_bound_token_and_the_downward_api(tmp_path: Path):
    client = StubClient()
    volumes = VolumeManager(client, NodeLayout(tmp_path))  # type: ignore[arg-type]
    folder = (await volumes.setup(pod(3600), "10.0.0.1", "10.244.0.2"))["api"].location
    assert (folder / "token").read_text() == "token-1"
    assert (folder / "token").stat().st_mode & 0o777 == 0o600
    assert (folder / "namespace").read_text() == "ns"
    assert (folder / "labels").read_text() == 'a="b"'
    assert client.requests[0]["spec"] == {
        "expirationSeconds": 3600, "audiences": ["vault"],
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u1"}}
    volumes.teardown("u1")
    assert not folder.exists()


async def test_the_token_is_renewed_before_it_expires(tmp_path: Path):
    client = StubClient()
    volumes = VolumeManager(client, NodeLayout(tmp_path))  # type: ignore[arg-type]
    folder = (await volumes.setup(pod(0.1), "10.0.0.1", None))["api"].location
    await asyncio.sleep(0.35)
    assert client.tokens >= 3
    assert (folder / "token").read_text() == f"token-{client.tokens}"
    volumes.teardown("u1")
    renewed = client.tokens
    await asyncio.sleep(0.2)
    assert client.tokens == renewed  # no renewal after the pod is gone


async def test_an_item_path_may_not_leave_the_volume(tmp_path: Path):
    volumes = VolumeManager(StubClient(), NodeLayout(tmp_path))  # type: ignore[arg-type]
    bad = pod(3600)
    bad["spec"]["volumes"][0]["projected"]["sources"][1]["downwardAPI"]["items"][0][
        "path"] = "../../escape"
    with pytest.raises(VolumeError, match="volume item path '../../escape' leaves the volume"):
        await volumes.setup(bad, "10.0.0.1", None)


@pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")
def test_cdi_device_nodes_are_the_nodes_own_devices_then_this_machines(tmp_path: Path):
    """A CDI device node is the node's own file where the node has one (a mock driver
    root's dev/nvidia0), else this machine's /dev; what is no device is left out."""
    layout = NodeLayout(tmp_path / "node")
    layout.create()
    dev = layout.root / "host" / "var/lib/mock/driver/dev"
    dev.mkdir(parents=True)
    os.mknod(dev / "gpu0", 0o666 | stat.S_IFCHR, os.makedev(195, 0))
    (dev / "plain").write_text("not a device")
    (layout.root / "host" / "dev").mkdir()
    os.mknod(layout.root / "host" / "dev" / "null", 0o666 | stat.S_IFCHR, os.makedev(195, 1))
    manager = VolumeManager(StubClient(), layout)  # type: ignore[arg-type]
    got = manager.cdi_devices([
        {"path": "/dev/gpu0", "hostPath": "/var/lib/mock/driver/dev/gpu0"},
        {"path": "/dev/null"},  # the node has its own
        {"path": "/dev/zero"},  # the node has none: this machine's
        {"path": "/dev/plain", "hostPath": "/var/lib/mock/driver/dev/plain"},
        {"path": "/dev/nvidia9"}])
    assert got == [
        {"base": str(layout.root), "path": "host/var/lib/mock/driver/dev/gpu0",
         "target": "/dev/gpu0"},
        {"base": str(layout.root), "path": "host/dev/null", "target": "/dev/null"},
        {"base": "/dev", "path": "zero", "target": "/dev/zero"}]


def test_a_cdi_device_link_cannot_lead_out_of_the_node(tmp_path: Path):
    layout = NodeLayout(tmp_path / "node")
    layout.create()
    (layout.root / "host" / "dev").mkdir(parents=True)
    (layout.root / "host" / "dev" / "escape").symlink_to("/dev/zero")
    manager = VolumeManager(StubClient(), layout)  # type: ignore[arg-type]
    # The link resolves inside the node's folder, where /dev/zero does not exist.
    assert manager.cdi_devices([{"path": "/dev/x", "hostPath": "/dev/escape"}]) == []


def test_a_nodes_own_sys_folder_is_its_containers_sys(tmp_path: Path):
    layout = NodeLayout(tmp_path / "node")
    layout.create()
    manager = VolumeManager(StubClient(), layout)  # type: ignore[arg-type]
    assert manager.sysfs(writable=False) is None  # this machine's sysfs
    (layout.root / "host" / "fake-sys" / "bus" / "pci").mkdir(parents=True)
    (layout.root / "host" / "sys").symlink_to("fake-sys")  # resolved inside the node
    assert manager.sysfs(writable=False) == {
        "base": str(layout.root), "path": "host/sys", "target": "/sys", "readOnly": True}
    assert manager.sysfs(writable=True)["readOnly"] is False  # privileged


def test_a_cdi_hooks_program_is_the_nodes_with_its_arguments_as_given(tmp_path: Path):
    """A hook's path is a path of the node (the kubelet's folders are the node's, others
    its host folder); arguments (the first is the program's name), environment and
    timeout go to the launcher unchanged."""
    layout = NodeLayout(tmp_path / "node")
    layout.create()
    manager = VolumeManager(StubClient(), layout)  # type: ignore[arg-type]
    got = manager.cdi_hooks([
        {"hookName": "createContainer", "path": "/var/lib/kubelet/plugins/gpu/hook",
         "args": ["hook", "update-ldcache", "--folder", "/usr/lib64"],
         "env": ["NVIDIA_CTK_DEBUG=false"]},
        {"hookName": "createContainer", "path": "/usr/bin/nvidia-ctk", "timeout": 5}])
    assert got == [
        {"hookName": "createContainer", "base": str(layout.root), "path": "plugins/gpu/hook",
         "program": "/var/lib/kubelet/plugins/gpu/hook",
         "args": ["hook", "update-ldcache", "--folder", "/usr/lib64"],
         "env": ["NVIDIA_CTK_DEBUG=false"], "timeout": None},
        {"hookName": "createContainer", "base": str(layout.root),
         "path": "host/usr/bin/nvidia-ctk", "program": "/usr/bin/nvidia-ctk",
         "args": ["/usr/bin/nvidia-ctk"], "env": [], "timeout": 5}]
