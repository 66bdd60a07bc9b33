"""Generate draemu's schema data (`openapi/schemas/*.json`) from an upstream schema package.

Facts (definition names, types, formats, `$ref`s, `required`, list and map types, patch
strategies and merge keys, group-version-kinds, unions) come from the JSON schemas that
the PyPI package `kubernetes-validate` ships for each Kubernetes release. The output is
written in upstream's OpenAPI v3 component form (see openapi/README.md); descriptions are
our own short phrases, derived from names.

    .venv/bin/python openapi/tools/generate.py                 # every file we own
    .venv/bin/python openapi/tools/generate.py resource.k8s.io/v1 --out DIR
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

RELEASE = "v1.37.0-local"
OUT = Path(__file__).resolve().parent.parent / "schemas"
REF_PREFIX = "#/components/schemas/"

# group/version -> the Go package whose definitions the file holds.
PACKAGES = {
    "core/v1": "io.k8s.api.core.v1",
    "apps/v1": "io.k8s.api.apps.v1",
    "batch/v1": "io.k8s.api.batch.v1",
    "autoscaling/v1": "io.k8s.api.autoscaling.v1",
    "coordination.k8s.io/v1": "io.k8s.api.coordination.v1",
    "events.k8s.io/v1": "io.k8s.api.events.v1",
    "authorization.k8s.io/v1": "io.k8s.api.authorization.v1",
    "authentication.k8s.io/v1": "io.k8s.api.authentication.v1",
    "policy/v1": "io.k8s.api.policy.v1",
    "admissionregistration.k8s.io/v1": "io.k8s.api.admissionregistration.v1",
    "apiextensions.k8s.io/v1": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
    "rbac.authorization.k8s.io/v1": "io.k8s.api.rbac.v1",
    "autoscaling/v2": "io.k8s.api.autoscaling.v2",
    "discovery.k8s.io/v1": "io.k8s.api.discovery.v1",
    "scheduling.k8s.io/v1": "io.k8s.api.scheduling.v1",
    "storage.k8s.io/v1": "io.k8s.api.storage.v1",
    "certificates.k8s.io/v1": "io.k8s.api.certificates.v1",
    "networking.k8s.io/v1": "io.k8s.api.networking.v1",
    "storagemigration.k8s.io/v1": "io.k8s.api.storagemigration.v1",
    "apiregistration.k8s.io/v1": "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
    "node.k8s.io/v1": "io.k8s.api.node.v1",
    "flowcontrol.apiserver.k8s.io/v1": "io.k8s.api.flowcontrol.v1",
    "resource.k8s.io/v1": "io.k8s.api.resource.v1",
    "resource.k8s.io/v1beta2": "io.k8s.api.resource.v1beta2",
    "resource.k8s.io/v1beta1": "io.k8s.api.resource.v1beta1",
    "resource.k8s.io/v1alpha3": "io.k8s.api.resource.v1alpha3",
}
# Written by default; resource.k8s.io files belong to the DRA API owner (they may run
# this script for them).
DEFAULT_TARGETS = [gv for gv in PACKAGES if not gv.startswith("resource.k8s.io/")] + ["meta"]
META_PREFIX = "io.k8s.apimachinery."
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# Upstream `+default=` markers on fields we serve (kubernetes-validate drops `default`).
# List-map keys among them matter to server-side apply (a missing key takes its default).
MARKED_DEFAULTS = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.EndpointPort", "protocol"): "TCP",
    ("io.k8s.api.resource.v1.DeviceToleration", "operator"): "Equal",
    ("io.k8s.api.resource.v1beta2.DeviceToleration", "operator"): "Equal",
    ("io.k8s.api.resource.v1beta1.DeviceToleration", "operator"): "Equal",
    ("io.k8s.api.resource.v1alpha3.DeviceToleration", "operator"): "Equal",
}

# Meta types that upstream serves but does not publish in its OpenAPI documents.
EXTRA_META: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.Table": {
        "type": "object",
        "required": ["columnDefinitions", "rows"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
            "columnDefinitions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
                "$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition"}},
            "rows": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
                "$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.TableRow"}},
        },
        "x-kubernetes-group-version-kind": [
            {"group": "meta.k8s.io", "version": "v1", "kind": "Table"},
            {"group": "meta.k8s.io", "version": "v1beta1", "kind": "Table"}],
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.TableColumnDefinition": {
        "type": "object",
        "required": ["name", "type", "format", "description", "priority"],
        "properties": {
            "name": {"type": "string"}, "type": {"type": "string"},
            "format": {"type": "string"}, "description": {"type": "string"},
            "priority": {"type": "integer", "format": "int32"},
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.TableRow": {
        "type": "object",
        "required": ["cells"],
        "properties": {
            "cells": {"type": "array", "x-kubernetes-list-type": "atomic",
                      "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "conditions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
                "$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition"}},
            "object": {"$ref": "io.k8s.apimachinery.pkg.runtime.RawExtension"},
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.TableRowCondition": {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"}, "status": {"type": "string"},
            "reason": {"type": "string"}, "message": {"type": "string"},
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata": {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        },
        "x-kubernetes-group-version-kind": [
            {"group": "meta.k8s.io", "version": "v1", "kind": "PartialObjectMetadata"},
            {"group": "meta.k8s.io", "version": "v1beta1", "kind": "PartialObjectMetadata"}],
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList": {
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"},
            "items": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
                "$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata"}},
        },
        "x-kubernetes-group-version-kind": [
            {"group": "meta.k8s.io", "version": "v1", "kind": "PartialObjectMetadataList"},
            {"group": "meta.k8s.io", "version": "v1beta1", "kind": "PartialObjectMetadataList"}],
    },
}

# Our own one-line descriptions of the kinds and fields people explain most; everything
# else gets a phrase derived from its name.
TYPE_TEXT = {
    "io.k8s.api.core.v1.Pod": "Pod is a group of containers that run together on one node.",
    "io.k8s.api.core.v1.PodSpec": "PodSpec describes the containers of a pod and how to run "
                                  "them.",
    "io.k8s.api.core.v1.Container": "A container: an image to run with its command, "
                                    "environment and resources.",
    "io.k8s.api.core.v1.Node": "Node is a machine that runs pods; its kubelet reports its "
                               "status.",
    "io.k8s.api.core.v1.Namespace": "Namespace groups named objects and scopes their names.",
    "io.k8s.api.core.v1.ConfigMap": "ConfigMap holds configuration data as key-value pairs.",
    "io.k8s.api.core.v1.Secret": "Secret holds sensitive data such as passwords, tokens or "
                                 "keys.",
    "io.k8s.api.core.v1.ServiceAccount": "ServiceAccount is an identity for processes that run "
                                         "in pods.",
    "io.k8s.api.core.v1.Event": "Event reports something that happened to an object.",
    "io.k8s.api.core.v1.ResourceRequirements": "Compute resources a container asks for and may "
                                               "not exceed, and the resource claims it uses.",
    "io.k8s.api.core.v1.PodResourceClaim": "A reference from a pod to a ResourceClaim, or to a "
                                           "ResourceClaimTemplate to create one from.",
    "io.k8s.api.apps.v1.Deployment": "Deployment keeps a number of identical pods running and "
                                     "rolls out changes to them.",
    "io.k8s.api.apps.v1.ReplicaSet": "ReplicaSet keeps a number of identical pods running.",
    "io.k8s.api.batch.v1.Job": "Job runs pods until a number of them complete successfully.",
    "io.k8s.api.coordination.v1.Lease": "Lease is a time-limited claim, used for node "
                                        "heartbeats and leader election.",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": "Metadata every persisted object has: "
                                                       "name, namespace, labels, annotations, "
                                                       "owners and system fields.",
}
FIELD_TEXT = {
    ("io.k8s.api.core.v1.PodSpec", "containers"): "The containers of the pod; at least one.",
    ("io.k8s.api.core.v1.PodSpec", "initContainers"): "Containers that run to completion, in "
                                                      "order, before the other containers.",
    ("io.k8s.api.core.v1.PodSpec", "nodeName"): "The node the pod is bound to; set by the "
                                                "scheduler unless given.",
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector"): "Labels a node must have for the pod to be "
                                                    "scheduled onto it.",
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims"): "ResourceClaims the pod's containers may "
                                                      "use, by name.",
    ("io.k8s.api.core.v1.PodSpec", "tolerations"): "Taints the pod tolerates.",
    ("io.k8s.api.core.v1.Container", "name"): "Name of the container, unique in the pod.",
    ("io.k8s.api.core.v1.Container", "image"): "Container image to run.",
    ("io.k8s.api.core.v1.Container", "command"): "Entrypoint of the container; the image's "
                                                 "when empty.",
    ("io.k8s.api.core.v1.Container", "args"): "Arguments to the entrypoint.",
    ("io.k8s.api.core.v1.Container", "env"): "Environment variables of the container.",
    ("io.k8s.api.core.v1.Container", "resources"): "Compute resources and resource claims of "
                                                   "the container.",
    ("io.k8s.api.core.v1.ResourceRequirements", "claims"): "Names of the pod's resource claims "
                                                           "(spec.resourceClaims) that this "
                                                           "container uses.",
    ("io.k8s.api.core.v1.ResourceRequirements", "limits"): "Maximum amount of each compute "
                                                           "resource.",
    ("io.k8s.api.core.v1.ResourceRequirements", "requests"): "Amount of each compute resource "
                                                             "the container needs.",
    ("io.k8s.api.apps.v1.DeploymentSpec", "replicas"): "Number of pods wanted; 1 by default.",
    ("io.k8s.api.apps.v1.DeploymentSpec", "selector"): "Labels that select the pods of the "
                                                       "deployment.",
    ("io.k8s.api.apps.v1.DeploymentSpec", "template"): "The pods to create.",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name"): "Name of the object, unique "
                                                                 "in its namespace and kind.",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "namespace"): "Namespace of the object; "
                                                                      "empty for cluster-wide "
                                                                      "kinds.",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels"): "Key-value pairs that "
                                                                   "selectors match.",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "annotations"): "Key-value pairs for "
                                                                        "tools; not used to "
                                                                        "select objects.",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers"): "Cleanup that must "
                                                                       "finish before the "
                                                                       "object is deleted.",
    # Its first words are what Kubernetes' conformance test (CustomResourcePublishOpenAPI)
    # looks for in `kubectl explain <custom resource>.metadata`.
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "creationTimestamp"):
        "CreationTimestamp is a timestamp of when the server created the object (RFC 3339, "
        "UTC); set by the system, read-only, null for lists.",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "resourceVersion"): "Version of the "
                                                                            "object for "
                                                                            "concurrency "
                                                                            "control and "
                                                                            "watches; opaque.",
}

# Words that read better in capitals.
ACRONYMS = {"api", "ip", "ips", "id", "uid", "url", "dns", "tls", "cidr", "cpu", "gpu", "os",
            "tcp", "udp", "sctp", "http", "https", "grpc", "cel", "fs", "ttl", "pid", "io",
            "json", "uri", "rbd", "iscsi", "nfs", "fc", "csi", "pvc", "cidrs", "sha", "gid"}


def words(name: str) -> list[str]:
    """`nodeName` -> [node, name]; `podIPs` -> [pod, IPs]; `APIVersion` -> [API, version]."""
    parts = re.findall(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", name)
    out = []
    for p in parts:
        if len(p) > 2 and p.endswith("s") and p[:-1].isupper():
            out.append(p)  # an acronym's plural: IPs, CIDRs
        elif p.isupper() and len(p) > 1 or p.lower() in ACRONYMS:
            out.append(p.upper())
        else:
            out.append(p.lower())
    return out or [name]


def phrase(name: str) -> str:
    text = " ".join(words(name))
    return text[:1].upper() + text[1:]


def short_type(definition: str) -> str:
    return definition.rsplit(".", 1)[-1]


def group_version_of(definition: str, source: dict[str, Any] | None = None) -> str:
    """`io.k8s.api.core.v1.Pod` -> `core/v1`; `io.k8s.api.scheduling.v1alpha3.X` ->
    `scheduling.k8s.io/v1alpha3` (the group its kinds declare); meta types -> `meta`."""
    package = definition.rsplit(".", 1)[0]
    for gv, known in PACKAGES.items():
        if known == package:
            return gv
    if not definition.startswith("io.k8s.api."):
        return "meta"
    version = package.rsplit(".", 1)[1]
    for name, schema in (source or {}).items():
        if name.startswith(package + ".") and schema.get("x-kubernetes-group-version-kind"):
            return f"{schema['x-kubernetes-group-version-kind'][0]['group']}/{version}"
    return f"{package.split('.')[3]}.k8s.io/{version}"


def type_description(definition: str, schema: dict[str, Any]) -> str:
    if definition in TYPE_TEXT:
        return TYPE_TEXT[definition]
    name = short_type(definition)
    gvks = schema.get("x-kubernetes-group-version-kind") or []
    own = [g for g in gvks if g.get("kind") == name]
    if own and name.endswith("List"):
        return f"{name} is a list of {name[:-4]} objects."
    if own:
        g = own[0]
        where = f"{g['group']}/{g['version']}" if g["group"] else g["version"]
        return f"{name} is a {where} API object."
    return f"{phrase(name)} ({group_version_of(definition).replace('meta', 'meta/v1')})."


def property_description(owner: str, prop: str) -> str:
    if (owner, prop) in FIELD_TEXT:
        return FIELD_TEXT[(owner, prop)]
    owner_name = short_type(owner)
    owner_words = " ".join(words(owner_name))
    fixed = {
        "apiVersion": "The versioned schema of this object, as group/version.",
        "kind": "The kind of this object, in CamelCase.",
    }
    if prop in fixed:
        return fixed[prop]
    if prop == "metadata":
        return ("Standard list metadata." if owner_name.endswith("List")
                else "Standard object metadata.")
    if prop == "spec":
        return f"Desired state of the {owner_words}."
    if prop == "status":
        return f"Most recently observed state of the {owner_words}."
    if prop == "items" and owner_name.endswith("List"):
        return f"The {' '.join(words(owner_name[:-4]))} objects in the list."
    return f"{phrase(prop)} of the {owner_words}."


class Converter:
    """Turns kubernetes-validate's JSON Schema dialect into upstream's OpenAPI v3 form."""

    def __init__(self, source: dict[str, Any]) -> None:
        self.source = source

    def _is_struct(self, definition: str) -> bool:
        """Structs with fields; free-form objects (RawExtension, FieldsV1) get no default."""
        return "properties" in self.source.get(definition, {})

    def definition(self, name: str) -> dict[str, Any]:
        src = self.source[name]
        if name == INT_OR_STRING:
            # Upstream publishes it as a formatted string, not as a oneOf.
            return {"description": type_description(name, src), "format": "int-or-string",
                    "type": "string"}
        out = self._node(src)
        out["description"] = type_description(name, src)
        props = src.get("properties")
        if props is not None:
            required = set(src.get("required", []))
            out["properties"] = {p: self._property(name, p, s, p in required)
                                 for p, s in props.items()}
        return _ordered(out)

    def _property(self, owner: str, prop: str, src: dict[str, Any],
                  required: bool) -> dict[str, Any]:
        description = property_description(owner, prop)
        ref = src.get("$ref")
        if ref is not None:
            target = _ref_name(ref)
            out: dict[str, Any] = {"allOf": [{"$ref": REF_PREFIX + target}],
                                   "description": description}
            # Patch strategies and list/map types sit beside the reference.
            out.update({k: v for k, v in src.items() if k.startswith("x-kubernetes-")})
            # Upstream marks embedded (non-pointer) structs with an empty default; the
            # top-level parts of an object and required members are embedded.
            if self._is_struct(target) and (required or prop in ("metadata", "spec", "status")):
                out["default"] = {}
            return _ordered(out)
        out = self._node(src)
        out["description"] = description
        if prop in ("apiVersion", "kind"):
            out.pop("enum", None)
        marked = MARKED_DEFAULTS.get((owner, prop))
        if marked is not None:
            out["default"] = marked
        elif required and out.get("type") in ("string", "integer", "boolean"):
            out["default"] = {"string": "", "integer": 0, "boolean": False}[out["type"]]
        return _ordered(out)

    def _node(self, src: dict[str, Any]) -> dict[str, Any]:
        """A schema without its properties' descriptions: types, refs, extensions."""
        out: dict[str, Any] = {}
        for key, value in src.items():
            if key in ("description", "properties"):
                continue
            if key == "type":
                types = [t for t in (value if isinstance(value, list) else [value])
                         if t != "null"]
                if types:
                    out["type"] = types[0]
            elif key == "$ref":
                out["$ref"] = REF_PREFIX + _ref_name(value)
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self._node(value)
            elif key == "oneOf":
                out[key] = [self._node(v) for v in value]
            else:
                out[key] = value
        return _ordered(out)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _ordered(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in sorted(d)}


def _extra_meta() -> dict[str, dict[str, Any]]:
    """The hand-listed meta types, in the same form as converted ones."""
    out = {}
    for name, schema in EXTRA_META.items():
        converted = json.loads(json.dumps(schema))
        converted["description"] = type_description(name, schema)
        required = set(schema.get("required", []))
        for prop, sub in converted.get("properties", {}).items():
            desc = property_description(name, prop)
            if "$ref" in sub:
                target = sub.pop("$ref")
                sub["allOf"] = [{"$ref": REF_PREFIX + target}]
                if prop == "metadata":
                    sub["default"] = {}
            if "$ref" in sub.get("items", {}):
                sub["items"]["$ref"] = REF_PREFIX + sub["items"]["$ref"]
            if prop in required and sub.get("type") in ("string", "integer"):
                sub["default"] = "" if sub["type"] == "string" else 0
            sub["description"] = desc
            converted["properties"][prop] = _ordered(sub)
        out[name] = _ordered(converted)
    return out


def source_definitions(release: str = RELEASE) -> dict[str, Any]:
    import kubernetes_validate  # test/dev-only dependency; never imported at run time

    base = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / release
    return json.loads((base / "_definitions.json").read_text())["$defs"]


def file_name(target: str) -> str:
    if target == "meta":
        return "meta.json"
    group, version = target.split("/")
    return f"{group}__{version}.json"


def build(target: str, source: dict[str, Any]) -> dict[str, Any]:
    conv = Converter(source)
    if target == "meta":
        names = sorted(n for n in source if n.startswith(META_PREFIX))
        schemas = {n: conv.definition(n) for n in names}
        schemas.update(_extra_meta())
    else:
        prefix = PACKAGES[target] + "."
        names = sorted(n for n in source if n.startswith(prefix) and "." not in n[len(prefix):])
        schemas = {n: conv.definition(n) for n in names}
    return {"components": {"schemas": dict(sorted(schemas.items()))}}


def foreign_packages(docs: dict[str, dict[str, Any]], source: dict[str, Any]) -> dict[str, Any]:
    """Definitions of other packages that the written files refer to (transitively),
    grouped into their own group-version files so that every reference resolves."""
    written = {n for doc in docs.values() for n in doc["components"]["schemas"]}
    todo = [r for doc in docs.values() for r in _refs(doc)]
    extra: set[str] = set()
    while todo:
        name = todo.pop()
        if name in written or name in extra:
            continue
        extra.add(name)
        todo.extend(_refs(source[name]))
    conv = Converter(source)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(extra):
        target = group_version_of(name, source)
        doc = out.setdefault(target, {"components": {"schemas": {}}})
        doc["components"]["schemas"][name] = conv.definition(name)
    return out


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [_ref_name(node["$ref"])] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="group/version or 'meta' (default: ours)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--release", default=RELEASE)
    args = parser.parse_args(argv)
    source = source_definitions(args.release)
    targets = args.targets or DEFAULT_TARGETS
    unknown = [t for t in targets if t != "meta" and t not in PACKAGES]
    if unknown:
        print(f"unknown targets: {unknown}", file=sys.stderr)
        return 2
    docs = {t: build(t, source) for t in targets}
    if not args.targets:
        docs.update(foreign_packages(docs, source))
    for target, doc in docs.items():
        path = args.out / file_name(target)
        path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{path}: {len(doc['components']['schemas'])} schemas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
