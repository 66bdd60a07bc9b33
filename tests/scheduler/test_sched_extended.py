"""Extended resources backed by DeviceClasses: naming, class mapping, the per-node claim."""

from __future__ import annotations

import pytest
from sched_helpers import pod

from draemu.scheduler.dra.extendedresources import (
    claim_for_node,
    class_mapping,
    is_extended,
    pod_extended_requests,
)

pytestmark = pytest.mark.unit


def device_class(name: str, extended: str | None = None, created: str = "2026-01-01T00:00:00Z"):
    spec = {"extendedResourceName": extended} if extended else {}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def test_extended_resource_names():
    assert is_extended("example.com/gpu")
    assert is_extended("deviceclass.resource.kubernetes.io/gpu")
    assert not is_extended("cpu")
    assert not is_extended("hugepages-2Mi")
    assert not is_extended("kubernetes.io/something")


def test_every_class_offers_its_implicit_name():
    assert class_mapping([device_class("gpu")]) == {
        "deviceclass.resource.kubernetes.io/gpu": "gpu"}


def test_newest_class_wins_an_explicit_name():
    mapping = class_mapping([
        device_class("old", "example.com/gpu", "2026-01-01T00:00:00Z"),
        device_class("new", "example.com/gpu", "2026-02-01T00:00:00Z")])
    assert mapping["example.com/gpu"] == "new"


def test_equal_age_goes_to_the_smaller_class_name():
    mapping = class_mapping([device_class("b", "example.com/gpu"),
                             device_class("a", "example.com/gpu")])
    assert mapping["example.com/gpu"] == "a"


def test_requests_are_named_by_container_and_sorted_resource_index():
    p = pod("p", extra={"example.com/gpu": "2", "cpu": "1", "example.com/b": "1"})
    p["spec"]["initContainers"] = [{"name": "init", "resources": {
        "requests": {"example.com/gpu": "1"}}}]
    names = [(r.request_name, r.container, r.resource, r.count)
             for r in pod_extended_requests(p)]
    # containers: init (index 0), c (index 1) whose sorted names are cpu, b, gpu.
    assert names == [("container-0-request-0", "init", "example.com/gpu", 1),
                     ("container-1-request-1", "c", "example.com/b", 1),
                     ("container-1-request-2", "c", "example.com/gpu", 2)]


def test_node_with_a_device_plugin_keeps_its_resource():
    p = pod("p", extra={"example.com/gpu": "1"})
    requests = pod_extended_requests(p)
    mapping = {"example.com/gpu": "gpu-class"}
    claim, served = claim_for_node(p, requests, mapping, {"example.com/gpu": 4})
    assert claim is None and served == []


def test_claim_for_a_node_without_the_resource():
    p = pod("p", extra={"example.com/gpu": "2"})
    claim, served = claim_for_node(p, pod_extended_requests(p),
                                   {"example.com/gpu": "gpu-class"}, {})
    assert [r.resource for r in served] == ["example.com/gpu"]
    assert claim["metadata"]["generateName"] == "p-extended-resources-"
    assert claim["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"}
    assert claim["metadata"]["ownerReferences"][0]["controller"] is True
    assert claim["spec"]["devices"]["requests"] == [{
        "name": "container-0-request-0",
        "exactly": {"deviceClassName": "gpu-class", "allocationMode": "ExactCount",
                    "count": 2}}]
