"""Conversion v1 ⇄ v1beta2 ⇄ v1beta1 ⇄ v1alpha3 (dra-api.md §8) and per-version defaults
(§5)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resource_generators import claims, slices
from resource_objects import ALPHA3_SLICE, CLAIM, FULL_CLAIM, FULL_SLICE, SLICE, fresh

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.registry.resource import conversion, defaults

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("obj", [FULL_CLAIM, FULL_SLICE], ids=["claim", "slice"])
@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_every_field_survives_a_round_trip(obj: Obj, version: str) -> None:
    kind = obj["kind"]
    served = conversion.from_storage(kind, obj, version)
    assert served["apiVersion"] == f"resource.k8s.io/{version}"
    assert conversion.to_storage(kind, served, version) == obj


def test_v1beta2_has_the_v1_shape() -> None:
    served = conversion.from_storage("ResourceClaim", FULL_CLAIM, "v1beta2")
    assert {k: v for k, v in served.items() if k != "apiVersion"} == {
        k: v for k, v in FULL_CLAIM.items() if k != "apiVersion"}


def test_v1beta1_requests_are_flat_and_devices_basic() -> None:
    claim = conversion.from_storage("ResourceClaim", CLAIM, "v1beta1")
    assert claim["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
         "count": 1},
        {"name": "nic", "deviceClassName": "", "firstAvailable":
         CLAIM["spec"]["devices"]["requests"][1]["firstAvailable"]}]
    slice_ = conversion.from_storage("ResourceSlice", SLICE, "v1beta1")
    assert slice_["spec"]["devices"] == [{"name": "gpu-0", "basic": {
        "attributes": {"model": {"string": "A100"}}, "capacity": {"memory": {"value": "40Gi"}}}}]


def test_v1beta1_request_with_class_and_first_available_keeps_both() -> None:
    """So that validation reports the upstream "multiple fields are set" error."""
    request = {"name": "r", "deviceClassName": "c", "firstAvailable": [{"name": "s"}]}
    stored = conversion.to_storage("ResourceClaim", {"spec": {"devices": {
        "requests": [request]}}}, "v1beta1")
    assert stored["spec"]["devices"]["requests"] == [
        {"name": "r", "firstAvailable": [{"name": "s"}], "exactly": {"deviceClassName": "c"}}]


def test_v1beta1_zero_node_fields_mean_unset() -> None:
    served = {"spec": {"driver": "d", "nodeName": "", "allNodes": False,
                       "pool": {"name": "p", "resourceSliceCount": 1}}}
    stored = conversion.to_storage("ResourceSlice", served, "v1beta1")
    assert "nodeName" not in stored["spec"] and "allNodes" not in stored["spec"]


def test_v1alpha3_131_slice_converts_to_v1_and_back() -> None:
    stored = conversion.to_storage("ResourceSlice", ALPHA3_SLICE, "v1alpha3")
    assert stored["spec"]["devices"] == SLICE["spec"]["devices"]
    assert "allNodes" not in stored["spec"]
    assert conversion.from_storage("ResourceSlice", stored, "v1alpha3") == {
        **ALPHA3_SLICE, "spec": {k: v for k, v in ALPHA3_SLICE["spec"].items()
                                 if k != "allNodes"}}


def test_v1alpha3_131_claim_wraps_requests_and_drops_false_admin_access() -> None:
    served = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaim",
              "spec": {"devices": {"requests": [
                  {"name": "gpu", "deviceClassName": "gpu.example.com", "adminAccess": False,
                   "allocationMode": "ExactCount", "count": 1}]}}}
    stored = conversion.to_storage("ResourceClaim", served, "v1alpha3")
    assert stored["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]
    assert conversion.from_storage("ResourceClaim", stored, "v1alpha3")["spec"] == {
        "devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com",
                                  "allocationMode": "ExactCount", "count": 1}]}}


def test_v1alpha3_keeps_only_what_131_could_carry() -> None:
    claim = fresh(FULL_CLAIM)
    claim["spec"]["devices"]["requests"].pop(1)
    claim["spec"]["devices"]["config"] = []
    served = conversion.from_storage("ResourceClaim", claim, "v1alpha3")
    assert served["spec"]["devices"]["requests"] == [{
        "name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
        "count": 2, "adminAccess": False,
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}]
    assert served["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]
    assert "devices" not in served["status"]


def test_v1alpha3_cannot_show_a_prioritized_list() -> None:
    with pytest.raises(StatusError) as e:
        conversion.from_storage("ResourceClaim", CLAIM, "v1alpha3")
    assert e.value.code == 500 and "firstAvailable" in e.value.message


@pytest.mark.parametrize("kind,obj,path", [
    ("ResourceClaim", {"spec": {"controller": "example.com", "devices": {}}}, "spec.controller"),
    ("DeviceClass", {"spec": {"suitableNodes": {"nodeSelectorTerms": []}}},
     "spec.suitableNodes"),
    ("ResourceClaim", {"spec": {}, "status": {"deallocationRequested": True}},
     "status.deallocationRequested"),
])
def test_v1alpha3_classic_dra_fields_are_rejected(kind: str, obj: Obj, path: str) -> None:
    with pytest.raises(StatusError) as e:
        conversion.to_storage(kind, obj, "v1alpha3")
    assert e.value.code == 422
    assert e.value.details["causes"][0]["field"] == path


# Property-based round trips of generated claims and slices -----------------------------

@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(st.one_of(claims, slices), st.sampled_from(["v1beta2", "v1beta1"]))
def test_generated_objects_survive_round_trips(obj: Obj, version: str) -> None:
    served = conversion.from_storage(obj["kind"], obj, version)
    assert conversion.to_storage(obj["kind"], copy.deepcopy(served), version) == obj


# Defaults ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["v1", "v1beta2"])
def test_exact_request_defaults_to_one_device(version: str) -> None:
    o = {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}},
                                           {"name": "s", "firstAvailable": [
                                               {"name": "a", "deviceClassName": "c",
                                                "count": 0}]}]}}}
    defaults.default("ResourceClaim", o, version)
    requests = o["spec"]["devices"]["requests"]
    assert requests[0]["exactly"] == {"deviceClassName": "c", "allocationMode": "ExactCount",
                                      "count": 1}
    assert requests[1]["firstAvailable"][0]["count"] == 1


def test_all_mode_keeps_count_zero() -> None:
    o = {"spec": {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": "c", "allocationMode": "All"}}]}}}
    defaults.default("ResourceClaim", o, "v1")
    assert "count" not in o["spec"]["devices"]["requests"][0]["exactly"]


def test_v1beta1_request_without_class_gets_no_defaults() -> None:
    o = {"spec": {"spec": {"devices": {"requests": [
        {"name": "r", "deviceClassName": "", "firstAvailable": [{"name": "a",
                                                                 "deviceClassName": "c"}]}]}}}}
    defaults.default("ResourceClaimTemplate", o, "v1beta1")
    request = o["spec"]["spec"]["devices"]["requests"][0]
    assert "allocationMode" not in request
    assert request["firstAvailable"][0]["allocationMode"] == "ExactCount"


def test_toleration_operator_defaults_to_equal() -> None:
    o = {"spec": {"devices": {"requests": [{"name": "r", "exactly": {
        "deviceClassName": "c", "tolerations": [{"key": "k"}]}}]}}}
    defaults.default("ResourceClaim", o, "v1")
    assert o["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] == [
        {"key": "k", "operator": "Equal"}]


def test_taint_time_added_defaults_to_now_in_seconds() -> None:
    o = {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}
    defaults.default("DeviceTaintRule", o, "v1")
    assert o["spec"]["taint"]["timeAdded"].endswith("Z")
    assert "." not in o["spec"]["taint"]["timeAdded"]


def test_pool_status_request_limit_defaults_to_100() -> None:
    o = {"spec": {"driver": "d"}}
    defaults.default("ResourcePoolStatusRequest", o, "v1alpha3")
    assert o["spec"]["limit"] == 100
