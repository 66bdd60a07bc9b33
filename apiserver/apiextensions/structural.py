"""A custom resource's structural schema at work: pruning, defaulting and OpenAPI v3
value validation of objects, as apiextensions-apiserver does them.

`CRSchema(openapi_v3_schema)` wraps one version's `schema.openAPIV3Schema` (a
JSONSchemaProps dict). Upstream's order on a write: unknown fields are pruned (and
reported for `fieldValidation`), nulls of non-nullable fields dropped, defaults applied,
then the object is validated (type, enum, required, bounds, lengths, pattern, format,
list sets and maps) with kube-openapi's messages turned into field errors.
"""

from __future__ import annotations

import copy
import json
import math
from functools import lru_cache
from typing import Any

from draemu.api import formats
from draemu.api.errors import (
    FieldError,
    duplicate,
    go_quote,
    invalid,
    not_supported,
    required,
    too_many,
)
from draemu.api.types import Obj
from draemu.cel import regex
from draemu.openapi import schemas
from draemu.openapi.schemas.fields import find_unknown, prune_unknown
from draemu.openapi.schemas.node import SchemaNode

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# Fields every object has beside its schema (and every embedded resource).
IMPLICIT = ("apiVersion", "kind", "metadata")


def is_preserving(schema: Obj) -> bool:
    return bool(schema.get("x-kubernetes-preserve-unknown-fields"))


def _child_paths(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# Pruning -----------------------------------------------------------------------------------


def prune(obj: Any, schema: Obj, unknown: list[str], *, root: bool = True) -> Any:
    """Remove fields the schema does not declare, in place where possible; returns the
    pruned value. `unknown` receives their paths (`.spec.foo`) in document order."""
    return _prune(obj, schema, "", unknown, root or bool(schema.get(
        "x-kubernetes-embedded-resource")))


def _prune(value: Any, schema: Obj, path: str, unknown: list[str], resource: bool) -> Any:
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = is_preserving(schema)
        if props is None and isinstance(additional, dict):
            for key, sub in value.items():
                value[key] = _prune(sub, additional, f"{path}.{key}", unknown,
                                    bool(additional.get("x-kubernetes-embedded-resource")))
            return value
        props = props or {}
        for key in list(value):
            sub_path = f"{path}.{key}"
            sub_schema = props.get(key)
            if resource and key in IMPLICIT and sub_schema is None:
                if key == "metadata":
                    value[key] = _prune_meta(value[key], sub_path, unknown)
                continue
            if sub_schema is None:
                if preserve or additional is True:
                    continue
                unknown.append(sub_path)
                del value[key]
                continue
            if resource and key == "metadata":
                value[key] = _prune_meta(value[key], sub_path, unknown)
                continue
            value[key] = _prune(value[key], sub_schema, sub_path, unknown,
                                bool(sub_schema.get("x-kubernetes-embedded-resource")))
        return value
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            embedded = bool(items.get("x-kubernetes-embedded-resource"))
            return [_prune(v, items, f"{path}[{i}]", unknown, embedded)
                    for i, v in enumerate(value)]
    return value


def _prune_meta(meta: Any, path: str, unknown: list[str]) -> Any:
    """metadata is pruned against ObjectMeta, as upstream does for custom resources."""
    if not isinstance(meta, dict):
        return meta
    node = object_meta_node()
    for found in find_unknown(node, meta):
        unknown.append(path + found)
    return prune_unknown(node, meta)


@lru_cache(maxsize=1)
def object_meta_node() -> SchemaNode:
    return SchemaNode({"$ref": schemas.REF_PREFIX + OBJECT_META}, schemas.definition)


# Nulls and defaults ----------------------------------------------------------------------


def default(value: Any, schema: Obj, prune_nulls: bool = True) -> Any:
    """Drop `null`s of non-nullable fields (unless not `prune_nulls`: objects read from
    storage) and fill in `default:` values (in place); returns the value."""
    if isinstance(value, dict):
        props = schema.get("properties")
        if props:
            for key, sub in props.items():
                if prune_nulls and key in value and value[key] is None \
                        and not sub.get("nullable"):
                    del value[key]
                if key not in value and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                if key in value:
                    value[key] = default(value[key], sub, prune_nulls)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in list(value):
                if prune_nulls and value[key] is None and not additional.get("nullable"):
                    del value[key]
                else:
                    value[key] = default(value[key], additional, prune_nulls)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                value[i] = default(v, items, prune_nulls)
    return value


def has_defaults(schema: Any) -> bool:
    """Whether a schema sets a `default` anywhere (below its root: a root default is
    not allowed)."""
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties")
    if isinstance(props, dict) and any("default" in sub or has_defaults(sub)
                                       for sub in props.values() if isinstance(sub, dict)):
        return True
    return has_defaults(schema.get("additionalProperties")) or has_defaults(schema.get("items"))


# Validation --------------------------------------------------------------------------------

_GO_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object",
             list: "array", type(None): "null"}


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float) and value.is_integer():
        return "integer"
    return _GO_TYPES.get(type(value), "object")


def _fits(value: Any, wanted: str) -> bool:
    actual = json_type(value)
    if wanted == "number":
        return actual in ("number", "integer")
    return actual == wanted


def go_number(value: Any) -> str:
    """A float64 as Go's %v prints it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _go_value(value: Any) -> str:
    """%v of a decoded JSON value (enum lists)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return go_number(value)
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value, separators=(",", ":"))


NO_OLD = object()  # no correlated old value (a create, or an uncorrelatable part)


class Validator:
    """kube-openapi's schema validator for one schema tree (messages as upstream), with
    upstream's ratcheting on updates: a value equal to its correlated old value (same
    property, map key or list-map key) is not validated again, so tightening a CRD's
    schema does not make unchanged parts of stored objects unwritable."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def validate(self, value: Any, schema: Obj, path: str, old: Any = NO_OLD) -> None:
        if old is not NO_OLD and _equal_deep(value, old):
            return
        name = path or "."
        errs = self.errors
        if value is None:
            if schema.get("nullable") or not schema.get("type") and not _is_int_or_string(
                    schema):
                return
            if schema.get("type"):
                errs.append(FieldError("TypeInvalid", path, "null",
                                       f"{name} in body must be of type "
                                       f"{schema['type']}: \"null\""))
            return
        if _is_int_or_string(schema):
            if json_type(value) not in ("integer", "string"):
                errs.append(FieldError(
                    "TypeInvalid", path, value,
                    f"{name} in body must be of type integer,string: "
                    f"{go_quote(json_type(value))}"))
                return
        wanted = schema.get("type")
        if wanted and not _fits(value, wanted):
            errs.append(FieldError("TypeInvalid", path, value,
                                   f"{name} in body must be of type {wanted}: "
                                   f"{go_quote(json_type(value))}"))
            return
        fmt = schema.get("format")
        if fmt and isinstance(value, str) and not formats.valid(fmt, value):
            errs.append(FieldError("TypeInvalid", path, value,
                                   f"{name} in body must be of type {fmt}: {go_quote(value)}"))
        enum = schema.get("enum")
        if enum is not None and not any(_equal(value, e) for e in enum):
            errs.append(not_supported(path, value, [_go_value(e) for e in enum]))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._number(value, schema, path, name)
        elif isinstance(value, str):
            self._string(value, schema, path, name)
        elif isinstance(value, list):
            self._array(value, schema, path, name, old)
        elif isinstance(value, dict):
            self._object(value, schema, path, name, old)
        for sub in schema.get("allOf") or ():
            self.validate(value, sub, path)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if options:
                passing = sum(1 for sub in options if _passes(value, sub, path))
                if key == "anyOf" and passing == 0:
                    errs.append(invalid(path, _shown(value), f"{name} in body must "
                                        "validate at least one schema (anyOf)"))
                elif key == "oneOf" and passing != 1:
                    errs.append(invalid(path, _shown(value), f"{name} in body must "
                                        "validate one and only one schema (oneOf)"))
        negated = schema.get("not")
        if isinstance(negated, dict) and _passes(value, negated, path):
            errs.append(invalid(path, _shown(value),
                                f"{name} in body must not validate the schema (not)"))

    def _number(self, value: float, schema: Obj, path: str, name: str) -> None:
        errs = self.errors
        maximum, minimum = schema.get("maximum"), schema.get("minimum")
        if maximum is not None:
            if schema.get("exclusiveMaximum") and value >= maximum:
                errs.append(invalid(path, value, f"{name} in body should be less than "
                                    f"{go_number(maximum)}"))
            elif value > maximum:
                errs.append(invalid(path, value, f"{name} in body should be less than or "
                                    f"equal to {go_number(maximum)}"))
        if minimum is not None:
            if schema.get("exclusiveMinimum") and value <= minimum:
                errs.append(invalid(path, value, f"{name} in body should be greater than "
                                    f"{go_number(minimum)}"))
            elif value < minimum:
                errs.append(invalid(path, value, f"{name} in body should be greater than or "
                                    f"equal to {go_number(minimum)}"))
        factor = schema.get("multipleOf")
        if factor:
            ratio = value / factor
            if not math.isclose(ratio, round(ratio), rel_tol=0, abs_tol=1e-9):
                errs.append(invalid(path, value, f"{name} in body should be a multiple of "
                                    f"{go_number(factor)}"))

    def _string(self, value: str, schema: Obj, path: str, name: str) -> None:
        errs = self.errors
        length = len(value)
        longest, shortest = schema.get("maxLength"), schema.get("minLength")
        if longest is not None and length > longest:
            errs.append(FieldError("TooLong", path, None, f"may not be more than {longest} "
                                   f"{'byte' if longest == 1 else 'bytes'}"))
        if shortest is not None and length < shortest:
            errs.append(invalid(path, value, f"{name} in body should be at least {shortest} "
                                "chars long"))
        pattern = schema.get("pattern")
        if pattern is not None:
            compiled = compile_pattern(pattern)
            if compiled is not None and not compiled.search(value):
                errs.append(invalid(path, value, f"{name} in body should match '{pattern}'"))

    def _array(self, value: list[Any], schema: Obj, path: str, name: str, old: Any) -> None:
        errs = self.errors
        most, least = schema.get("maxItems"), schema.get("minItems")
        if most is not None and len(value) > most:
            errs.append(_too_many(path, len(value), most))
        if least is not None and len(value) < least:
            errs.append(invalid(path, _shown(value), f"{name} in body should have at least "
                                f"{least} items"))
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for item in value:
                if any(_equal(item, s) for s in seen):
                    errs.append(invalid(path, _shown(value),
                                        f"{name} in body shouldn't contain duplicates"))
                    break
                seen.append(item)
        items = schema.get("items")
        if isinstance(items, dict):
            olds = correlate_items(schema, value, old)
            for i, item in enumerate(value):
                self.validate(item, items, f"{path}[{i}]", olds[i])
        self._list_type(value, schema, path)

    def _list_type(self, value: list[Any], schema: Obj, path: str) -> None:
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[Any] = []
            for i, item in enumerate(value):
                if any(_equal(item, s) for s in seen):
                    self.errors.append(duplicate(f"{path}[{i}]", item))
                else:
                    seen.append(item)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            item_props = (schema.get("items") or {}).get("properties") or {}
            seen_keys: list[tuple[Any, ...]] = []
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                key = tuple(item.get(k, (item_props.get(k) or {}).get("default")) for k in keys)
                if key in seen_keys:
                    shown = {k: item.get(k) for k in keys if k in item}
                    self.errors.append(duplicate(f"{path}[{i}]", shown))
                else:
                    seen_keys.append(key)

    def _object(self, value: Obj, schema: Obj, path: str, name: str, old: Any) -> None:
        errs = self.errors
        most, least = schema.get("maxProperties"), schema.get("minProperties")
        if most is not None and len(value) > most:
            errs.append(_too_many(path, len(value), most))
        if least is not None and len(value) < least:
            errs.append(invalid(path, _shown(value), f"{name} in body should have at least "
                                f"{least} properties"))
        for key in schema.get("required") or ():
            if key not in value:
                errs.append(required(_child_paths(path, key)))
        props = schema.get("properties") or {}
        old_map = old if isinstance(old, dict) else {}
        for key, sub in props.items():
            if key in value:
                self.validate(value[key], sub, _child_paths(path, key),
                              old_map.get(key, NO_OLD))
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key, sub_value in value.items():
                if key not in props:
                    self.validate(sub_value, additional, _child_paths(path, key),
                                  old_map.get(key, NO_OLD))


def _too_many(path: str, actual: int, most: int) -> FieldError:
    error = too_many(path, actual, most)
    if most == 1:
        return FieldError(error.type, error.field, error.value, "must have at most 1 item")
    return error


def _shown(value: Any) -> Any:
    return value


def _passes(value: Any, schema: Obj, path: str) -> bool:
    probe = Validator()
    probe.validate(value, schema, path)
    return not probe.errors


def _is_int_or_string(schema: Obj) -> bool:
    return bool(schema.get("x-kubernetes-int-or-string"))


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def compile_pattern(pattern: str) -> Any:
    """A schema `pattern` compiled as Go's regexp compiles it (RE2: matching in linear
    time, so no pattern can stall a write); None when it does not compile."""
    try:
        return regex.compile_pattern(pattern)
    except regex.RegexError:
        return None


def pattern_error(pattern: str) -> str:
    """Go's `error parsing regexp: ...` text of a pattern that does not compile."""
    try:
        regex.compile_pattern(pattern)
    except regex.RegexError as e:
        return str(e)
    return ""


def correlate_items(schema: Obj, value: list[Any], old: Any) -> list[Any]:
    """The old item of each item of a list-map (by its keys); other lists' items do not
    correlate, as upstream."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return [NO_OLD] * len(value)
    keys = schema.get("x-kubernetes-list-map-keys") or []

    def key_of(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    by_key = {key_of(o): o for o in old if key_of(o) is not None}
    return [by_key.get(key_of(v), NO_OLD) for v in value]


def _equal_deep(a: Any, b: Any) -> bool:
    """JSON equality where true is not 1."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal_deep(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal_deep(x, y) for x, y in zip(a, b, strict=True))
    return _equal(a, b)


def validate(obj: Any, schema: Obj, old: Any = NO_OLD) -> list[FieldError]:
    v = Validator()
    v.validate(obj, schema, "", old)
    return v.errors
