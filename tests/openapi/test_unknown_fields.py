"""Unknown-field detection and pruning (fieldValidation Strict / Warn / Ignore)."""

from __future__ import annotations

import json

import pytest

from draemu.openapi import schemas

pytestmark = pytest.mark.unit


def pod(**extra_spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **extra_spec}}


def test_a_valid_pod_has_no_unknown_fields():
    assert schemas.unknown_fields("", "v1", "Pod", pod()) == []


@pytest.mark.parametrize("obj, expected", [
    ({"spec": {"foo": 1}}, [".spec.foo"]),
    ({"metadata": {"name": "x", "colour": "red"}}, [".metadata.colour"]),
    ({"spec": {"containers": [{"name": "a"}, {"name": "b", "imagee": "x"}]}},
     [".spec.containers[1].imagee"]),
    ({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}, "x": 1}}]}},
     [".spec.containers[0].resources.x"]),
    ({"topLevel": True, "spec": {"a": 1, "b": 2}}, [".topLevel", ".spec.a", ".spec.b"]),
], ids=["spec", "metadata", "list-item", "nested", "document-order"])
def test_unknown_fields_are_reported_with_upstream_paths(obj, expected):
    assert schemas.unknown_fields("", "v1", "Pod", obj) == expected


def test_map_values_that_are_structs_are_checked_under_their_key():
    job = {"spec": {"template": {"spec": {"containers": [], "overhead": {"cpu": "1"}}}},
           "metadata": {"annotations": {"k": "v"}}}
    assert schemas.unknown_fields("batch", "v1", "Job", job) == []
    bad = {"spec": {"selector": {"matchLabels": {"a": "b"}, "matchFoo": 1}}}
    assert schemas.unknown_fields("apps", "v1", "Deployment", bad) == [".spec.selector.matchFoo"]


def test_free_form_fields_accept_anything():
    entry = {"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:anything": {}}}}
    cm = {"metadata": {"managedFields": [entry]}}
    assert schemas.unknown_fields("", "v1", "ConfigMap", cm) == []


def test_repeated_unknown_paths_are_reported_once():
    obj = {"spec": {"foo": 1}}
    assert schemas.unknown_fields("", "v1", "Pod", obj) == [".spec.foo"]


def test_the_strict_message_has_no_leading_dot():
    assert schemas.strict_message(".spec.containers[0].x") == \
        'unknown field "spec.containers[0].x"'


def test_prune_drops_unknown_fields_and_keeps_the_rest():
    obj = pod(foo=1)
    obj["spec"]["containers"][0]["bar"] = 2
    pruned = schemas.prune("", "v1", "Pod", obj)
    assert pruned == pod()
    assert obj["spec"]["foo"] == 1  # the input is not changed


def test_a_kind_without_a_schema_reports_nothing_and_prunes_nothing():
    obj = {"spec": {"anything": 1}}
    assert schemas.unknown_fields("example.com", "v1", "Widget", obj) == []
    assert schemas.prune("example.com", "v1", "Widget", obj) == obj


def test_events_in_two_groups_have_their_own_schemas():
    assert schemas.for_kind("", "v1", "Event")[0] == "io.k8s.api.core.v1.Event"
    assert schemas.for_kind("events.k8s.io", "v1", "Event")[0] == "io.k8s.api.events.v1.Event"


# A body with the mistakes upstream's field validation test makes; the expected list is
# what kube-apiserver answers for it.
DUPLICATES_AND_UNKNOWNS = """{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "first", "name": "second", "labels": {"app": "web"}, "unknownMeta": 1},
  "spec": {
    "unknown1": "a", "unknownDupe": "b", "unknownDupe": "c", "paused": true, "paused": false,
    "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
      {"name": "web", "image": "nginx", "unknownNested": 1,
       "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""


def test_strict_decoding_lists_duplicates_and_unknowns_in_document_order():
    assert schemas.strict_decoding_errors("apps", "v1", "Deployment",
                                          DUPLICATES_AND_UNKNOWNS) == [
        'duplicate field "metadata.name"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'duplicate field "spec.paused"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    ]


def test_a_clean_body_has_no_strict_decoding_errors():
    body = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}'
    assert schemas.strict_decoding_errors("", "v1", "ConfigMap", body) == []


MERGE_PATCH = """{"spec": {"unknown1": "a", "unknownDupe": "b", "unknownDupe": "c",
  "paused": true, "paused": false, "template": {"spec": {"containers": [
    {"name": "web", "image": "nginx", "unknownNested": 1,
     "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""


def test_a_merge_patch_reports_its_duplicates_then_the_patched_objects_unknown_fields():
    patched = json.loads(MERGE_PATCH)  # the duplicates' last values win, as in Go
    messages = schemas.duplicate_fields(MERGE_PATCH) + [
        schemas.strict_message(p)
        for p in schemas.unknown_fields("apps", "v1", "Deployment", patched, sort_keys=True)]
    assert messages == [
        'duplicate field "spec.unknownDupe"',
        'duplicate field "spec.paused"',
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
    ]


def test_json_patch_operations_with_unknown_or_repeated_members():
    body = """[{"op": "add", "path": "/spec/a", "value": 1, "foo": "bar"},
               {"op": "add", "path": "/spec/b", "path": "/spec/c", "value": 1}]"""
    assert schemas.json_patch_field_errors(body) == ['json patch unknown field "[0].foo"',
                                                     'json patch duplicate field "[1].path"']
