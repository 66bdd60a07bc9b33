"""Static types of CEL variables and expressions, with the size bounds the cost estimator
assumes (Kubernetes' DeclType): DRA's `device`, and the `self` of a CRD's validation rules
built from its OpenAPI schema as k8s.io/apiserver/pkg/cel/common/schemas.go builds it
(maxLength, maxItems and maxProperties where declared, else what fits in a 3 MiB
request).

    t = schema_decl_type(schema, is_root=True)
    sizes = DeclSizes(t)            # path -> (min, max) for the estimator
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from draemu.cel.cost import MAX_REQUEST_SIZE_BYTES

# Kinds whose field selection the estimator charges (cel-go's map, struct, type param).
SELECTABLE = frozenset({"map", "object"})
# Kinds of a fixed size of 1 (cel-go's isScalar).
SCALARS = frozenset({"bool", "int", "uint", "double", "duration", "timestamp"})

# k8s.io/apiserver/pkg/cel/limits.go.
MIN_STRING_SIZE = 2
MIN_BOOL_SIZE = 4
MIN_NUMBER_SIZE = 1
MAX_DURATION_SIZE_JSON = 32
MIN_DURATION_SIZE_JSON = 3
JSON_DATE_SIZE = 12
MAX_DATETIME_SIZE_JSON = 32
MIN_DATETIME_SIZE_JSON = 21


@dataclass(eq=False)
class DeclType:
    """`kind`: dyn, any, bool, int, uint, double, string, bytes, null, list, map, object,
    optional, type, duration, timestamp, or an opaque type's name (quantity, semver, ip,
    cidr, url, format, authorizer, ...). `elem` is a list's element, a map's value, an
    optional's value; `max_elements` a string's, list's or map's bound (0: none known)."""

    kind: str
    elem: DeclType | None = None
    key: DeclType | None = None
    fields: Mapping[str, DeclType] = field(default_factory=dict)
    max_elements: int = 0
    min_serialized_size: int = 1

    def __repr__(self) -> str:
        if self.kind == "list":
            return f"list({self.elem!r})"
        if self.kind == "map":
            return f"map({self.key!r}, {self.elem!r})"
        if self.kind == "optional":
            return f"optional({self.elem!r})"
        return self.kind

    def same(self, other: DeclType) -> bool:
        """Structurally the same type (bounds aside)."""
        if self.kind != other.kind:
            return False
        if self.kind == "object":
            return self is other
        return all(a is b or (a is not None and b is not None and a.same(b))
                   for a, b in ((self.elem, other.elem), (self.key, other.key)))


DYN = DeclType("dyn")
BOOL = DeclType("bool", min_serialized_size=MIN_BOOL_SIZE)
INT = DeclType("int")
UINT = DeclType("uint")
DOUBLE = DeclType("double")
STRING = DeclType("string", min_serialized_size=MIN_STRING_SIZE)
BYTES = DeclType("bytes", min_serialized_size=MIN_STRING_SIZE)
NULL = DeclType("null")
TYPE = DeclType("type")


def list_of(elem: DeclType, max_items: int = 0) -> DeclType:
    return DeclType("list", elem=elem, max_elements=max_items, min_serialized_size=2)


def map_of(key: DeclType, value: DeclType, max_properties: int = 0) -> DeclType:
    return DeclType("map", elem=value, key=key, max_elements=max_properties,
                    min_serialized_size=2)


def optional_of(value: DeclType) -> DeclType:
    return DeclType("optional", elem=value)


def opaque(name: str) -> DeclType:
    return DeclType(name)


def bounded(t: DeclType, max_elements: int) -> DeclType:
    return DeclType(t.kind, t.elem, t.key, t.fields, max_elements, t.min_serialized_size)


# --- DRA's device ------------------------------------------------------------------------

# k8s.io/api/resource/v1 limits.
DRIVER_NAME_MAX_LENGTH = 63
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_VALUES = 48
ATTRIBUTE_MAX_VALUE_LENGTH = 64


def device_type(*, list_type_attributes: bool = True, multiple_allocations: bool = True
                ) -> tuple[DeclType, DeclType]:
    """The `device` variable as k8s.io/dynamic-resource-allocation/cel declares it, and
    its attribute values' type (every attribute name of a domain has that bound)."""
    attribute = DeclType("dyn" if list_type_attributes else "any", max_elements=max(
        ATTRIBUTE_MAX_VALUE_LENGTH, MAX_ATTRIBUTE_VALUES) if list_type_attributes
        else ATTRIBUTE_MAX_VALUE_LENGTH)
    domain = bounded(STRING, DEVICE_MAX_DOMAIN_LENGTH)
    ident = bounded(STRING, DEVICE_MAX_ID_LENGTH)
    attributes = map_of(domain, map_of(ident, attribute, MAX_ATTRIBUTES_AND_CAPACITIES),
                        MAX_ATTRIBUTES_AND_CAPACITIES)
    capacity = map_of(domain, map_of(ident, opaque("quantity"), MAX_ATTRIBUTES_AND_CAPACITIES),
                      MAX_ATTRIBUTES_AND_CAPACITIES)
    fields = {"driver": bounded(STRING, DRIVER_NAME_MAX_LENGTH),
              "attributes": attributes, "capacity": capacity}
    if multiple_allocations:
        fields["allowMultipleAllocations"] = bounded(BOOL, 1)
    return DeclType("object", fields=fields, min_serialized_size=2), attribute


# --- CRD schemas -------------------------------------------------------------------------

# CEL's reserved words: a property so named is `__<name>__` in CEL (k8s.io/apiserver's
# escaping.go).
_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue",
                       "else", "for", "function", "if", "import", "let", "loop", "package",
                       "namespace", "return", "var", "void", "while"})
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_ESCAPE = re.compile(r"__|[-./]")
_UNESCAPE = re.compile(r"__([^_]+)__")
_NAME = re.compile(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*")


def escape(name: str) -> str | None:
    """A property's name as a CEL field (`__namespace__`, `a__dash__b`), or None when CEL
    cannot name it."""
    if name in _RESERVED:
        return f"__{name}__"
    if not _NAME.fullmatch(name):
        return None
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], name)


def unescape(field_name: str) -> str:
    """The property a CEL field name stands for (the name itself when not escaped)."""
    if "__" not in field_name:
        return field_name
    if field_name.startswith("__") and field_name.endswith("__") and \
            field_name[2:-2] in _RESERVED:
        return field_name[2:-2]
    inverse = {v[2:-2]: k for k, v in _ESCAPES.items()}
    return _UNESCAPE.sub(lambda m: inverse.get(m.group(1), m.group(0)), field_name)



def schema_decl_type(schema: Any, is_root: bool) -> DeclType | None:
    """A structural schema's type (Kubernetes' SchemaDeclType); None where CEL cannot see
    the value (no type)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("x-kubernetes-int-or-string"):
        bound = _max_length(schema) if schema.get("maxLength") is not None \
            else MAX_REQUEST_SIZE_BYTES - 2
        return DeclType("dyn", max_elements=bound, min_serialized_size=1)
    if is_root:
        schema = _with_type_and_object_meta(schema)
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return None
        item_type = schema_decl_type(items, bool(items.get("x-kubernetes-embedded-resource")))
        if item_type is None:
            return None
        max_items = _non_negative(schema["maxItems"]) if schema.get("maxItems") is not None \
            else (MAX_REQUEST_SIZE_BYTES - 2) // (item_type.min_serialized_size + 1)
        return list_of(item_type, max_items)
    if kind == "object":
        return _object_type(schema)
    if kind == "string":
        return _string_type(schema)
    return {"boolean": BOOL, "number": DOUBLE, "integer": INT}.get(kind or "")


def _object_type(schema: dict[str, Any]) -> DeclType | None:
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        value = schema_decl_type(additional,
                                 bool(additional.get("x-kubernetes-embedded-resource")))
        if value is None:
            return None
        max_properties = _non_negative(schema["maxProperties"]) \
            if schema.get("maxProperties") is not None \
            else (MAX_REQUEST_SIZE_BYTES - 2) // (value.min_serialized_size + 6)
        return map_of(STRING, value, max_properties)
    fields: dict[str, DeclType] = {}
    required = set(schema.get("required") or ())
    min_size = 2
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        t = schema_decl_type(prop, bool(prop.get("x-kubernetes-embedded-resource")))
        if t is None:
            continue
        escaped = escape(name)
        if escaped is not None:
            fields[escaped] = t
        if name in required and prop.get("default") is None:
            min_size += len(name) + t.min_serialized_size + 4
    return DeclType("object", fields=fields, min_serialized_size=min_size)


def _string_type(schema: dict[str, Any]) -> DeclType:
    fmt = schema.get("format")
    if fmt == "byte":
        bound = _non_negative(schema["maxLength"]) if schema.get("maxLength") is not None \
            else MAX_REQUEST_SIZE_BYTES - 2
        return DeclType("bytes", max_elements=bound, min_serialized_size=MIN_STRING_SIZE)
    if fmt == "duration":
        return DeclType("duration", max_elements=MAX_DURATION_SIZE_JSON,
                        min_serialized_size=MIN_DURATION_SIZE_JSON)
    if fmt == "date":
        return DeclType("timestamp", max_elements=JSON_DATE_SIZE,
                        min_serialized_size=JSON_DATE_SIZE)
    if fmt == "date-time":
        return DeclType("timestamp", max_elements=MAX_DATETIME_SIZE_JSON,
                        min_serialized_size=MIN_DATETIME_SIZE_JSON)
    if schema.get("maxLength") is not None:
        bound = _max_length(schema)
    elif schema.get("enum"):
        bound = max((len(v) for v in schema["enum"] if isinstance(v, str)), default=0)
    else:
        bound = MAX_REQUEST_SIZE_BYTES - 2
    return DeclType("string", max_elements=bound, min_serialized_size=MIN_STRING_SIZE)


def _max_length(schema: dict[str, Any]) -> int:
    # maxLength counts code points; a code point may take 4 bytes.
    return _non_negative(schema["maxLength"]) * 4


def _non_negative(v: Any) -> int:
    return max(int(v), 0) if isinstance(v, int) else 0


_STRING_SCHEMA = {"type": "string"}


def _with_type_and_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """`apiVersion`, `kind`, `metadata.name` and `metadata.generateName` are visible at a
    resource's root whatever the schema says."""
    props = schema.get("properties") or {}

    def typed(s: Any, t: str) -> bool:
        return isinstance(s, dict) and s.get("type") == t

    meta = props.get("metadata")
    if typed(props.get("kind"), "string") and typed(props.get("apiVersion"), "string") and \
            typed(meta, "object") and typed((meta.get("properties") or {}).get("name"),
                                            "string") and \
            typed((meta.get("properties") or {}).get("generateName"), "string"):
        return schema
    out = dict(schema)
    out["properties"] = {**props, "kind": _STRING_SCHEMA, "apiVersion": _STRING_SCHEMA,
                         "metadata": {"type": "object", "properties": {
                             "name": _STRING_SCHEMA, "generateName": _STRING_SCHEMA}}}
    return out


def max_cardinality(min_size: int) -> int:
    """How many times data of `min_size` bytes fits in a request (Kubernetes'
    maxCardinality): a bound on how often a rule under unbounded lists runs."""
    return MAX_REQUEST_SIZE_BYTES // (min_size + 1)


# --- size estimates ----------------------------------------------------------------------


class DeclSizes:
    """The size estimator of Kubernetes' environments: the bound of the declared type a
    path (variable, field names, `@items`, `@values`, `@keys`) leads to, as (0, max).

    `roots` maps variable names to types; `root` serves every variable (CRD rules:
    `self` and `oldSelf`). `any_field` is a type every unknown field of a map whose values
    have that type resolves to (DRA's attribute names)."""

    def __init__(self, root: DeclType | None = None, *,
                 roots: Mapping[str, DeclType] | None = None,
                 any_field: DeclType | None = None) -> None:
        self.root = root
        self.roots = roots or {}
        self.any_field = any_field

    def __call__(self, path: tuple[str, ...]) -> tuple[int, int] | None:
        if not path:
            return None
        node = self.roots.get(path[0], self.root)
        if node is None:
            return None
        for name in path[1:]:
            nxt: DeclType | None
            if name in ("@items", "@values"):
                nxt = node.elem
            elif name == "@keys":
                nxt = node.key
            else:
                nxt = node.fields.get(name)
                if nxt is None and self.any_field is not None and \
                        node.elem is self.any_field:
                    nxt = self.any_field
            if nxt is None:
                return None
            node = nxt
        return (0, node.max_elements)
