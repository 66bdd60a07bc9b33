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

    __slots__ = ("_children", "_items", "_resolve", "_schema", "_shape", "_target")

    def __init__(self, schema: dict[str, Any] | None, resolve: Resolver) -> None:
        self._schema = schema
        self._resolve = resolve
        self._target: dict[str, Any] | None = None
        self._shape: str | None = None
        self._children: dict[str, SchemaNode] = {}
        self._items: SchemaNode | None = None

    @classmethod
    def open(cls) -> SchemaNode:
        """A node for a value of unknown schema (it never resolves references)."""
        return _OPEN

    # The schema behind references; the node's own keys (list type, patch strategy)
    # stay on `_schema`, as upstream puts them on the property.
    @property
    def target(self) -> dict[str, Any]:
        if self._target is None:
            schema = self._schema or {}
            ref = schema.get("$ref")
            if ref is None and len(schema.get("allOf", ())) == 1:
                ref = schema["allOf"][0].get("$ref")
            self._target = self._resolve(ref) if ref else schema
        return self._target

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


def _no_references(name: str) -> dict[str, Any]:
    raise KeyError(name)


_OPEN = SchemaNode(None, _no_references)
