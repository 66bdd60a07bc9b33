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


def _container(name: str, count: str, resources: tuple[str, ...], **extra) -> dict:
    return {"name": name, "resources": {"requests": {r: count for r in resources}}, **extra}


def test_init_containers_reuse_the_requests_of_containers_that_run_after_them():
    # The shape of upstream's e2e spec: an init container asking for two of each, a
    # sidecar, another init container, then the container, one of each.
    resources = ("example.com/a", "example.com/b")
    p = pod("p")
    p["spec"]["initContainers"] = [
        _container("init", "2", resources),
        _container("sidecar", "1", resources, restartPolicy="Always"),
        _container("init-1", "1", resources)]
    p["spec"]["containers"] = [_container("c", "1", resources)]
    mapping = {r: "class" for r in resources}
    claim, served = claim_for_node(p, pod_extended_requests(p), mapping, {})
    assert [(r["name"], r["exactly"]["count"]) for r in claim["spec"]["devices"]["requests"]] \
        == [("container-1-request-0", 1), ("container-1-request-1", 1),
            ("container-3-request-0", 1), ("container-3-request-1", 1)]
    assert {(m.container, m.resource, m.request_name) for m in served} == {
        (c, r, f"container-{i}-request-{j}") for j, r in enumerate(resources)
        for c, i in (("sidecar", 1), ("c", 3), ("init", 1), ("init", 3), ("init-1", 3))}


def test_short_lived_init_containers_share_their_largest_request():
    p = pod("p")
    p["spec"]["initContainers"] = [_container("first", "3", ("example.com/a",)),
                                   _container("second", "5", ("example.com/a",))]
    p["spec"]["containers"] = [_container("c", "1", ("example.com/a",))]
    claim, served = claim_for_node(p, pod_extended_requests(p), {"example.com/a": "k"}, {})
    # Each init container first takes the container's one device, then asks for the rest;
    # the larger of their two requests serves both.
    assert [(r["name"], r["exactly"]["count"]) for r in claim["spec"]["devices"]["requests"]] \
        == [("container-1-request-0", 4), ("container-2-request-0", 1)]
    assert sorted((m.container, m.request_name) for m in served) == [
        ("c", "container-2-request-0"), ("first", "container-1-request-0"),
        ("first", "container-2-request-0"), ("second", "container-1-request-0"),
        ("second", "container-2-request-0")]
