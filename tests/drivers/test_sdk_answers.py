"""What the SDK's DRA service answers a kubelet, called over real unix sockets."""

from __future__ import annotations

import grpc
import pytest
from kubelet_fakes import ClaimsAPI, RecordingDriver, claim

from draemu.drivers.sdk import KubeletPlugin
from draemu.kubeletapi import dra, rpc
from draemu.kubeletapi import pluginregistration as reg

pytestmark = pytest.mark.unit


@pytest.fixture
async def plugin(tmp_path):
    api = ClaimsAPI([claim("a", "uid-a"), claim("b", "uid-b", devices=("gpu-1", "gpu-2"))])
    api.claims[("default", "a")]["status"]["allocation"]["devices"]["results"][0].update(
        request="gpu/small", shareID="share-7")
    driver = RecordingDriver()
    p = KubeletPlugin(driver, driver_name="gpu.example.com", node_name="node-1", client=api,
                      registrar_dir=tmp_path / "reg", plugin_data_dir=tmp_path / "gpu")
    await p.start()
    yield p, driver
    await p.stop()


def _claim(version, name, uid):
    return version.Claim(namespace="default", name=name, uid=uid)


async def call_prepare(p, version, *claims):
    async with grpc.aio.insecure_channel(rpc.unix_target(str(p.dra_socket))) as ch:
        client = rpc.DRAClient(ch, version)
        return await client.node_prepare_resources(
            version.NodePrepareResourcesRequest(claims=list(claims)), timeout=5)


async def test_get_info_advertises_driver_endpoint_and_services(plugin):
    p, _driver = plugin
    async with grpc.aio.insecure_channel(rpc.unix_target(str(p.registration_socket))) as ch:
        info = await rpc.RegistrationClient(ch).get_info(reg.InfoRequest(), timeout=1)
    assert info.type == "DRAPlugin"
    assert info.name == "gpu.example.com"
    assert info.endpoint == str(p.dra_socket)
    assert list(info.supported_versions)[:2] == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    assert p.registration_socket.name == "gpu.example.com-reg.sock"


async def test_v1_prepare_returns_devices_with_share_id_and_main_request_names(plugin):
    p, _driver = plugin
    resp = await call_prepare(p, dra.V1, _claim(dra.V1, "a", "uid-a"))
    device = resp.claims["uid-a"].devices[0]
    assert (device.pool_name, device.device_name) == ("node-1", "gpu-0")
    assert list(device.request_names) == ["gpu"]
    assert device.HasField("share_id") and device.share_id == "share-7"
    assert list(device.cdi_device_ids) == ["k8s.gpu.example.com/gpu=uid-a-gpu-0"]


async def test_v1beta1_prepare_answers_without_share_id(plugin):
    p, _driver = plugin
    resp = await call_prepare(p, dra.V1BETA1, _claim(dra.V1BETA1, "b", "uid-b"))
    assert [d.device_name for d in resp.claims["uid-b"].devices] == ["gpu-1", "gpu-2"]
    assert resp.claims["uid-b"].error == ""


async def test_replaced_claim_is_an_error_for_that_claim_only(plugin):
    p, driver = plugin
    resp = await call_prepare(p, dra.V1, _claim(dra.V1, "a", "old-uid"),
                              _claim(dra.V1, "b", "uid-b"))
    assert "got replaced" in resp.claims["old-uid"].error
    assert resp.claims["uid-b"].error == ""
    assert driver.prepared == [["uid-b"]]


async def test_missing_claim_is_reported_not_raised(plugin):
    p, _driver = plugin
    resp = await call_prepare(p, dra.V1, _claim(dra.V1, "gone", "uid-x"))
    assert "not found" in resp.claims["uid-x"].error


async def test_driver_error_is_returned_per_claim(plugin):
    p, driver = plugin
    driver.fail_with = "no such luck"
    resp = await call_prepare(p, dra.V1, _claim(dra.V1, "a", "uid-a"))
    assert resp.claims["uid-a"].error == "no such luck"


async def test_unprepare_answers_every_claim(plugin):
    p, driver = plugin
    async with grpc.aio.insecure_channel(rpc.unix_target(str(p.dra_socket))) as ch:
        client = rpc.DRAClient(ch, dra.V1)
        resp = await client.node_unprepare_resources(dra.V1.NodeUnprepareResourcesRequest(
            claims=[_claim(dra.V1, "a", "uid-a"), _claim(dra.V1, "gone", "uid-x")]), timeout=5)
    assert set(resp.claims) == {"uid-a", "uid-x"}
    assert driver.unprepared == [["uid-a", "uid-x"]]


async def test_rejection_by_kubelet_is_recorded_and_answered_with_an_error(plugin):
    p, _driver = plugin
    async with grpc.aio.insecure_channel(rpc.unix_target(str(p.registration_socket))) as ch:
        with pytest.raises(grpc.aio.AioRpcError):
            await rpc.RegistrationClient(ch).notify_registration_status(
                reg.RegistrationStatus(plugin_registered=False, error="nope"), timeout=1)
    assert p.registration_status.error == "nope"
    assert not p.registered.is_set()


async def test_health_stream_sends_the_complete_list_on_change(plugin):
    from draemu.kubeletapi import health

    p, _driver = plugin
    await p.health.set("node-1", "gpu-0", True)
    async with grpc.aio.insecure_channel(rpc.unix_target(str(p.dra_socket))) as ch:
        stream = rpc.HealthClient(ch, health.V1ALPHA1).node_watch_resources(
            health.V1ALPHA1.NodeWatchResourcesRequest())
        first = await stream.read()
        assert [(d.device.device_name, d.health) for d in first.devices] == [
            ("gpu-0", health.HEALTHY)]
        await p.health.set("node-1", "gpu-1", False, message="ECC errors")
        second = await stream.read()
        assert sorted((d.device.device_name, d.health, d.message) for d in second.devices) == [
            ("gpu-0", health.HEALTHY, ""), ("gpu-1", health.UNHEALTHY, "ECC errors")]
        stream.cancel()
