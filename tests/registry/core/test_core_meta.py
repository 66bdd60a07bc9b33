"""ObjectMeta validation shared by every kind (apiserver.registry.meta)."""

from __future__ import annotations

import pytest
from core_helpers import rendered

from draemu.api.errors import Path
from draemu.apiserver.registry.meta import (
    name_is_dns_label,
    validate_object_meta,
    validate_object_meta_update,
)

pytestmark = pytest.mark.unit

META = Path("metadata")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def test_valid_metadata_is_accepted() -> None:
    meta = {"name": "web-1", "namespace": "default", "labels": {"app.kubernetes.io/name": "web"},
            "annotations": {"Example.com/Note": "x"}, "finalizers": ["example.com/keep"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                 "uid": "u1", "controller": True}]}
    assert validate_object_meta(meta, True, META) == []


@pytest.mark.parametrize(("meta", "namespaced", "expected"), [
    ({"namespace": "default"}, True,
     "metadata.name: Required value: name or generateName is required"),
    ({"name": "Web"}, False, f'metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}'),
    ({"name": "a"}, True, "metadata.namespace: Required value"),
    ({"name": "a", "namespace": "x"}, False,
     "metadata.namespace: Forbidden: not allowed on this type"),
    ({"name": "a", "generation": -1}, False,
     "metadata.generation: Invalid value: -1: must be greater than or equal to 0"),
    ({"name": "a", "labels": {"k": "bad value"}}, False,
     'metadata.labels: Invalid value: "bad value": a valid label must be an empty string or '
     "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
     "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
     "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ({"name": "a", "finalizers": ["keep"]}, False,
     'metadata.finalizers[0]: Invalid value: "keep": name is neither a standard finalizer '
     "name nor is it fully qualified"),
    ({"name": "a", "finalizers": ["orphan", "foregroundDeletion"]}, False,
     'metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan '
     "and foregroundDeletion cannot be both set"),
    ({"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]},
     False, 'metadata.ownerReferences.uid: Invalid value: "": must not be empty'),
    ({"name": "a", "managedFields": [{"manager": "m", "operation": "Patch"}]}, False,
     'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or '
     "`Update`"),
])
def test_invalid_metadata_reports_upstream_path_and_message(meta: dict, namespaced: bool,
                                                            expected: str) -> None:
    assert rendered(validate_object_meta(meta, namespaced, META)) == [expected]


def test_two_controller_owner_references_are_refused() -> None:
    refs = [{"apiVersion": "v1", "kind": "A", "name": n, "uid": n, "controller": True}
            for n in ("x", "y")]
    errs = validate_object_meta({"name": "a", "ownerReferences": refs}, False, META)
    assert [e.field for e in errs] == ["metadata.ownerReferences"]
    assert errs[0].detail == ('Only one reference can have Controller set to true. Found "true" '
                              "in references for A/x and A/y")


def test_generate_name_prefix_may_end_with_a_dash() -> None:
    meta = {"generateName": "web-", "name": "web-x7k2p"}
    assert validate_object_meta(meta, False, META) == []


def test_kind_specific_name_rule_is_applied() -> None:
    errs = validate_object_meta({"name": "a.b"}, False, META, name_is_dns_label)
    assert rendered(errs)[0] == 'metadata.name: Invalid value: "a.b": must not contain dots'


def test_update_reports_immutable_fields_and_missing_resource_version() -> None:
    old = {"name": "a", "uid": "u1", "resourceVersion": "3", "generation": 2}
    new = {"name": "b", "uid": "u2", "generation": 1}
    assert rendered(validate_object_meta_update(new, old, META)) == [
        'metadata.resourceVersion: Invalid value: "": must be specified for an update',
        "metadata.generation: Invalid value: 1: must not be decremented",
        'metadata.name: Invalid value: "b": field is immutable',
        'metadata.uid: Invalid value: "u2": field is immutable',
    ]


def test_update_of_a_deleted_object_may_not_add_finalizers() -> None:
    old = {"name": "a", "resourceVersion": "3", "deletionTimestamp": "2026-01-01T00:00:00Z"}
    new = dict(old, finalizers=["example.com/late"])
    assert rendered(validate_object_meta_update(new, old, META)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"example.com/late"}']
