"""The gnostic protobuf form of /openapi/v2, read back with a plain protobuf wire reader
(field numbers of gnostic's openapi.v2 messages)."""

from __future__ import annotations

from typing import ClassVar

import pytest
import yaml

from draemu.apiserver.registry.strategy import Strategy
from draemu.openapi import V2_PROTOBUF_CONTENT_TYPE, openapi_v2_protobuf

pytestmark = pytest.mark.unit


class Pods(Strategy):
    kind = "Pod"
    resource = "pods"
    versions = ("v1",)
    storage_version = "v1"
    subresources: ClassVar[frozenset[str]] = frozenset({"status"})


def read(data: bytes) -> dict[int, list]:
    """Field number -> values (ints for varints, bytes for length-delimited fields)."""
    out: dict[int, list] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i:i + size], i + size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def named(entries: list[bytes]) -> dict[str, bytes]:
    """Repeated Named* messages (name = 1, value = 2) as a dict."""
    out = {}
    for raw in entries:
        fields = read(raw)
        out[fields[1][0].decode()] = fields[2][0]
    return out


def extensions(entries: list[bytes]) -> dict[str, object]:
    return {name: yaml.safe_load(read(value)[2][0].decode())
            for name, value in named(entries).items()}


DOC = read(openapi_v2_protobuf([Pods()]))


def test_the_document_is_swagger_2_0_with_paths_and_definitions():
    assert DOC[1] == [b"2.0"]
    paths = named(read(DOC[8][0])[2])
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in paths
    definitions = named(read(DOC[9][0])[1])
    assert "io.k8s.api.core.v1.Pod" in definitions


def test_the_patch_operation_carries_its_kind_and_the_field_validation_parameter():
    item = read(named(read(DOC[8][0])[2])["/api/v1/namespaces/{namespace}/pods/{name}"])
    patch = read(item[8][0])  # PathItem.patch
    assert extensions(patch[13])["x-kubernetes-group-version-kind"] == {
        "group": "", "kind": "Pod", "version": "v1"}
    query_names = []
    for raw in patch[8]:  # ParametersItem -> Parameter -> NonBodyParameter -> query
        parameter = read(read(raw)[1][0])
        if 2 in parameter:
            query = read(parameter[2][0]).get(3)
            if query:
                query_names.append(read(query[0])[4][0].decode())
    assert "fieldValidation" in query_names
    assert "application/strategic-merge-patch+json" in [c.decode() for c in patch[7]]


def test_schemas_keep_references_types_and_extensions():
    definitions = named(read(DOC[9][0])[1])
    pod = read(definitions["io.k8s.api.core.v1.Pod"])
    assert extensions(pod[31])["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    properties = named(read(pod[25][0])[1])
    spec = read(properties["spec"])
    assert spec[1] == [b"#/definitions/io.k8s.api.core.v1.PodSpec"]
    containers = read(named(read(read(definitions["io.k8s.api.core.v1.PodSpec"])[25][0])[1])[
        "containers"])
    assert read(containers[22][0])[1] == [b"array"]
    assert extensions(containers[31])["x-kubernetes-patch-merge-key"] == "name"


def test_the_served_content_type_is_kube_apiservers_which_go_can_parse():
    # The Accept header spells it with '@', which Go's mime parser rejects in a reply.
    assert V2_PROTOBUF_CONTENT_TYPE == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
