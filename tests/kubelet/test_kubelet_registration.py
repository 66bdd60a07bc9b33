"""Plugin registration between the kubelet's plugin watcher and plugins, over real sockets."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from kubelet_fakes import ClaimsAPI, RecordingDriver

from draemu.drivers.sdk import KubeletPlugin
from draemu.kubelet.dra.plugins import DRAPluginManager
from draemu.kubelet.pluginwatcher import PluginWatcher
from draemu.kubeletapi import dra, rpc
from draemu.kubeletapi import pluginregistration as reg
from draemu.nodelayout import NodeLayout

pytestmark = pytest.mark.unit


@pytest.fixture
def layout(tmp_path):
    node = NodeLayout(tmp_path / "node-1")
    node.create()
    yield node
    node.remove_alias()


@pytest.fixture
async def kubelet_side(layout):
    manager = DRAPluginManager(ClaimsAPI(), "node-1", wipe_delay=3600)
    watcher = PluginWatcher(layout.registry_dir, {reg.DRA_PLUGIN: manager})
    yield manager, watcher
    await manager.stop()


class RawPlugin:
    """A registration server answering whatever PluginInfo a test wants."""

    def __init__(self, info) -> None:
        self.info = info
        self.statuses = []
        self.server = None

    async def start(self, path) -> None:
        async def get_info(_req, _ctx):
            return self.info

        async def notify(req, _ctx):
            self.statuses.append((req.plugin_registered, req.error))
            return reg.RegistrationStatusResponse()

        self.server = grpc.aio.server(handlers=[rpc.registration_handler(get_info, notify)])
        # Bound as the kubelet dials: a path too long for a socket address through its
        # folder's descriptor.
        self.server.add_insecure_port(rpc.dial_target(str(path)))
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop(0)


async def test_sdk_plugin_registers_with_v1_and_is_notified(layout, kubelet_side):
    manager, watcher = kubelet_side
    plugin = KubeletPlugin(RecordingDriver(), driver_name="gpu.example.com", node_name="node-1",
                           client=ClaimsAPI(), registrar_dir=layout.registry_dir,
                           plugin_data_dir=layout.plugin_dir("gpu.example.com"))
    await plugin.start()
    try:
        await watcher.reconcile()
        instance = manager.get("gpu.example.com")
        assert instance is not None
        assert instance.version is dra.V1
        assert instance.endpoint == str(layout.plugin_dir("gpu.example.com") / "dra.sock")
        assert plugin.registration_status.plugin_registered is True
        assert plugin.registration_status.error == ""
    finally:
        await plugin.stop()


async def test_plugin_order_decides_the_version(layout, kubelet_side):
    manager, watcher = kubelet_side
    raw = RawPlugin(reg.PluginInfo(type="DRAPlugin", name="beta.example.com",
                                   endpoint="/nonexistent/dra.sock",
                                   supported_versions=["v1beta1.DRAPlugin", "v1.DRAPlugin"]))
    await raw.start(layout.registry_dir / "beta.example.com-reg.sock")
    try:
        await watcher.reconcile()
        assert manager.get("beta.example.com").version is dra.V1BETA1
        assert raw.statuses == [(True, "")]
    finally:
        await raw.stop()


async def test_plugin_without_a_common_version_is_rejected_with_upstream_message(
        layout, kubelet_side):
    manager, watcher = kubelet_side
    raw = RawPlugin(reg.PluginInfo(type="DRAPlugin", name="old.example.com",
                                   supported_versions=["v1alpha3.NodeService"]))
    await raw.start(layout.registry_dir / "old.example.com-reg.sock")
    try:
        await watcher.reconcile()
        assert manager.get("old.example.com") is None
        ok, error = raw.statuses[0]
        assert ok is False
        assert error.startswith("RegisterPlugin error -- plugin validation failed with err: "
                                "none of services supported by the plugin "
                                "(v1alpha3.NodeService) are supported by the kubelet "
                                "(v1.DRAPlugin, v1beta1.DRAPlugin)")
    finally:
        await raw.stop()


async def test_empty_endpoint_means_the_registration_socket(layout, kubelet_side):
    manager, watcher = kubelet_side
    path = layout.registry_dir / "self.example.com-reg.sock"
    raw = RawPlugin(reg.PluginInfo(type="DRAPlugin", name="self.example.com",
                                   supported_versions=["v1.DRAPlugin"]))
    await raw.start(path)
    try:
        await watcher.reconcile()
        assert manager.get("self.example.com").endpoint == str(path)
    finally:
        await raw.stop()


async def test_unknown_plugin_type_gets_a_negative_notification(layout, kubelet_side):
    _manager, watcher = kubelet_side
    raw = RawPlugin(reg.PluginInfo(type="CSIPlugin", name="csi.example.com",
                                   supported_versions=["1.0.0"]))
    await raw.start(layout.registry_dir / "csi.sock")
    try:
        await watcher.reconcile()
        assert raw.statuses[0][0] is False
        assert "no handler registered for plugin type: CSIPlugin" in raw.statuses[0][1]
    finally:
        await raw.stop()


async def test_removing_the_socket_deregisters_the_plugin(layout, kubelet_side):
    manager, watcher = kubelet_side
    plugin = KubeletPlugin(RecordingDriver(), driver_name="gpu.example.com", node_name="node-1",
                           client=ClaimsAPI(), registrar_dir=layout.registry_dir,
                           plugin_data_dir=layout.plugin_dir("gpu.example.com"))
    await plugin.start()
    await watcher.reconcile()
    assert manager.registered("gpu.example.com")
    await plugin.stop()
    await watcher.reconcile()
    assert not manager.registered("gpu.example.com")


async def test_long_node_roots_get_short_socket_paths(tmp_path):
    node = NodeLayout(tmp_path / ("x" * 120) / "node-with-a-long-name")
    node.create()
    try:
        sock = node.plugin_dir("a-rather-long-driver-name.example.com") / "dra-0123.sock"
        assert len(str(sock)) < 108
        assert node.registry_dir.resolve() == (node.root / "plugins_registry").resolve()
    finally:
        node.remove_alias()


async def test_a_new_socket_is_registered_without_waiting_for_the_periodic_scan(layout):
    manager = DRAPluginManager(ClaimsAPI(), "node-1", wipe_delay=3600)
    watcher = PluginWatcher(layout.registry_dir, {reg.DRA_PLUGIN: manager}, interval=3600)
    await watcher.start()
    plugin = KubeletPlugin(RecordingDriver(), driver_name="gpu.example.com", node_name="node-1",
                           client=ClaimsAPI(), registrar_dir=layout.registry_dir,
                           plugin_data_dir=layout.plugin_dir("gpu.example.com"))
    try:
        await asyncio.sleep(0)  # the watcher's first scan runs before the socket exists
        await plugin.start()
        await asyncio.wait_for(plugin.registered.wait(), 10)
        assert manager.registered("gpu.example.com")
    finally:
        await plugin.stop()
        await watcher.stop()
        await manager.stop()


async def test_rolling_update_keeps_the_new_instance_when_the_old_one_leaves(
        layout, kubelet_side):
    manager, watcher = kubelet_side

    def instance(uid):
        return KubeletPlugin(RecordingDriver(), driver_name="gpu.example.com",
                             node_name="node-1", client=ClaimsAPI(),
                             registrar_dir=layout.registry_dir,
                             plugin_data_dir=layout.plugin_dir("gpu.example.com"),
                             rolling_update_uid=uid)

    old, new = instance("aaa"), instance("bbb")
    await old.start()
    await watcher.reconcile()
    await new.start()
    try:
        await watcher.reconcile()
        assert old.registration_socket.name == "gpu.example.com-aaa-reg.sock"
        assert manager.get("gpu.example.com").endpoint == str(new.dra_socket)
        await old.stop()
        await watcher.reconcile()
        assert manager.get("gpu.example.com").endpoint == str(new.dra_socket)
    finally:
        await new.stop()


async def test_sockets_in_sub_directories_are_found(layout, kubelet_side):
    manager, watcher = kubelet_side
    sub = layout.registry_dir / "vendor"
    sub.mkdir()
    raw = RawPlugin(reg.PluginInfo(type="DRAPlugin", name="sub.example.com",
                                   supported_versions=["v1.DRAPlugin"]))
    await raw.start(sub / "sub.example.com-reg.sock")
    try:
        await watcher.reconcile()
        assert manager.registered("sub.example.com")
    finally:
        await raw.stop()


async def test_a_socket_path_too_long_for_a_socket_address_is_dialled(layout, kubelet_side):
    # A plugin names its socket to fit under /var/lib/kubelet/plugins_registry (upstream's
    # rolling-update name: driver, pod UID); under the node's folder the path is longer
    # than a unix socket address holds.
    _manager, watcher = kubelet_side
    name = "gpu.dra-example-driver.sigs.k8s.io-0b4f2b5e-1d2c-4e5f-8a9b-0c1d2e3f4a5b-reg.sock"
    path = layout.registry_dir / name
    assert len(str(path)) > rpc.UNIX_PATH_MAX
    plugin = RawPlugin(reg.PluginInfo(type="NoSuchPlugin", name="gpu.dra-example-driver",
                                      supported_versions=["v1.DRAPlugin"]))
    await plugin.start(path)
    try:
        await watcher.reconcile()
        assert plugin.statuses == [(False, "RegisterPlugin error -- no handler registered "
                                           f"for plugin type: NoSuchPlugin at socket {path}")]
    finally:
        await plugin.stop()
