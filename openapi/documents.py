"""OpenAPI v3 documents (`/openapi/v3`), built from the served strategies and the schemas.

`openapi_v3_document(group, version, strategies)` has what kubectl reads: a path per
resource with operations carrying `x-kubernetes-group-version-kind` (an object), PATCH
operations with the `fieldValidation` parameter and the four patch content types, and
`components.schemas` with every schema the paths reach (kinds carry their GVKs as a
list). `openapi_v3_index(strategies)` lists one URL per group-version with a hash of its
document, so that clients re-fetch exactly when a document changes.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from draemu.openapi import schemas
from draemu.openapi.operations import Operation, Param, PathItem, path_items

REF = schemas.REF_PREFIX
INFO = {"title": "Kubernetes", "version": "v1.37.0"}


def signature(strategies: Iterable[Any]) -> tuple[Any, ...]:
    """What the documents depend on, hashable (strategies are plain objects). Kinds with
    a schema of their own (custom resources) carry it as JSON text per version."""
    return tuple(sorted((s.group, tuple(s.versions), s.kind, s.resource, bool(s.namespaced),
                         tuple(sorted(s.subresources)), tuple(sorted(s.verbs)),
                         _own_schemas(s))
                        for s in strategies))


def _own_schemas(strategy: Any) -> tuple[tuple[str, str], ...]:
    own = []
    for version in strategy.versions:
        definition = strategy.openapi_schema(version)
        if definition is not None:
            own.append((version, json.dumps(definition, sort_keys=True)))
    return tuple(own)


class ServedKind:
    """Lightweight stand-in rebuilt from a signature (so documents can be cached)."""

    def __init__(self, sig: tuple[Any, ...]) -> None:
        (self.group, self.versions, self.kind, self.resource, self.namespaced,
         subresources, self.verbs, own) = sig
        self.subresources = frozenset(subresources)
        self.own = {version: json.loads(text) for version, text in own}


def own_definitions(served: Iterable[Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(group, version, kind) -> definition of the kinds that bring their schema."""
    return {(s.group, v, s.kind): d for s in served for v, d in s.own.items()}


def own_name(group: str, version: str, kind: str) -> str:
    """Upstream names a custom resource's definition by its reversed group:
    `com.example.stable.v1.CronTab`."""
    return ".".join([*reversed(group.split(".")), version, kind])


def group_versions(strategies: Iterable[Any]) -> list[tuple[str, str]]:
    seen = {(s.group, v) for s in strategies for v in s.versions}
    return sorted(seen)


def document_key(group: str, version: str) -> str:
    """The index key and URL path of a group-version: `api/v1`, `apis/apps/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_index(strategies: list[Any]) -> dict[str, Any]:
    sig = signature(strategies)
    paths = {}
    for group, version in group_versions(strategies):
        key = document_key(group, version)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash="
                                           f"{_hashed(group, version, sig)[1]}"}
    return {"paths": dict(sorted(paths.items()))}


def openapi_v3_document(group: str, version: str, strategies: list[Any]) -> dict[str, Any]:
    """The document of one group-version (a fresh copy; callers may change it)."""
    return json.loads(_hashed(group, version, signature(strategies))[0])


def document_hash(group: str, version: str, strategies: list[Any]) -> str:
    return _hashed(group, version, signature(strategies))[1]


@lru_cache(maxsize=64)
def _hashed(group: str, version: str, sig: tuple[Any, ...]) -> tuple[str, str]:
    served = [ServedKind(s) for s in sig if s[0] == group and version in s[1]]
    doc = _build_v3(group, version, served)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return text, hashlib.sha512(text.encode()).hexdigest().upper()


class SchemaSet:
    """The schemas a document needs: referenced kinds and everything they reach.
    A kind without a schema file gets an open placeholder so that its paths still
    resolve (its objects are then checked by the server alone)."""

    def __init__(self, group: str, version: str, narrow_gvks: bool = True,
                 own: dict[tuple[str, str, str], dict[str, Any]] | None = None) -> None:
        self.group, self.version, self.narrow_gvks = group, version, narrow_gvks
        self.names: dict[str, dict[str, Any]] = {}
        self.own = own or {}

    def name(self, group: str, version: str, kind: str) -> str:
        own = self.own.get((group, version, kind))
        if own is not None:
            name = own_name(group, version, kind)
            self._add(name, own)
            return name
        base = self.own.get((group, version, kind.removesuffix("List")))
        if kind.endswith("List") and base is not None:
            return self._own_list(group, version, kind)
        if schemas.has_kind(group, version, kind):
            name, definition = schemas.for_kind(group, version, kind)
            self._add(name, definition)
            return name
        package = group.split(".")[0] if group else "core"
        name = f"io.k8s.api.{package}.{version}.{kind}"
        self.names.setdefault(name, {
            "description": f"{kind} ({group or 'core'}/{version}); served without a "
                           "published schema.",
            "type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [{"group": group, "kind": kind,
                                                 "version": version}]})
        return name

    def _own_list(self, group: str, version: str, kind: str) -> str:
        item = self.name(group, version, kind.removesuffix("List"))
        name = own_name(group, version, kind)
        self.names[name] = {
            "description": f"{kind} is a list of {kind.removesuffix('List')}",
            "type": "object", "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the "
                               "versioned schema of this representation of an object."},
                "items": {"type": "array", "description": f"List of {kind.lower()[:-4]}s.",
                          "items": {"$ref": REF + item}},
                "kind": {"type": "string", "description": "Kind is a string value "
                         "representing the REST resource this object represents."},
                "metadata": {"allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1."
                                        "ListMeta"}],
                             "description": "Standard list metadata."}},
            "x-kubernetes-group-version-kind": [{"group": group, "kind": kind,
                                                 "version": version}]}
        self.ref("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")
        return name

    def ref(self, name: str) -> str:
        if name not in self.names:
            self._add(name, schemas.definition(name))
        return name

    def _add(self, name: str, definition: dict[str, Any]) -> None:
        todo = [(name, definition)]
        while todo:
            current, body = todo.pop()
            if current in self.names:
                continue
            self.names[current] = self._own_gvks(body)
            todo.extend((r, schemas.definition(r)) for r in _refs(body))

    def _own_gvks(self, body: dict[str, Any]) -> dict[str, Any]:
        """Shared meta kinds (DeleteOptions, WatchEvent) list only core/v1 and this
        document's group-version, as upstream's per-group-version documents do."""
        gvks = body.get("x-kubernetes-group-version-kind")
        if not self.narrow_gvks or not gvks or len(gvks) < 2:
            return body
        mine = [g for g in gvks if (g["group"], g["version"]) in
                (("", "v1"), (self.group, self.version))]
        if not mine or len(mine) == len(gvks):
            return body
        return {**body, "x-kubernetes-group-version-kind": mine}


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"][len(REF):]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _build_v3(group: str, version: str, served: list[Any]) -> dict[str, Any]:
    needed = SchemaSet(group, version, own=own_definitions(served))
    items = path_items(group, version, served, needed.name)
    paths = {item.path: _path_item(item, needed) for item in items}
    return {"openapi": "3.0.0", "info": dict(INFO), "paths": paths,
            "components": {"schemas": {n: copy.deepcopy(needed.names[n])
                                       for n in sorted(needed.names)}}}


def _param(p: Param) -> dict[str, Any]:
    out: dict[str, Any] = {"description": p.description, "in": p.where, "name": p.name,
                           "schema": {"type": p.kind, "uniqueItems": True}}
    if p.where == "path":
        out["required"] = True
    return out


def _content(schema: str, types: Iterable[str]) -> dict[str, Any]:
    return {t: {"schema": {"$ref": REF + schema}} for t in types}


def _path_item(item: PathItem, needed: SchemaSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if item.params:
        out["parameters"] = [_param(p) for p in sorted(item.params, key=lambda p: p.name)]
    for op in item.operations:
        out[op.method] = _operation(op, needed)
    return out


_DESCRIPTIONS = {"200": "OK", "201": "Created", "202": "Accepted"}


def _operation(op: Operation, needed: SchemaSet) -> dict[str, Any]:
    out: dict[str, Any] = {"description": op.description, "operationId": op.operation_id}
    if op.params:
        out["parameters"] = [_param(p) for p in sorted(op.params, key=lambda p: p.name)]
    if op.body:
        out["requestBody"] = {"content": _content(needed.ref(op.body), op.body_types)}
        if op.method != "delete":
            out["requestBody"]["required"] = True
    responses: dict[str, Any] = {}
    for code, schema in op.responses.items():
        entry: dict[str, Any] = {"description": _DESCRIPTIONS.get(code, "OK")}
        if schema:
            entry["content"] = _content(needed.ref(schema), op.response_types)
        responses[code] = entry
    responses["401"] = {"description": "Unauthorized"}
    out["responses"] = responses
    out["tags"] = [op.tag]
    if op.action:
        out["x-kubernetes-action"] = op.action
    if op.gvk:
        out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out

