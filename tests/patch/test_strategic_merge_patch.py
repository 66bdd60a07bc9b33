"""Strategic merge patch: patch strategies and merge keys from the schemas, and every
directive kubectl sends."""

from __future__ import annotations

import pytest

from draemu.api.errors import StatusError
from draemu.apiserver.wire.patch import apply_strategic_merge_patch
from draemu.openapi import schemas

pytestmark = pytest.mark.unit

POD = schemas.patch_meta("", "v1", "Pod")
DEPLOYMENT = schemas.patch_meta("apps", "v1", "Deployment")


def pod(*containers, **spec):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "finalizers": ["a", "b"], "labels": {"x": "1"}},
            "spec": {"containers": [dict(c) for c in containers], **spec}}


A = {"name": "a", "image": "img-a", "args": ["1", "2"]}
B = {"name": "b", "image": "img-b"}
C = {"name": "c", "image": "img-c"}


def names(obj):
    return [c["name"] for c in obj["spec"]["containers"]]


def test_lists_with_the_merge_strategy_merge_items_by_key():
    out = apply_strategic_merge_patch(pod(A, B), {"spec": {"containers": [
        {"name": "b", "image": "new"}]}}, POD)
    assert out["spec"]["containers"] == [A, {"name": "b", "image": "new"}]


def test_an_item_with_a_new_key_is_appended():
    out = apply_strategic_merge_patch(pod(A), {"spec": {"containers": [C]}}, POD)
    assert names(out) == ["a", "c"]


def test_lists_without_a_strategy_are_replaced():
    patch = {"spec": {"containers": [{"name": "a", "args": ["9"]}]}}
    out = apply_strategic_merge_patch(pod(A), patch, POD)
    assert out["spec"]["containers"][0] == {"name": "a", "image": "img-a", "args": ["9"]}


def test_list_type_map_without_a_patch_strategy_is_replaced():
    obj = pod({"name": "a", "resources": {"claims": [{"name": "x"}, {"name": "y"}]}})
    patch = {"spec": {"containers": [{"name": "a", "resources": {"claims": [{"name": "z"}]}}]}}
    out = apply_strategic_merge_patch(obj, patch, POD)
    assert out["spec"]["containers"][0]["resources"]["claims"] == [{"name": "z"}]


def test_delete_directive_removes_an_item_by_key():
    patch = {"spec": {"containers": [{"$patch": "delete", "name": "a"}]}}
    assert names(apply_strategic_merge_patch(pod(A, B), patch, POD)) == ["b"]


def test_replace_directive_in_a_list_replaces_the_whole_list():
    patch = {"spec": {"containers": [C, {"$patch": "replace"}]}}
    assert apply_strategic_merge_patch(pod(A, B), patch, POD)["spec"]["containers"] == [C]


def test_replace_directive_in_a_map_replaces_the_map():
    patch = {"metadata": {"labels": {"$patch": "replace", "y": "2"}}}
    assert apply_strategic_merge_patch(pod(A), patch, POD)["metadata"]["labels"] == {"y": "2"}


def test_delete_directive_in_a_map_empties_it():
    patch = {"metadata": {"labels": {"$patch": "delete"}}}
    assert apply_strategic_merge_patch(pod(A), patch, POD)["metadata"]["labels"] == {}


def test_null_deletes_a_field():
    patch = {"metadata": {"labels": {"x": None}}, "spec": {"nodeName": None}}
    out = apply_strategic_merge_patch(pod(A, nodeName="n"), patch, POD)
    assert out["metadata"]["labels"] == {}
    assert "nodeName" not in out["spec"]


def test_primitive_lists_with_the_merge_strategy_are_unioned():
    out = apply_strategic_merge_patch(pod(A), {"metadata": {"finalizers": ["b", "c"]}}, POD)
    assert out["metadata"]["finalizers"] == ["a", "b", "c"]


def test_delete_from_primitive_list():
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    assert apply_strategic_merge_patch(pod(A), patch, POD)["metadata"]["finalizers"] == ["b"]


def test_set_element_order_puts_items_in_the_given_order():
    patch = {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "b"},
                                                      {"name": "a"}],
                      "containers": [C]}}
    assert names(apply_strategic_merge_patch(pod(A, B), patch, POD)) == ["c", "b", "a"]


def test_set_element_order_keeps_server_only_items_where_the_server_had_them():
    patch = {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "c"}],
                      "containers": [C]}}
    assert names(apply_strategic_merge_patch(pod(A, B), patch, POD)) == ["a", "b", "c"]


def test_retain_keys_drops_the_keys_not_listed():
    dep = {"spec": {"strategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(dep, patch, DEPLOYMENT)
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_must_name_every_patched_key():
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}
    with pytest.raises(StatusError) as err:
        apply_strategic_merge_patch({"spec": {}}, patch, DEPLOYMENT)
    assert (err.value.code, err.value.message) == (422, "patch content doesn't match "
                                                        "retainKeys list")


def test_nested_merge_keys_merge_at_every_level():
    obj = pod({"name": "a", "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}]})
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "E2", "value": "x"}]}]}}
    env = apply_strategic_merge_patch(obj, patch, POD)["spec"]["containers"][0]["env"]
    assert env == [{"name": "E1", "value": "1"}, {"name": "E2", "value": "x"}]


def test_an_item_without_its_merge_key_is_rejected():
    with pytest.raises(StatusError) as err:
        apply_strategic_merge_patch(pod(A), {"spec": {"containers": [{"image": "x"}]}}, POD)
    assert "does not contain declared merge key: name" in err.value.message


def test_an_unknown_patch_directive_is_a_400():
    with pytest.raises(StatusError) as err:
        apply_strategic_merge_patch(pod(A), {"metadata": {"$patch": "explode"}}, POD)
    assert err.value.code == 400


def test_a_kind_without_schema_merges_maps_and_replaces_lists():
    open_schema = schemas.patch_meta("example.com", "v1", "Widget")
    obj = {"spec": {"items": [1, 2], "m": {"a": 1}}}
    out = apply_strategic_merge_patch(obj, {"spec": {"items": [3], "m": {"b": 2}}}, open_schema)
    assert out["spec"] == {"items": [3], "m": {"a": 1, "b": 2}}


def test_kubectl_three_way_patch_for_a_changed_deployment():
    live = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "annotations": {"kubectl.kubernetes.io/last-applied"
                                                      "-configuration": "{}"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                {"name": "side", "image": "busybox"}]}}}}
    patch = {"spec": {"replicas": 2, "template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [{"name": "web", "image": "nginx:2"},
                       {"$patch": "delete", "name": "side"}]}}}}
    out = apply_strategic_merge_patch(live, patch, DEPLOYMENT)
    assert out["spec"]["replicas"] == 2
    assert out["spec"]["template"]["spec"]["containers"] == [
        {"name": "web", "image": "nginx:2", "ports": [{"containerPort": 80}]}]
    assert live["spec"]["replicas"] == 1  # the input is not changed
