"""Structural schemas of every served kind, loaded from the JSON files beside this module.

Each `<group>__<version>.json` (and `meta.json`) holds `{"components": {"schemas": {...}}}`
in upstream's OpenAPI v3 form (see openapi/README.md). All files share one namespace of
definition names (`io.k8s.api.core.v1.Pod`, `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`).

    definition(name) -> dict
    for_kind(group, version, kind) -> (name, dict)
    unknown_fields(group, version, kind, obj) -> [".spec.foo", ...]
    check_request(group, version, kind, obj, old, format_time) -> Findings (one pass)
    prune(group, version, kind, obj) -> obj without unknown fields
    patch_meta(group, version, kind) -> SchemaNode (patch strategies, list and map types)
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from draemu.openapi.schemas.fields import (
    Findings,
    TimeFormatter,
    drop_null_fields,
    duplicate_fields,
    find_unknown,
    first_type_error,
    json_patch_field_errors,
    prune_unknown,
    strict_errors,
    strict_message,
)
from draemu.openapi.schemas.fields import check_request as check_request_of
from draemu.openapi.schemas.node import SchemaNode

DATA_DIR = Path(__file__).parent
REF_PREFIX = "#/components/schemas/"

__all__ = [
    "DATA_DIR",
    "REF_PREFIX",
    "Findings",
    "SchemaNode",
    "check_request",
    "definition",
    "definitions",
    "duplicate_fields",
    "for_kind",
    "has_kind",
    "json_patch_field_errors",
    "patch_meta",
    "prune",
    "reload",
    "strict_decoding_errors",
    "strict_message",
    "type_error",
    "unknown_fields",
]


@lru_cache(maxsize=1)
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition of every schema file, by name."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(DATA_DIR.glob("*.json")):
        schemas = json.loads(path.read_text())["components"]["schemas"]
        out.update(schemas)
    return out


@lru_cache(maxsize=1)
def _kinds() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            key = (gvk["group"], gvk["version"], gvk["kind"])
            # Shared meta types (DeleteOptions, WatchEvent) carry many GVKs; a kind's own
            # definition (same short name) wins.
            if key not in index or name.rsplit(".", 1)[-1] == gvk["kind"]:
                index[key] = name
    return index


def reload() -> None:
    """Forget the loaded files (tests that add schema files call this)."""
    definitions.cache_clear()
    _kinds.cache_clear()
    patch_meta.cache_clear()


def definition(name: str) -> dict[str, Any]:
    """The schema named `name` (a bare name or a `#/components/schemas/` reference)."""
    name = name.removeprefix(REF_PREFIX)
    return definitions()[name]


def has_kind(group: str, version: str, kind: str) -> bool:
    return (group, version, kind) in _kinds()


def for_kind(group: str, version: str, kind: str) -> tuple[str, dict[str, Any]]:
    """The definition of a kind; KeyError when no schema file declares it."""
    name = _kinds()[(group, version, kind)]
    return name, definitions()[name]


@cache
def patch_meta(group: str, version: str, kind: str) -> SchemaNode:
    """The root of a kind's schema, for strategic merge patch and server-side apply.

    A kind without a schema gets an open node: lists replace, maps merge."""
    if not has_kind(group, version, kind):
        return SchemaNode(None, definition)
    return SchemaNode(for_kind(group, version, kind)[1], definition)


def unknown_fields(group: str, version: str, kind: str, obj: Any,
                   sort_keys: bool = False) -> list[str]:
    """Paths of fields the kind's schema does not declare, in document order, as
    `.spec.foo` / `.spec.containers[0].bar` (see `strict_message` for the wording
    clients see). A kind without a schema reports nothing.

    `sort_keys=True` walks keys in sorted order, as upstream reports the unknown fields
    of a patched object (merge, strategic and JSON patches), after the patch's own
    `duplicate_fields` / `json_patch_field_errors`."""
    return find_unknown(patch_meta(group, version, kind), obj, sort_keys)


def type_error(group: str, version: str, kind: str, obj: Any) -> str | None:
    """The first field whose JSON type the kind's schema does not allow, as Go's decoder
    reports it (`json: cannot unmarshal string into Go struct field DeploymentSpec.spec.
    replicas of type int32`); kube-apiserver answers 400 `<Kind> in version "<v>" cannot
    be handled as a <Kind>: <that text>`. None when every value fits."""
    return first_type_error(patch_meta(group, version, kind), obj, kind)


def check_request(group: str, version: str, kind: str, obj: dict[str, Any],
                  old: dict[str, Any] | None, format_time: TimeFormatter) -> Findings:
    """`type_error`, `drop_nulls`, timestamp rewriting and `unknown_fields` of a request
    body in one pass; subtrees strictly equal to those of `old` (a stored object of the
    same version, or None) are taken as checked. See `fields.check_request`."""
    return check_request_of(patch_meta(group, version, kind), obj, old, kind, format_time)


def drop_nulls(group: str, version: str, kind: str, obj: Any) -> None:
    """Remove `null` struct fields from `obj` in place, as Go's decoder reads them."""
    drop_null_fields(patch_meta(group, version, kind), obj)


def strict_decoding_errors(group: str, version: str, kind: str,
                           body: str | bytes) -> list[str]:
    """The strict-decoding errors of a raw JSON request body, as kube-apiserver lists
    them (duplicate and unknown fields in document order):
    `['duplicate field "metadata.name"', 'unknown field "spec.foo"']`. Strict answers
    400 `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error:
    <joined with ", ">`; Warn sends each as a Warning header. Raises ValueError on
    invalid JSON."""
    return strict_errors(patch_meta(group, version, kind), body)


def prune(group: str, version: str, kind: str, obj: Any) -> Any:
    """A copy of `obj` without the fields its schema does not declare
    (`fieldValidation=Ignore`/`Warn`)."""
    return prune_unknown(patch_meta(group, version, kind), obj)
