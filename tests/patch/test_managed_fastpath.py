"""The fast managedFields bookkeeping gives, byte for byte, what the straightforward one
(`managed_reference`) gives: same entries, order, times and FieldsV1 key order."""

from __future__ import annotations

import copy
import json
from typing import Any

import managed_reference as reference
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draemu.apiserver.wire.patch import fieldpath, update_managed_fields
from draemu.apiserver.wire.patch.managed import schema_of

pytestmark = [pytest.mark.slow, pytest.mark.unit]

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None)
HISTORIES = settings(SETTINGS, max_examples=150)
TIMES = ["2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"]
MANAGERS = [f"m{i}" for i in range(13)]

names = st.sampled_from(["a", "b", "c"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.floats(0.5, 0.5),
                    st.sampled_from(["x", "é", 'q"uote']))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=3)), max_leaves=6)


def optional(**fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


metadata = st.fixed_dictionaries(
    {"name": st.just("o"), "namespace": st.just("default")},
    optional={"labels": st.dictionaries(names, st.sampled_from(["1", "2"]), max_size=2),
              "annotations": st.dictionaries(names, st.just("v"), max_size=2),
              "finalizers": st.lists(st.sampled_from(["f1", "f2", 3]), max_size=2),
              "ownerReferences": st.lists(st.fixed_dictionaries(
                  {"uid": names, "name": names, "kind": st.just("Pod")}), max_size=2),
              "resourceVersion": st.sampled_from(["1", "2"]), "generation": st.integers(1, 2),
              "uid": st.just("u"), "generateName": st.just("o-")})
container = st.fixed_dictionaries({"name": st.sampled_from(["c", "d"])}, optional={
    "image": st.sampled_from(["i1", "i2"]),
    "ports": st.lists(st.fixed_dictionaries({"containerPort": st.integers(80, 81)}, optional={
        "protocol": st.sampled_from(["TCP", "UDP"]), "name": names}), max_size=3),
    "env": st.lists(st.fixed_dictionaries({"name": names}, optional={"value": names}),
                    max_size=2),
    "resources": optional(claims=st.lists(st.fixed_dictionaries({"name": names}), max_size=2),
                          limits=st.dictionaries(st.sampled_from(["cpu", "memory"]), names)),
    "args": st.lists(names, max_size=2)})
pod_spec = st.fixed_dictionaries({"containers": st.lists(container, max_size=2)}, optional={
    "nodeName": names, "securityContext": st.just({}),
    "tolerations": st.lists(st.fixed_dictionaries({"key": names}), max_size=2),
    "resourceClaims": st.lists(st.fixed_dictionaries({"name": names}, optional={
        "resourceClaimTemplateName": names}), max_size=2),
    "unknownField": json_values})
pod_status = optional(
    phase=st.sampled_from(["Pending", "Running"]),
    conditions=st.lists(st.fixed_dictionaries({"type": st.sampled_from(["Ready", "PodScheduled"])},
                                              optional={"status": st.sampled_from(["True"]),
                                                        "lastProbeTime": st.none()}), max_size=2),
    resourceClaimStatuses=st.lists(st.fixed_dictionaries({"name": names}, optional={
        "resourceClaimName": names}), max_size=2))
claim_spec = optional(devices=optional(requests=st.lists(st.fixed_dictionaries(
    {"name": names}, optional={"exactly": optional(deviceClassName=names)}), max_size=2)))
claim_status = optional(
    allocation=optional(devices=optional(results=st.lists(st.fixed_dictionaries(
        {"request": names, "device": names}), max_size=2)), nodeSelector=json_values),
    reservedFor=st.lists(st.fixed_dictionaries({"uid": names}, optional={
        "resource": st.just("pods"), "name": names}), max_size=2),
    devices=st.lists(st.fixed_dictionaries({"driver": names, "pool": names, "device": names},
                                           optional={"conditions": json_values}), max_size=2))
objects = st.one_of(
    st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Pod"),
                           "metadata": metadata}, optional={"spec": pod_spec,
                                                            "status": pod_status}),
    st.fixed_dictionaries({"apiVersion": st.just("resource.k8s.io/v1"),
                           "kind": st.just("ResourceClaim"), "metadata": metadata},
                          optional={"spec": claim_spec, "status": claim_status}),
    st.fixed_dictionaries({"apiVersion": st.just("example.com/v1"), "kind": st.just("Widget"),
                           "metadata": metadata}, optional={"spec": json_values}))

elements = st.sampled_from(["f:metadata", "f:labels", "f:a", "f:b", "f:spec", "f:containers",
                            'k:{"name":"c"}', 'k:{"name":"d"}', "f:image", "f:status",
                            "f:conditions", 'k:{"type":"Ready"}', "f:finalizers", 'v:"f1"',
                            "v:3", "i:0", "f:nodeName", "zz", "f:unknownField"])
fields_v1 = st.recursive(st.one_of(st.just({}), st.sampled_from([None, 1, "x", [], {"z": 1}])),
                         lambda inner: st.dictionaries(st.one_of(elements, st.just(".")),
                                                       inner, max_size=4), max_leaves=10)
entry = st.fixed_dictionaries(
    {"manager": st.sampled_from(MANAGERS), "operation": st.sampled_from(["Update", "Apply"]),
     "apiVersion": st.sampled_from(["v1", "v2"]), "fieldsType": st.just("FieldsV1"),
     "fieldsV1": fields_v1},
    optional={"time": st.sampled_from(TIMES), "subresource": st.sampled_from(["status"])})
paths = st.lists(elements, max_size=4).map(tuple)
# What a write's body carries in metadata.managedFields: the stored entries (most
# writes), nothing, the `[{}]` that wipes them, or entries of its own.
requested = st.one_of(st.just("stored"), st.just("none"), st.just([{}]),
                      st.lists(entry, max_size=3))
write = st.tuples(objects, st.sampled_from(MANAGERS), st.sampled_from(["v1", "v2"]),
                  st.sampled_from(TIMES), st.sampled_from(["", "status"]), requested)


def dumped(value: Any) -> str:
    return json.dumps(value)  # key order kept: the bytes a client would see


def both(old: dict[str, Any] | None, new: dict[str, Any], manager: str, api_version: str,
         time: str, subresource: str) -> tuple[dict[str, Any], dict[str, Any]]:
    fast = update_managed_fields(copy.deepcopy(old), copy.deepcopy(new), manager, "Update",
                                 api_version, time, subresource=subresource)
    slow = reference.update_managed_fields(copy.deepcopy(old), copy.deepcopy(new), manager,
                                           "Update", api_version, time,
                                           subresource=subresource, schema=schema_of(new))
    return fast, slow


@HISTORIES
@given(st.lists(write, min_size=1, max_size=8))
def test_a_history_of_writes_records_what_the_reference_records(writes):
    live = None
    for obj, manager, api_version, time, subresource, carried in writes:
        new = copy.deepcopy(obj)
        if live is not None:
            new["apiVersion"], new["kind"] = live["apiVersion"], live["kind"]
        stored = ((live or {}).get("metadata") or {}).get("managedFields")
        if carried == "stored" and stored is not None:
            new["metadata"]["managedFields"] = copy.deepcopy(stored)
        elif isinstance(carried, list):
            new["metadata"]["managedFields"] = carried
        fast, slow = both(live, new, manager, api_version, time, subresource)
        assert dumped(fast) == dumped(slow)
        live = slow


@SETTINGS
@given(objects, st.sampled_from(["", "status"]))
def test_a_create_records_what_the_reference_records(obj, subresource):
    fast, slow = both(None, obj, "creator", obj["apiVersion"], TIMES[0], subresource)
    assert dumped(fast) == dumped(slow)


def test_a_scheduled_pod_records_what_the_reference_records():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "pause",
                                    "resources": {"claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                    "securityContext": {}, "restartPolicy": "Always"}}
    created, slow = both(None, pod, "bench", "v1", TIMES[0], "")
    assert dumped(created) == dumped(slow)
    patched = copy.deepcopy(created)
    patched["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "c"}]}
    patched, slow = both(created, patched, "controller", "v1", TIMES[1], "status")
    assert dumped(patched) == dumped(slow)
    bound = copy.deepcopy(patched)
    bound["spec"]["nodeName"] = "n"
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                      "lastProbeTime": None}]
    bound, slow = both(patched, bound, "scheduler", "v1", TIMES[2], "binding")
    assert dumped(bound) == dumped(slow)
    assert [e["manager"] for e in bound["metadata"]["managedFields"]] == [
        "bench", "controller", "scheduler"]


def test_more_than_ten_update_managers_fold_as_the_reference_folds():
    live = None
    for i, manager in enumerate(MANAGERS):
        new = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "managedFields": copy.deepcopy(
                   ((live or {}).get("metadata") or {}).get("managedFields") or [])},
               "data": {**((live or {}).get("data") or {}), manager: "x"}}
        fast, slow = both(live, new, manager, ["v1", "v2"][i % 2], TIMES[i % 3], "")
        assert dumped(fast) == dumped(slow)
        live = slow
    assert any(e["manager"] == "ancient-changes" for e in live["metadata"]["managedFields"])


@SETTINGS
@given(st.sets(paths, max_size=12))
def test_fields_v1_of_a_field_set_is_the_reference_encoding(members):
    assert dumped(fieldpath.to_fields_v1(members)) == dumped(reference.to_fields_v1(members))


@SETTINGS
@given(fields_v1, st.lists(paths, max_size=3))
def test_questions_asked_of_a_stored_fields_v1_match_its_decoded_set(fields, probes):
    decoded = reference.from_fields_v1(fields)
    assert fieldpath.has_members(fields) == bool(decoded)
    owned = {p for p in probes if p}  # a write never owns the root
    assert fieldpath.shares_member(fields, reference.to_fields_v1(owned)) == bool(
        decoded & owned)
    assert fieldpath.owns_any_under(fields, probes) == any(
        reference.under(p, set(probes)) for p in decoded)
