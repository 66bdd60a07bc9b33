"""The Swagger 2.0 document (`/openapi/v2`, JSON form) of every served kind.

Same operations and schemas as the v3 documents, in Swagger 2.0's shape: body
parameters instead of request bodies, `consumes`/`produces`, `#/definitions/` references
written directly beside their description (Swagger 2.0 allows that; v3 needs `allOf`).
The protobuf form that kubectl 1.27/1.28 ask for is not produced.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any

from draemu.openapi import schemas
from draemu.openapi.documents import (
    INFO,
    SchemaSet,
    ServedKind,
    group_versions,
    own_definitions,
    signature,
)
from draemu.openapi.operations import Operation, Param, path_items

V3_REF = schemas.REF_PREFIX
V2_REF = "#/definitions/"


def openapi_v2_document(strategies: list[Any]) -> dict[str, Any]:
    return json.loads(v2_json_text(signature(strategies)))


@lru_cache(maxsize=8)
def v2_json_text(sig: tuple[Any, ...]) -> str:
    served = [ServedKind(s) for s in sig]
    own = {key: custom_resource_v2(d) for key, d in own_definitions(served).items()}
    needed = SchemaSet("", "", narrow_gvks=False, own=own)
    paths: dict[str, Any] = {}
    for group, version in group_versions(served):
        mine = [s for s in served if s.group == group and version in s.versions]
        for item in path_items(group, version, mine, needed.name):
            entry: dict[str, Any] = {}
            if item.params:
                entry["parameters"] = [_param(p) for p in sorted(item.params,
                                                                  key=lambda p: p.name)]
            for op in item.operations:
                entry[op.method] = _operation(op, needed)
            paths[item.path] = entry
    doc = {"swagger": "2.0", "info": dict(INFO), "paths": dict(sorted(paths.items())),
           "definitions": {n: _schema(needed.names[n]) for n in sorted(needed.names)},
           "securityDefinitions": {"BearerToken": {
               "description": "Bearer Token authentication", "in": "header",
               "name": "authorization", "type": "apiKey"}},
           "security": [{"BearerToken": []}]}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


# What the custom resource's definition gets beside its schema (kept as they are).
_ADDED = ("apiVersion", "kind", "metadata")


def custom_resource_v2(definition: dict[str, Any]) -> dict[str, Any]:
    """A custom resource's definition as upstream publishes it in Swagger 2.0, which
    kubectl validates with: an open root is a bare object; elsewhere the junctors go,
    nullable and open values lose their type and children (upstream's
    ToStructuralOpenAPIV2)."""
    gvk = definition.get("x-kubernetes-group-version-kind")
    if definition.get("x-kubernetes-preserve-unknown-fields"):
        return {"type": "object", "x-kubernetes-group-version-kind": gvk}
    props = definition.get("properties") or {}
    added = {name: props[name] for name in _ADDED if name in props}
    out = copy.deepcopy({k: v for k, v in definition.items() if k != "properties"})
    mine = {k: copy.deepcopy(v) for k, v in props.items() if k not in added}
    if mine:
        out["properties"] = mine
    _structural_v2(out)
    out.setdefault("properties", {}).update(added)
    return out


def _structural_v2(s: dict[str, Any]) -> None:
    for junctor in ("allOf", "oneOf", "anyOf", "not"):
        s.pop(junctor, None)
    if s.pop("nullable", False):
        # Untyped: kubectl breaks on items or properties of an untyped value.
        for key in ("type", "items", "properties"):
            s.pop(key, None)
    open_ = s.get("x-kubernetes-preserve-unknown-fields") is True
    if open_:
        s.pop("items", None)
        s.pop("properties", None)
        if s.get("x-kubernetes-embedded-resource") is True and "required" in s:
            # Upstream adds an open embedded resource's kind and apiVersion to neither.
            s["required"] = [r for r in s["required"] if r not in ("kind", "apiVersion")]
    if "items" not in s and s.get("type") == "array" or open_ and s.get("type") == "object":
        s.pop("type")
    props = s.get("properties") or {}
    if "required" in s:
        s["required"] = [r for r in s["required"]
                         if not (props.get(r) or {}).get("nullable")] or None
        additional = s.get("additionalProperties")
        if s["required"] is None or isinstance(additional, dict) and additional.get(
                "nullable"):
            del s["required"]
    children = list(props.values())
    for key in ("items", "additionalProperties"):
        if isinstance(s.get(key), dict):
            children.append(s[key])
    for child in children:
        if isinstance(child, dict):
            _structural_v2(child)


def _param(p: Param) -> dict[str, Any]:
    out: dict[str, Any] = {"description": p.description, "in": p.where, "name": p.name,
                           "type": p.kind, "uniqueItems": True}
    if p.where == "path":
        out["required"] = True
    return out


def _operation(op: Operation, needed: SchemaSet) -> dict[str, Any]:
    params = [_param(p) for p in sorted(op.params, key=lambda p: p.name)]
    if op.body:
        params.insert(0, {"in": "body", "name": "body", "required": op.method != "delete",
                          "schema": {"$ref": V2_REF + needed.ref(op.body)}})
    responses: dict[str, Any] = {}
    for code, schema in op.responses.items():
        entry: dict[str, Any] = {"description": {"201": "Created", "202": "Accepted"}.get(
            code, "OK")}
        if schema:
            entry["schema"] = {"$ref": V2_REF + needed.ref(schema)}
        responses[code] = entry
    responses["401"] = {"description": "Unauthorized"}
    out: dict[str, Any] = {"consumes": list(op.body_types), "description": op.description,
                           "operationId": op.operation_id, "produces": list(op.response_types),
                           "responses": responses, "schemes": ["https"], "tags": [op.tag]}
    if params:
        out["parameters"] = params
    if op.action:
        out["x-kubernetes-action"] = op.action
    if op.gvk:
        out["x-kubernetes-group-version-kind"] = dict(op.gvk)
    return out


def _schema(node: Any) -> Any:
    """A v3 component schema in Swagger 2.0 form."""
    if isinstance(node, list):
        return [_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    # `properties` maps names to schemas (JSONSchemaProps has properties named `allOf`,
    # `oneOf` and `$ref`): only its values are schemas.
    out = {k: ({name: _schema(sub) for name, sub in v.items()}
               if k == "properties" and isinstance(v, dict) else _schema(v))
           for k, v in node.items() if k not in ("allOf", "oneOf")}
    all_of = node.get("allOf")
    if all_of and len(all_of) == 1 and "$ref" in all_of[0]:
        out["$ref"] = all_of[0]["$ref"]
    if "oneOf" in node:
        out["type"] = "string"  # Quantity: a string in Swagger 2.0
    if isinstance(out.get("$ref"), str):
        out["$ref"] = V2_REF + out["$ref"][len(V3_REF):]
    return out
