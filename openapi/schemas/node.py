"""Navigating a structural schema: what a field is, and how patches treat it.

A `SchemaNode` wraps one schema (a property, an `items` or `additionalProperties`
schema, or a definition) and resolves `$ref` / `allOf: [{$ref}]` lazily. A node built
from `None` is *open*: any value is accepted, lists replace and maps merge, which is
how upstream treats fields it knows nothing about.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Resolver = Callable[[str], dict[str, Any]]

STRUCT, MAP, LIST, SCALAR, OPEN = "struct", "map", "list", "scalar", "open"


class SchemaNode:
    """Nodes build their children lazily and keep them, so a kind's tree of nodes is
    built once (roots are cached by `schemas.patch_meta`) and walks are cheap."""

    __slots__ = ("_children", "_items", "_plan", "_resolve", "_schema", "_shape", "_target")

    def __init__(self, schema: dict[str, Any] | None, resolve: Resolver) -> None:
        self._schema = schema
        self._resolve = resolve
        self._target: dict[str, Any] | None = None
        self._shape: str | None = None
        self._children: dict[str, SchemaNode] = {}
        self._items: SchemaNode | None = None
        self._plan: Plan | None = None

    @classmethod
    def open(cls) -> SchemaNode:
        """A node for a value of unknown schema (it never resolves references)."""
        return _OPEN

    # The schema behind references; the node's own keys (list type, patch strategy)
    # stay on `_schema`, as upstream puts them on the property.
    @property
    def target(self) -> dict[str, Any]:
        if self._target is None:
            ref = self.ref
            self._target = self._resolve(ref) if ref else (self._schema or {})
        return self._target

    @property
    def ref(self) -> str | None:
        """The `$ref` (or single `allOf` reference) of the node's own schema."""
        schema = self._schema or {}
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf", ())) == 1:
            ref = schema["allOf"][0].get("$ref")
        return ref

    def _ext(self, key: str) -> Any:
        own = (self._schema or {}).get(key)
        return own if own is not None else self.target.get(key)

    @property
    def is_open(self) -> bool:
        return self._schema is None or self.shape == OPEN

    @property
    def shape(self) -> str:
        if self._shape is None:
            self._shape = self._compute_shape()
        return self._shape

    def _compute_shape(self) -> str:
        t = self.target
        if self._schema is None or t.get("x-kubernetes-preserve-unknown-fields"):
            return OPEN
        if "properties" in t:
            return STRUCT
        if "additionalProperties" in t:
            return MAP
        kind = t.get("type")
        if kind == "array" or "items" in t:
            return LIST
        if kind == "object":
            return OPEN  # RawExtension, FieldsV1: free-form objects
        return SCALAR

    @property
    def properties(self) -> dict[str, Any]:
        return self.target.get("properties", {})

    def field(self, name: str) -> SchemaNode | None:
        """The node of a struct field or map value; None when a struct lacks it.
        Children are cached per declared field (map keys share one node), so the cache
        never grows with the data."""
        if self._schema is None:
            return self  # below an unknown schema everything is unknown
        shape = self.shape
        if shape == MAP:
            name = ""
        elif shape != STRUCT:
            return SchemaNode.open()
        elif name not in self.properties:
            return None
        node = self._children.get(name)
        if node is None:
            sub = self.target["additionalProperties"] if shape == MAP else self.properties[name]
            node = self._children[name] = SchemaNode(sub, self._resolve)
        return node

    def items(self) -> SchemaNode:
        if self._schema is None:
            return self
        if self._items is None:
            items = self.target.get("items") if self.shape == LIST else None
            self._items = SchemaNode(items, self._resolve)
        return self._items

    def plan(self) -> Plan:
        """The node's tree precomputed for one-pass request checks (built once)."""
        if self._plan is None:
            self._plan = _compile(self, {})
        return self._plan

    # Patch metadata ------------------------------------------------------------------
    @property
    def patch_strategies(self) -> list[str]:
        value = self._ext("x-kubernetes-patch-strategy") or ""
        return [s for s in value.split(",") if s]

    @property
    def patch_merge_key(self) -> str | None:
        return self._ext("x-kubernetes-patch-merge-key")

    @property
    def list_type(self) -> str:
        """atomic, set or map; upstream's default for an unannotated list is atomic."""
        return self._ext("x-kubernetes-list-type") or "atomic"

    @property
    def list_map_keys(self) -> list[str]:
        return list(self._ext("x-kubernetes-list-map-keys") or ())

    @property
    def map_type(self) -> str:
        """granular (fields owned one by one) or atomic; structs default to granular."""
        return self._ext("x-kubernetes-map-type") or "granular"

    @property
    def required(self) -> list[str]:
        return self.target.get("required", [])

    @property
    def embedded(self) -> bool:
        """An embedded (non-pointer) struct: upstream gives it an empty default, and it
        exists in every object, so creating it is not a change of its own."""
        return (self._schema or {}).get("default") == {}

    def default_of(self, name: str) -> Any:
        """The declared default of a struct field (list-map keys may rely on it)."""
        sub = self.properties.get(name) or {}
        return sub.get("default")


# What a request check does below a node, once its JSON type fits.
NOTHING, WALK_STRUCT, WALK_MAP, WALK_LIST, TIME, MICRO = range(6)

_TIME_REFS = {"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time": TIME,
              "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": MICRO}
# The Python types of decoded JSON that fit a schema type exactly (bool is no integer).
_EXACT_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}), "boolean": frozenset({bool}), "integer": frozenset({int}),
    "number": frozenset({int, float}), "object": frozenset({dict}),
    "array": frozenset({list})}


class Plan:
    """A schema node as the request check needs it: plain attributes instead of computed
    properties, so that walking a body is dict lookups and type tests.

    `action` says what to do with a value whose type fits; `types` are the exact Python
    types that fit (None: anything does; other values go through `fits`, which answers
    for subclasses as `isinstance` would); `expected` is the JSON type `fits` checks."""

    __slots__ = ("action", "expected", "fields", "items", "types", "values")

    def __init__(self) -> None:
        self.action = NOTHING
        self.expected = ""
        self.types: frozenset[type] | None = None
        self.fields: dict[str, Plan] = {}
        self.values: Plan = self
        self.items: Plan = self

    def fits(self, value: Any) -> bool:
        """Whether a value not of an exact type fits, as Go's decoder decides."""
        expected = self.expected
        if expected == "object":
            return isinstance(value, dict)
        if expected == "array":
            return isinstance(value, list)
        if expected == "string":
            return isinstance(value, str)
        if expected == "boolean" or isinstance(value, bool):
            return expected == "boolean" and isinstance(value, bool)
        if expected == "integer":
            return isinstance(value, int)
        return isinstance(value, (int, float))  # a number


def _compile(node: SchemaNode, plans: dict[int, Plan]) -> Plan:
    """`plans` holds the plan of each schema already compiled (by identity), which ends
    the recursion of recursive schemas and compiles a shared definition's fields once."""
    key = id(node._schema)
    plan = plans.get(key)
    if plan is not None:
        return plan
    plan = plans[key] = Plan()
    if node.is_open:
        return plan
    target = node.target
    if "oneOf" in target or target.get("format") == "int-or-string":
        return plan  # Quantity and IntOrString take strings and numbers (always scalars)
    shape = node.shape
    if shape == STRUCT:
        plan.action, plan.expected = WALK_STRUCT, "object"
        plan.fields = {name: _compile(node.field(name) or _OPEN, plans)
                       for name in node.properties}
    elif shape == MAP:
        plan.action, plan.expected = WALK_MAP, "object"
        plan.values = _compile(node.field("") or _OPEN, plans)
    elif shape == LIST:
        plan.action, plan.expected = WALK_LIST, "array"
        plan.items = _compile(node.items(), plans)
    else:
        plan.expected = target.get("type") or ""
        plan.action = _TIME_REFS.get(node.ref or "", NOTHING)
    plan.types = _EXACT_TYPES.get(plan.expected)
    return plan


def _no_references(name: str) -> dict[str, Any]:
    raise KeyError(name)


_OPEN = SchemaNode(None, _no_references)
