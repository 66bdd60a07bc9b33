"""managedFields bookkeeping of ordinary writes (create, update, patch)."""

from __future__ import annotations

import copy

import pytest

from draemu.apiserver.wire.patch import (
    manager_from_user_agent,
    server_side_apply,
    update_managed_fields,
)

pytestmark = pytest.mark.unit

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def configmap(**data):
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "c", "namespace": "default", "uid": "u",
                        "resourceVersion": "5", "creationTimestamp": T0}}
    if data:
        obj["data"] = dict(data)
    return obj


def fields(obj, manager):
    return next(e["fieldsV1"] for e in obj["metadata"]["managedFields"]
                if e["manager"] == manager)


def test_create_records_every_set_field_for_the_manager():
    obj = update_managed_fields(None, configmap(k="v"), "kubectl-create", "Update", "v1", T0)
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}]


def test_system_metadata_is_never_owned():
    obj = update_managed_fields(None, configmap(), "m", "Update", "v1", T0)
    assert "managedFields" not in obj["metadata"]  # nothing but bookkeeping was set


def test_a_changed_field_moves_to_the_updating_manager():
    old = update_managed_fields(None, configmap(a="1", b="2"), "creator", "Update", "v1", T0)
    new = copy.deepcopy(old)
    new["data"]["b"] = "changed"
    new = update_managed_fields(old, new, "editor", "Update", "v1", T1)
    assert fields(new, "creator") == {"f:data": {".": {}, "f:a": {}}}
    assert fields(new, "editor") == {"f:data": {"f:b": {}}}


def test_a_removed_field_leaves_every_manager():
    old = update_managed_fields(None, configmap(a="1", b="2"), "creator", "Update", "v1", T0)
    new = copy.deepcopy(old)
    del new["data"]["b"]
    new = update_managed_fields(old, new, "editor", "Update", "v1", T1)
    assert [e["manager"] for e in new["metadata"]["managedFields"]] == ["creator"]
    assert fields(new, "creator") == {"f:data": {".": {}, "f:a": {}}}


def test_a_write_that_changes_nothing_keeps_the_entries_and_their_times():
    old = update_managed_fields(None, configmap(a="1"), "creator", "Update", "v1", T0)
    new = update_managed_fields(old, copy.deepcopy(old), "other", "Update", "v1", T1)
    assert new["metadata"]["managedFields"] == old["metadata"]["managedFields"]


def test_entries_are_kept_per_manager_operation_and_version():
    old = update_managed_fields(None, configmap(a="1"), "m", "Update", "v1", T0)
    new = copy.deepcopy(old)
    new["data"]["b"] = "2"
    new = update_managed_fields(old, new, "m", "Update", "v1", T1)
    [entry] = new["metadata"]["managedFields"]
    assert entry["time"] == T1
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}


def test_apply_entries_sort_before_update_entries():
    live, _ = server_side_apply(None, configmap(a="1"), "applier", False, time=T1)
    new = copy.deepcopy(live)
    new["data"]["z"] = "2"
    new = update_managed_fields(live, new, "editor", "Update", "v1", T0)
    assert [e["operation"] for e in new["metadata"]["managedFields"]] == ["Apply", "Update"]


def test_a_status_write_is_recorded_with_its_subresource():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {}}
    new = copy.deepcopy(pod)
    new["status"] = {"phase": "Running"}
    new = update_managed_fields(pod, new, "kubelet", "Update", "v1", T0, subresource="status")
    [entry] = new["metadata"]["managedFields"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_list_map_items_are_owned_by_key_with_defaulted_keys():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i",
                                    "ports": [{"containerPort": 80}]}]}}
    obj = update_managed_fields(None, pod, "m", "Update", "v1", T0)
    containers = fields(obj, "m")["f:spec"]["f:containers"]
    assert list(containers) == ['k:{"name":"c"}']
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in containers['k:{"name":"c"}']["f:ports"]


def test_managed_fields_set_by_the_request_replace_the_stored_ones():
    old = update_managed_fields(None, configmap(a="1"), "creator", "Update", "v1", T0)
    new = copy.deepcopy(old)
    new["metadata"]["managedFields"] = [{}]
    new = update_managed_fields(old, new, "wiper", "Update", "v1", T1)
    assert "managedFields" not in new["metadata"]


def test_manager_from_user_agent_is_the_first_word():
    assert manager_from_user_agent("kubectl/v1.35.2 (linux/amd64) kubernetes/abc") == "kubectl"
    assert len(manager_from_user_agent("x" * 300)) == 128


def test_old_update_entries_are_folded_into_ancient_changes():
    obj = update_managed_fields(None, configmap(k0="v"), "m00", "Update", "v1",
                                "2026-01-01T00:00:00Z")
    for i in range(1, 12):
        new = copy.deepcopy(obj)
        new["data"][f"k{i}"] = "v"
        obj = update_managed_fields(obj, new, f"m{i:02}", "Update", "v1",
                                    f"2026-01-01T00:00:{i:02}Z")
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(managers) == 10
    assert "ancient-changes" in managers and "m00" not in managers and "m01" not in managers
    ancient = fields(obj, "ancient-changes")["f:data"]
    assert {"f:k0", "f:k1", "f:k2"} <= set(ancient)
