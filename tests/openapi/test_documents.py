"""The OpenAPI v3 index and documents, and the Swagger 2.0 document, as kubectl reads them."""

from __future__ import annotations

from typing import ClassVar

import pytest

from draemu.apiserver.registry.strategy import Strategy
from draemu.openapi import (
    document_hash,
    openapi_v2_document,
    openapi_v3_document,
    openapi_v3_index,
)

pytestmark = pytest.mark.unit


class Pods(Strategy):
    kind = "Pod"
    resource = "pods"
    versions = ("v1",)
    storage_version = "v1"
    subresources: ClassVar[frozenset[str]] = frozenset({"status", "binding", "eviction"})


class Nodes(Strategy):
    kind = "Node"
    resource = "nodes"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"


class Deployments(Strategy):
    group = "apps"
    kind = "Deployment"
    resource = "deployments"
    versions = ("v1",)
    storage_version = "v1"
    subresources: ClassVar[frozenset[str]] = frozenset({"status", "scale"})


class Reviews(Strategy):
    group = "authorization.k8s.io"
    kind = "SelfSubjectAccessReview"
    resource = "selfsubjectaccessreviews"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    verbs = ("create",)


class Widgets(Strategy):
    group = "example.com"
    kind = "Widget"
    resource = "widgets"
    versions = ("v1",)
    storage_version = "v1"


SERVED = [Pods(), Nodes(), Deployments(), Reviews(), Widgets()]
SCHEMA = "#/components/schemas/"


def core():
    return openapi_v3_document("", "v1", SERVED)


def test_the_index_has_one_url_per_group_version_with_the_document_hash():
    index = openapi_v3_index(SERVED)
    assert sorted(index["paths"]) == ["api/v1", "apis/apps/v1", "apis/authorization.k8s.io/v1",
                                      "apis/example.com/v1"]
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url == f"/openapi/v3/apis/apps/v1?hash={document_hash('apps', 'v1', SERVED)}"
    assert len(url.rsplit("=", 1)[1]) == 128  # sha512, upper-case hex as upstream


def test_the_hash_changes_when_the_served_kinds_change():
    assert document_hash("", "v1", SERVED) != document_hash("", "v1", [Pods()])


def test_a_patch_operation_declares_field_validation_and_every_patch_type():
    patch = core()["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert sorted(patch["requestBody"]["content"]) == [
        "application/apply-patch+yaml", "application/json-patch+json",
        "application/merge-patch+json", "application/strategic-merge-patch+json"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod",
                                                        "version": "v1"}
    assert patch["operationId"] == "patchCoreV1NamespacedPod"


def test_namespaced_and_cluster_scoped_paths():
    paths = core()["paths"]
    assert {"get", "post", "delete"} <= set(paths["/api/v1/namespaces/{namespace}/pods"])
    assert set(paths["/api/v1/pods"]) == {"get", "parameters"}
    assert {"get", "put", "patch", "delete"} <= set(paths["/api/v1/nodes/{name}"])
    assert "/api/v1/watch/namespaces/{namespace}/pods/{name}" in paths


def test_subresources_carry_their_own_kinds():
    paths = core()["paths"]
    binding = paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert binding["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    eviction = paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"]
    assert eviction["x-kubernetes-group-version-kind"] == {"group": "policy", "kind": "Eviction",
                                                           "version": "v1"}
    scale = openapi_v3_document("apps", "v1", SERVED)["paths"][
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert set(scale) >= {"get", "put", "patch"}
    assert scale["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": SCHEMA + "io.k8s.api.autoscaling.v1.Scale"}


def test_a_create_only_kind_has_only_a_post():
    doc = openapi_v3_document("authorization.k8s.io", "v1", SERVED)
    assert set(doc["paths"]) == {"/apis/authorization.k8s.io/v1/",
                                 "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"}


def test_components_hold_every_referenced_schema():
    doc = core()
    names = set(doc["components"]["schemas"])
    assert {"io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList",
            "io.k8s.api.core.v1.Container", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "io.k8s.api.policy.v1.Eviction"} <= names
    assert "io.k8s.api.apps.v1.Deployment" not in names

    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                yield node["$ref"][len(SCHEMA):]
            for v in node.values():
                yield from refs(v)
        elif isinstance(node, list):
            for v in node:
                yield from refs(v)
    assert set(refs(doc)) <= names


def test_shared_meta_kinds_list_core_and_the_documents_group_version_only():
    doc = openapi_v3_document("apps", "v1", SERVED)
    gvks = doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"][
        "x-kubernetes-group-version-kind"]
    assert gvks == [{"group": "", "kind": "DeleteOptions", "version": "v1"},
                    {"group": "apps", "kind": "DeleteOptions", "version": "v1"}]


def test_a_kind_without_a_schema_gets_an_open_placeholder():
    doc = openapi_v3_document("example.com", "v1", SERVED)
    widget = doc["components"]["schemas"]["io.k8s.api.example.v1.Widget"]
    assert widget["x-kubernetes-preserve-unknown-fields"] is True
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.com",
                                                          "kind": "Widget", "version": "v1"}]


def test_documents_are_fresh_copies():
    core()["paths"].clear()
    assert core()["paths"]


def test_swagger_v2_uses_definitions_and_body_parameters():
    doc = openapi_v2_document(SERVED)
    assert doc["swagger"] == "2.0"
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    body = patch["parameters"][0]
    assert body["in"] == "body"
    assert body["schema"] == {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}
    spec = doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
    assert "allOf" not in spec
    quantity = doc["definitions"]["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["type"] == "string"
