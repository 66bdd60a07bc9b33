"""The protocol definitions against the field numbers and names of kubelet-dra.md: bytes
on the wire, full service and method names, and registration strings."""

from __future__ import annotations

import pytest

from draemu.kubeletapi import dra, health
from draemu.kubeletapi import pluginregistration as reg

pytestmark = pytest.mark.unit


def tag(number: int, wire_type: int = 2) -> bytes:
    return bytes([number << 3 | wire_type])


def test_plugin_info_fields_are_numbered_1_to_4():
    info = reg.PluginInfo(type="DRAPlugin", name="n", endpoint="e",
                          supported_versions=["v1.DRAPlugin"])
    assert info.SerializeToString() == (
        tag(1) + b"\x09DRAPlugin" + tag(2) + b"\x01n" + tag(3) + b"\x01e"
        + tag(4) + b"\x0cv1.DRAPlugin")


def test_registration_status_fields():
    status = reg.RegistrationStatus(plugin_registered=True, error="x")
    assert status.SerializeToString() == tag(1, 0) + b"\x01" + tag(2) + b"\x01x"


def test_registration_method_paths():
    assert reg.GET_INFO == "/pluginregistration.Registration/GetInfo"
    assert reg.NOTIFY_REGISTRATION_STATUS == \
        "/pluginregistration.Registration/NotifyRegistrationStatus"


def test_dra_method_paths_and_registration_names():
    assert dra.V1.prepare_path == \
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
    assert dra.V1BETA1.unprepare_path == \
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources"
    assert (dra.V1.registration_name, dra.V1BETA1.registration_name) == (
        "v1.DRAPlugin", "v1beta1.DRAPlugin")


def test_claim_fields_are_namespace_uid_name():
    claim = dra.V1.Claim(namespace="a", uid="b", name="c")
    assert claim.SerializeToString() == tag(1) + b"\x01a" + tag(2) + b"\x01b" + tag(3) + b"\x01c"


def test_v1_device_carries_share_id_as_field_5_with_presence():
    device = dra.V1.Device(request_names=["r"], pool_name="p", device_name="d",
                           cdi_device_ids=["c"], share_id="")
    assert device.SerializeToString() == (
        tag(1) + b"\x01r" + tag(2) + b"\x01p" + tag(3) + b"\x01d" + tag(4) + b"\x01c"
        + tag(5) + b"\x00")
    assert dra.V1.Device().HasField("share_id") is False


def test_v1beta1_device_ignores_field_5():
    wire = dra.V1.Device(pool_name="p", share_id="s").SerializeToString()
    assert dra.V1BETA1.Device.FromString(wire).pool_name == "p"
    assert "share_id" not in dra.V1BETA1.Device.DESCRIPTOR.fields_by_name


def test_prepare_response_is_a_map_keyed_by_claim_uid():
    response = dra.V1.NodePrepareResourcesResponse()
    response.claims["uid"].error = "e"
    # map entry: key (1) and value (2), the value's `error` is field 2
    entry = tag(1) + b"\x03uid" + tag(2) + b"\x03" + tag(2) + b"\x01e"
    assert response.SerializeToString() == tag(1) + bytes([len(entry)]) + entry


def test_unprepare_response_error_is_field_1():
    response = dra.V1.NodeUnprepareResourcesResponse()
    response.claims["u"].error = "e"
    entry = tag(1) + b"\x01u" + tag(2) + b"\x03" + tag(1) + b"\x01e"
    assert response.SerializeToString() == tag(1) + bytes([len(entry)]) + entry


def test_device_health_fields_1_to_5_and_enum_values():
    item = health.V1ALPHA1.DeviceHealth(health=health.UNHEALTHY, last_updated_time=7,
                                        health_check_timeout_seconds=3, message="m")
    item.device.pool_name = "p"
    item.device.device_name = "d"
    device = tag(1) + b"\x01p" + tag(2) + b"\x01d"
    assert item.SerializeToString() == (
        tag(1) + bytes([len(device)]) + device + tag(2, 0) + b"\x02" + tag(3, 0) + b"\x07"
        + tag(4, 0) + b"\x03" + tag(5) + b"\x01m")
    assert (health.UNKNOWN, health.HEALTHY, health.UNHEALTHY) == (0, 1, 2)


def test_health_services_and_method_paths():
    assert health.V1ALPHA1.watch_path == "/v1alpha1.DRAResourceHealth/NodeWatchResources"
    assert health.V1.watch_path == "/v1.DRAResourceHealth/NodeWatchResources"
    assert health.V1.registration_name == "v1.DRAResourceHealth"
