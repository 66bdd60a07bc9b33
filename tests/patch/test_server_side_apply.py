"""Server-side apply: ownership, conflicts, force, removal of fields no longer applied."""

from __future__ import annotations

import copy
import json

import pytest

from draemu.api.errors import StatusError
from draemu.apiserver.wire.patch import conflict_error, server_side_apply, update_managed_fields

pytestmark = pytest.mark.unit

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def deployment(replicas=None, labels=None, containers=None):
    spec = {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": containers or [{"name": "web",
                                                                "image": "nginx"}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    meta = {"name": "d", "namespace": "default"}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


def entries(obj):
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def apply(live, config, manager, force=False, time=T1):
    return server_side_apply(live, config, manager, force, time=time)


def test_apply_creates_an_object_owned_by_the_applier():
    obj, conflicts = apply(None, deployment(replicas=2), "alice", time=T0)
    assert conflicts == []
    assert obj["spec"]["replicas"] == 2
    [entry] = obj["metadata"]["managedFields"]
    assert entry == {"manager": "alice", "operation": "Apply", "apiVersion": "apps/v1",
                     "time": T0, "fieldsType": "FieldsV1", "fieldsV1": entry["fieldsV1"]}
    fields = entry["fieldsV1"]
    assert fields["f:spec"]["f:replicas"] == {}
    assert fields["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}
    assert "f:name" not in fields.get("f:metadata", {})


def test_changing_a_field_another_applier_owns_is_a_conflict():
    live, _ = apply(None, deployment(replicas=2), "alice", time=T0)
    merged, conflicts = apply(live, deployment(replicas=5), "bob")
    assert [(c.manager, c.field) for c in conflicts] == [("alice", ".spec.replicas")]
    assert merged["spec"]["replicas"] == 2


def test_the_conflict_error_is_upstreams_409():
    live, _ = apply(None, deployment(replicas=2), "alice", time=T0)
    _, conflicts = apply(live, deployment(replicas=5), "bob")
    err = conflict_error(conflicts)
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == ('Apply failed with 1 conflict: conflict with "alice": '
                           '.spec.replicas')
    assert err.details["causes"] == [{"reason": "FieldManagerConflict",
                                      "message": 'conflict with "alice"',
                                      "field": ".spec.replicas"}]


def test_conflicts_with_an_update_manager_name_its_version_and_time():
    live = update_managed_fields(None, deployment(replicas=1), "kubectl-create",
                                 api_version="apps/v1", time=T0)
    _, conflicts = apply(live, deployment(replicas=3, labels={"a": "b"}), "bob")
    assert conflict_error(conflicts).message == (
        'Apply failed with 1 conflict: conflict with "kubectl-create" using apps/v1 at '
        f'{T0}: .spec.replicas')


def test_several_conflicts_are_listed_by_manager():
    live, _ = apply(None, deployment(replicas=2, labels={"l": "1"}), "alice", time=T0)
    _, conflicts = apply(live, deployment(replicas=3, labels={"l": "2"}), "bob")
    assert conflict_error(conflicts).message == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n'
        "- .metadata.labels.l\n- .spec.replicas")


def test_applying_the_same_value_shares_ownership_without_conflict():
    live, _ = apply(None, deployment(replicas=2), "alice", time=T0)
    merged, conflicts = apply(live, deployment(replicas=2), "bob")
    assert conflicts == []
    owners = entries(merged)
    assert "f:replicas" in owners[("alice", "Apply")]["f:spec"]
    assert "f:replicas" in owners[("bob", "Apply")]["f:spec"]


def test_force_takes_ownership_from_the_other_manager():
    live, _ = apply(None, deployment(replicas=2), "alice", time=T0)
    merged, conflicts = apply(live, deployment(replicas=5), "bob", force=True)
    assert conflicts == []
    assert merged["spec"]["replicas"] == 5
    owners = entries(merged)
    assert "f:replicas" not in owners[("alice", "Apply")]["f:spec"]
    assert "f:replicas" in owners[("bob", "Apply")]["f:spec"]


def test_a_field_no_longer_applied_is_removed():
    live, _ = apply(None, deployment(replicas=2, labels={"a": "1", "b": "2"}), "alice", time=T0)
    merged, _ = apply(live, deployment(labels={"a": "1"}), "alice")
    assert "replicas" not in merged["spec"]
    assert merged["metadata"]["labels"] == {"a": "1"}


def test_a_field_no_longer_applied_stays_when_another_manager_owns_it():
    live, _ = apply(None, deployment(replicas=2), "alice", time=T0)
    live, _ = apply(live, deployment(replicas=2), "bob", time=T1)
    merged, _ = apply(live, deployment(), "alice", time=T2)
    assert merged["spec"]["replicas"] == 2


def test_list_map_items_merge_by_key_and_removed_items_go():
    two = [{"name": "web", "image": "nginx"}, {"name": "side", "image": "busybox"}]
    live, _ = apply(None, deployment(containers=two), "alice", time=T0)
    merged, _ = apply(live, deployment(containers=[{"name": "web", "image": "nginx:2"}]),
                      "alice")
    assert merged["spec"]["template"]["spec"]["containers"] == [
        {"name": "web", "image": "nginx:2"}]


def test_a_list_item_added_by_another_applier_is_kept():
    live, _ = apply(None, deployment(), "alice", time=T0)
    side = {"name": "side", "image": "busybox"}
    live, conflicts = apply(live, deployment(containers=[side]), "bob")
    assert conflicts == []
    names = [c["name"] for c in live["spec"]["template"]["spec"]["containers"]]
    assert names == ["web", "side"]


def test_set_lists_merge_by_value():
    live, _ = apply(None, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "finalizers": ["a"]}}, "alice", time=T0)
    merged, _ = apply(live, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "finalizers": ["b"]}}, "bob")
    assert merged["metadata"]["finalizers"] == ["a", "b"]
    assert entries(merged)[("bob", "Apply")] == {"f:metadata": {"f:finalizers": {
        'v:"b"': {}}}}


def test_managed_fields_in_an_apply_configuration_are_rejected():
    config = deployment()
    config["metadata"]["managedFields"] = []
    with pytest.raises(StatusError) as err:
        apply(None, config, "alice")
    assert err.value.code == 400


def test_apply_does_not_change_the_live_object():
    live, _ = apply(None, deployment(replicas=2, labels={"a": "1"}), "alice", time=T0)
    before = copy.deepcopy(live)
    apply(live, deployment(), "alice")
    assert live == before


def test_an_apply_entry_keeps_one_identity_across_versions():
    live, _ = apply(None, deployment(replicas=2), "alice", time=T0)
    config = deployment(replicas=3)
    merged, _ = server_side_apply(live, config, "alice", False, api_version="apps/v1beta9",
                                  time=T1)
    [entry] = merged["metadata"]["managedFields"]
    assert (entry["apiVersion"], entry["time"]) == ("apps/v1beta9", T1)


def test_a_list_map_item_without_its_key_is_rejected():
    config = deployment()
    config["spec"]["template"]["spec"]["imagePullSecrets"] = [{}]
    with pytest.raises(StatusError) as err:
        apply(None, config, "alice")
    assert (err.value.code, err.value.reason) == (500, "")
    assert err.value.message.startswith(
        "failed to create typed patch object (default/d; apps/v1, Kind=Deployment): "
        ".spec.template.spec.imagePullSecrets: element 0: associative list with keys has "
        'an element that omits key field "name"')


def test_duplicate_list_map_keys_are_rejected():
    config = deployment(containers=[{"name": "a", "image": "x"}, {"name": "a", "image": "y"}])
    with pytest.raises(StatusError) as err:
        apply(None, config, "alice")
    assert 'duplicate entries for key [name="a"]' in err.value.message


def test_a_missing_key_with_a_default_takes_the_default():
    config = deployment(containers=[{"name": "web", "image": "x",
                                     "ports": [{"containerPort": 80}]}])
    obj, _ = apply(None, config, "alice")
    ports = obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"]['k:{"name":"web"}']["f:ports"]
    assert 'k:{"containerPort":80,"protocol":"TCP"}' in ports


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def client_side_applied(replicas):
    """An object as `kubectl apply` (client-side) leaves it: annotated, owned by
    kubectl-client-side-apply, with a server default added."""
    config = deployment(replicas=replicas)
    obj = copy.deepcopy(config)
    obj["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(config)}
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    return update_managed_fields(None, obj, "kubectl-client-side-apply", "Update", "apps/v1",
                                 T0)


def test_kubectl_server_side_apply_takes_over_from_client_side_apply():
    merged, conflicts = apply(client_side_applied(2), deployment(replicas=5), "kubectl")
    assert conflicts == []
    assert merged["spec"]["replicas"] == 5
    assert json.loads(merged["metadata"]["annotations"][LAST_APPLIED])["spec"]["replicas"] == 5


def test_other_managers_still_conflict_with_client_side_apply():
    merged, conflicts = apply(client_side_applied(2), deployment(replicas=5), "bob")
    assert conflicts and merged["spec"]["replicas"] == 2


def test_no_takeover_once_the_live_object_drifted_from_the_last_applied_configuration():
    live = client_side_applied(2)
    drifted = copy.deepcopy(live)
    drifted["spec"]["replicas"] = 7
    live = update_managed_fields(live, drifted, "scaler", "Update", "apps/v1", T1)
    merged, conflicts = apply(live, deployment(replicas=5), "kubectl")
    assert [c.manager for c in conflicts] == ["scaler"]
    assert merged["spec"]["replicas"] == 7


def test_applied_list_items_keep_the_applied_order():
    def names(obj):
        return [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]

    def containers(*names):
        return [{"name": n, "image": "i"} for n in names]

    live, _ = apply(None, deployment(containers=containers("a", "c")), "alice", time=T0)
    merged, _ = apply(live, deployment(containers=containers("a", "b", "c")), "alice")
    assert names(merged) == ["a", "b", "c"]
    merged, _ = apply(merged, deployment(containers=containers("c", "a")), "bob", time=T2)
    assert names(merged) == ["b", "c", "a"]


def test_reset_fields_are_neither_applied_nor_owned():
    config = deployment(replicas=2)
    config["status"] = {"replicas": 9}
    obj, _ = server_side_apply(None, config, "alice", False, time=T0, reset_fields=("status",))
    assert "status" not in obj
    assert "f:status" not in obj["metadata"]["managedFields"][0]["fieldsV1"]


def test_an_undeclared_field_in_an_apply_configuration_is_rejected():
    config = deployment()
    config["spec"]["foo"] = 1
    config["spec"]["template"]["spec"]["containers"][0]["bar"] = 2
    with pytest.raises(StatusError) as err:
        apply(None, config, "alice")
    assert err.value.message == (
        "failed to create typed patch object (default/d; apps/v1, Kind=Deployment): "
        'errors:\n  .spec.template.spec.containers[name="web"].bar: field not declared in '
        "schema\n  .spec.foo: field not declared in schema")
