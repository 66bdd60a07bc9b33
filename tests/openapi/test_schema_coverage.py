"""Our schema files against upstream's machine-readable schemas (kubernetes-validate 1.37)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from draemu.openapi import schemas

pytestmark = pytest.mark.unit

UPSTREAM = json.loads((Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
                       / "v1.37.0-local" / "_definitions.json").read_text())["$defs"]

SERVED = [
    ("", "v1", "Namespace"), ("", "v1", "Node"), ("", "v1", "Pod"), ("", "v1", "Event"),
    ("", "v1", "ConfigMap"), ("", "v1", "Secret"), ("", "v1", "ServiceAccount"),
    ("", "v1", "Service"), ("", "v1", "Binding"), ("events.k8s.io", "v1", "Event"),
    ("coordination.k8s.io", "v1", "Lease"), ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"), ("batch", "v1", "Job"), ("autoscaling", "v1", "Scale"),
    ("policy", "v1", "Eviction"), ("authentication.k8s.io", "v1", "TokenRequest"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("", "v1", "Endpoints"), ("", "v1", "PersistentVolume"), ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "ReplicationController"), ("", "v1", "ResourceQuota"), ("", "v1", "LimitRange"),
    ("apps", "v1", "DaemonSet"), ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "ControllerRevision"), ("batch", "v1", "CronJob"),
    ("policy", "v1", "PodDisruptionBudget"), ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("discovery.k8s.io", "v1", "EndpointSlice"), ("scheduling.k8s.io", "v1", "PriorityClass"),
    ("storage.k8s.io", "v1", "StorageClass"), ("storage.k8s.io", "v1", "CSINode"),
    ("storage.k8s.io", "v1", "CSIDriver"), ("storage.k8s.io", "v1", "CSIStorageCapacity"),
    ("storage.k8s.io", "v1", "VolumeAttachment"),
    ("storage.k8s.io", "v1", "VolumeAttributesClass"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ("certificates.k8s.io", "v1", "ClusterTrustBundle"),
    ("certificates.k8s.io", "v1", "PodCertificateRequest"),
    ("networking.k8s.io", "v1", "ServiceCIDR"), ("networking.k8s.io", "v1", "IPAddress"),
    ("storagemigration.k8s.io", "v1", "StorageVersionMigration"),
    ("networking.k8s.io", "v1", "Ingress"), ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy"), ("node.k8s.io", "v1", "RuntimeClass"),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"),
]
EXTENSIONS = ("x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
              "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type")


def closure(name: str) -> set[str]:
    """Every upstream definition reachable from `name`."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(_refs(UPSTREAM[current]))
    return seen


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"].rsplit("/", 1)[-1]] if isinstance(node.get("$ref"), str) else []
        for value in node.values():
            out.extend(_refs(value))
        return out
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _ref_of(prop: dict[str, Any]) -> str | None:
    ref = prop.get("$ref") or (prop.get("allOf") or [{}])[0].get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def _type(prop: dict[str, Any]) -> str | None:
    value = prop.get("type")
    if isinstance(value, list):
        value = next((t for t in value if t != "null"), None)
    return value


@pytest.mark.parametrize("gvk", SERVED, ids=lambda g: f"{g[0] or 'core'}/{g[1]}/{g[2]}")
def test_every_upstream_field_of_a_served_kind_is_in_our_schema(gvk):
    name, _ = schemas.for_kind(*gvk)
    for upstream_name in sorted(closure(name)):
        ours = schemas.definition(upstream_name)
        theirs = UPSTREAM[upstream_name]
        assert set(ours.get("properties", {})) == set(theirs.get("properties", {})), upstream_name
        assert sorted(ours.get("required", [])) == sorted(theirs.get("required", [])), upstream_name
        for prop, their_prop in theirs.get("properties", {}).items():
            our_prop = ours["properties"][prop]
            where = f"{upstream_name}.{prop}"
            assert _ref_of(our_prop) == _ref_of(their_prop), where
            assert our_prop.get("type") == _type(their_prop), where
            assert our_prop.get("format") == their_prop.get("format"), where
            for ext in EXTENSIONS:
                assert our_prop.get(ext) == their_prop.get(ext), f"{where} {ext}"
            if "items" in their_prop:
                assert _ref_of(our_prop["items"]) == _ref_of(their_prop["items"]), where


def test_kinds_carry_their_group_version_kind_as_a_list():
    _, pod = schemas.for_kind("", "v1", "Pod")
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]


def test_a_reference_property_is_wrapped_in_all_of_with_a_description():
    _, pod = schemas.for_kind("", "v1", "Pod")
    spec = pod["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert spec["description"]


def test_every_schema_and_property_has_a_description():
    for name, schema in schemas.definitions().items():
        assert schema.get("description"), name
        for prop, sub in schema.get("properties", {}).items():
            assert sub.get("description"), f"{name}.{prop}"


def test_int_or_string_is_a_formatted_string_as_upstream_publishes_it():
    ios = schemas.definition("io.k8s.apimachinery.pkg.util.intstr.IntOrString")
    assert (ios["type"], ios["format"]) == ("string", "int-or-string")


def test_list_map_key_with_an_upstream_default_keeps_it():
    port = schemas.definition("io.k8s.api.core.v1.ContainerPort")
    assert port["properties"]["protocol"]["default"] == "TCP"


def test_every_reference_resolves_to_a_definition():
    names = set(schemas.definitions())
    for name, schema in schemas.definitions().items():
        for ref in _refs(schema):
            assert ref in names, f"{name} -> {ref}"


def test_the_committed_schema_files_are_what_the_generator_writes():
    script = Path(schemas.DATA_DIR).parent / "tools" / "generate.py"
    spec = importlib.util.spec_from_file_location("draemu_openapi_generate", script)
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    source = generate.source_definitions()
    docs = {t: generate.build(t, source) for t in generate.DEFAULT_TARGETS}
    docs.update(generate.foreign_packages(docs, source))
    for target, doc in docs.items():
        path = Path(schemas.DATA_DIR) / generate.file_name(target)
        assert json.loads(path.read_text()) == doc, f"{path.name} is stale: run generate.py"
