"""ConfigMap, Secret, ServiceAccount and Lease strategies."""

from __future__ import annotations

import base64
import copy

import pytest
from core_helpers import created, ctx, rendered

from draemu.api.errors import StatusError
from draemu.apiserver.registry.coordination.lease import LeaseStrategy
from draemu.apiserver.registry.core.configmap import ConfigMapStrategy
from draemu.apiserver.registry.core.secret import SecretStrategy
from draemu.apiserver.registry.core.serviceaccount import ServiceAccountStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit

CM, SECRET, SA, LEASE = ConfigMapStrategy(), SecretStrategy(), ServiceAccountStrategy(), \
    LeaseStrategy()
KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
           "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
           "'[-._a-zA-Z0-9]+')")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def configmap(**fields: object) -> dict:
    return {"metadata": {"name": "c", "namespace": "default"}, **fields}


# ConfigMap ----------------------------------------------------------------------------

@pytest.mark.parametrize(("fields", "expected"), [
    ({"data": {"app.conf": "x", "KEY_1": "y"}}, []),
    ({"data": {"a/b": "x"}}, [f'data[a/b]: Invalid value: "a/b": {KEY_MSG}']),
    ({"data": {"..x": "x"}}, ["data[..x]: Invalid value: \"..x\": must not start with '..'"]),
    ({"data": {"k": "x"}, "binaryData": {"k": b64("y")}},
     ['data[k]: Invalid value: "k": duplicate of key present in binaryData']),
    ({"data": {"big": "x" * (1024 * 1024 + 1)}},
     ["Too long: may not be more than 1048576 bytes"]),
])
def test_configmap_validation(fields: dict, expected: list[str]) -> None:
    assert rendered(CM.validate(created(CM, configmap(**fields)), ctx())) == expected


def test_immutable_configmap_data_cannot_change() -> None:
    old = created(CM, configmap(data={"k": "v"}, immutable=True))
    new = copy.deepcopy(old)
    new["data"]["k"] = "w"
    new["immutable"] = False
    assert rendered(CM.validate_update(new, old, ctx())) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set"]


def test_configmap_table_counts_both_data_maps() -> None:
    obj = created(CM, configmap(data={"a": "1"}, binaryData={"b": b64("2")}))
    assert CM.table_row(obj) == ["c", 2, AGE]


# Secret -------------------------------------------------------------------------------

def test_secret_type_defaults_to_opaque_and_string_data_is_folded_into_data() -> None:
    obj = created(SECRET, configmap(data={"a": b64("1")}, stringData={"b": "two"}))
    assert obj["type"] == "Opaque"
    assert obj["data"] == {"a": b64("1"), "b": b64("two")}
    assert "stringData" not in obj


@pytest.mark.parametrize(("value", "byte"), [("!!!!", 0), ("YWJj$A==", 4), ("YWJjZA", 4)])
def test_invalid_base64_is_a_decode_error(value: str, byte: int) -> None:
    with pytest.raises(StatusError) as err:
        created(SECRET, configmap(data={"k": value}))
    assert err.value.code == 400
    assert err.value.message == ('Secret in version "v1" cannot be handled as a Secret: illegal '
                                 f"base64 data at input byte {byte}")


@pytest.mark.parametrize(("kind", "data", "expected"), [
    ("kubernetes.io/tls", {"tls.crt": b64("c")}, ["data[tls.key]: Required value"]),
    ("kubernetes.io/basic-auth", {}, ["data[username]: Required value",
                                      "data[password]: Required value"]),
    ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64("{}")}, []),
    ("kubernetes.io/service-account-token", {},
     ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]),
    ("example.com/custom", {"anything": b64("x")}, []),
])
def test_secret_types_require_their_keys(kind: str, data: dict, expected: list[str]) -> None:
    obj = created(SECRET, configmap(type=kind, data=data))
    assert rendered(SECRET.validate(obj, ctx())) == expected


def test_secret_type_is_immutable() -> None:
    old = created(SECRET, configmap(data={"a": b64("1")}))
    new = copy.deepcopy(old)
    new["type"] = "example.com/other"
    assert rendered(SECRET.validate_update(new, old, ctx())) == [
        'type: Invalid value: "example.com/other": field is immutable']


def test_secret_table_row() -> None:
    obj = created(SECRET, configmap(data={"a": b64("1")}))
    assert SECRET.table_row(obj) == ["c", "Opaque", 1, AGE]


def test_secret_field_selector_type() -> None:
    obj = created(SECRET, configmap(data={"a": b64("1")}))
    assert SECRET.selectable_fields(obj) == {"type": "Opaque"}


# ServiceAccount and Lease ----------------------------------------------------------------

def test_service_account_table_counts_secrets() -> None:
    obj = created(SA, configmap(secrets=[{"name": "s"}]))
    assert SA.table_row(obj) == ["c", 1, AGE]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"holderIdentity": "n1", "leaseDurationSeconds": 40}, []),
    ({"leaseDurationSeconds": 0},
     ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]),
    ({"leaseTransitions": -1},
     ["spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"]),
    ({"preferredHolder": "n2"},
     ["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]),
    ({"strategy": "Newest"},
     ['spec.strategy: Unsupported value: "Newest": supported values: '
      '"OldestEmulationVersion"']),
])
def test_lease_validation(spec: dict, expected: list[str]) -> None:
    obj = created(LEASE, configmap(spec=spec))
    assert rendered(LEASE.validate(obj, ctx())) == expected


def test_lease_table_shows_the_holder() -> None:
    assert LEASE.table_row(created(LEASE, configmap(spec={"holderIdentity": "n1"}))) == [
        "c", "n1", AGE]
