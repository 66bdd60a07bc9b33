"""Custom resources in /openapi/v2 as kube-apiserver publishes them (kubectl validates
and explains with this document): an open root is a bare object, nullable and open
values lose their type and children, junctors go."""

from __future__ import annotations

import pytest

from draemu.openapi.swagger import custom_resource_v2

pytestmark = pytest.mark.unit

GVK = [{"group": "example.com", "kind": "Widget", "version": "v1"}]
ADDED = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
         "metadata": {"allOf": [{"$ref": "#/components/schemas/ObjectMeta"}]}}


def test_an_open_root_is_a_bare_object() -> None:
    definition = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                  "properties": dict(ADDED), "x-kubernetes-group-version-kind": GVK}
    assert custom_resource_v2(definition) == {"type": "object",
                                              "x-kubernetes-group-version-kind": GVK}


def test_nullable_open_and_junctor_values_as_upstream_writes_them() -> None:
    definition = {
        "type": "object", "required": ["spec"], "x-kubernetes-group-version-kind": GVK,
        "properties": {
            **ADDED,
            "spec": {"type": "object", "required": ["a", "b"], "properties": {
                "a": {"type": "string", "nullable": True},
                "b": {"type": "integer", "anyOf": [{"minimum": 1}], "not": {"maximum": 2}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"x": {"type": "string"}}},
                "anything": {"type": "array", "x-kubernetes-preserve-unknown-fields": True,
                             "items": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "object", "nullable": True,
                                                    "properties": {"y": {"type": "string"}}}},
            }}}}
    got = custom_resource_v2(definition)
    assert got["properties"]["spec"] == {
        "type": "object", "required": ["b"], "properties": {
            "a": {},
            "b": {"type": "integer"},
            "free": {"x-kubernetes-preserve-unknown-fields": True},
            "anything": {"x-kubernetes-preserve-unknown-fields": True},
            "list": {"type": "array", "items": {}}}}
    assert got["properties"]["metadata"] == ADDED["metadata"]
    assert got["required"] == ["spec"] and got["x-kubernetes-group-version-kind"] == GVK
    assert definition["properties"]["spec"]["properties"]["a"]["nullable"] is True
