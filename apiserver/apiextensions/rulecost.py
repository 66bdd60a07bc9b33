"""What `x-kubernetes-validations` rules may cost (k8s.io/apiextensions-apiserver's
validation.go and cel_validation.go): each schema node's CEL type with Kubernetes' size
bounds, how many times a node's rules can run per object (the product of the maxItems
and maxProperties above it), and the limits and messages of a CRD's estimated cost.

    types = schema_types(schema)            # cached per schema object
    types.of(node)                          # RuleTypes for compile_kubernetes(types=...)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from draemu.api.errors import Path
from draemu.api.types import Obj
from draemu.cel.cost import UINT64_MAX
from draemu.cel.decltypes import DYN, DeclType, escape, max_cardinality, schema_decl_type
from draemu.cel.kubernetes import RuleTypes

# k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go.
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000


class SchemaTypes:
    """The rule types of every node of one schema, by node identity (the nodes are kept,
    so an id stays theirs)."""

    def __init__(self, schema: Obj) -> None:
        self._nodes: list[Any] = []
        self._types: dict[int, tuple[RuleTypes, DeclType]] = {}
        self._walk(schema, schema_decl_type(schema, is_root=True))

    def _walk(self, s: Any, decl: DeclType | None) -> None:
        if not isinstance(s, dict):
            return
        t = decl or DYN
        self._nodes.append(s)
        self._types[id(s)] = (RuleTypes(t), t)
        for key, sub in (s.get("properties") or {}).items():
            field = escape(key) if t.kind == "object" else None
            self._walk(sub, t.fields.get(field) if field is not None else None)
        if isinstance(s.get("items"), dict):
            self._walk(s["items"], t.elem if t.kind == "list" else None)
        if isinstance(s.get("additionalProperties"), dict):
            self._walk(s["additionalProperties"], t.elem if t.kind == "map" else None)

    def of(self, node: Obj) -> RuleTypes | None:
        found = self._types.get(id(node))
        return found[0] if found is not None else None

    def decl(self, node: Obj) -> DeclType:
        found = self._types.get(id(node))
        return found[1] if found is not None else DYN


_CACHE: OrderedDict[int, tuple[Obj, SchemaTypes]] = OrderedDict()
_LOCK = threading.Lock()
_CACHE_SIZE = 256


def schema_types(schema: Obj) -> SchemaTypes:
    """The types of a schema's nodes, built once per schema object (a served CRD keeps
    its schema, so its rules' programs stay compiled)."""
    with _LOCK:
        hit = _CACHE.get(id(schema))
        if hit is not None and hit[0] is schema:
            _CACHE.move_to_end(id(schema))
            return hit[1]
    types = SchemaTypes(schema)
    with _LOCK:
        _CACHE[id(schema)] = (schema, types)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return types


def child_cardinality(parent: Obj, cardinality: int | None) -> int | None:
    """How many times a child of `parent` can occur per object, given the parent's
    (None: unbounded)."""
    if cardinality is None:
        return None
    kind = parent.get("type")
    bound: int | None = 1
    if kind == "object" and parent.get("additionalProperties") is not None:
        bound = _bound(parent.get("maxProperties"))
    elif kind == "array":
        bound = _bound(parent.get("maxItems"))
    return None if bound is None else min(cardinality * bound, UINT64_MAX)


def _bound(v: Any) -> int | None:
    if v is None:
        return None
    return max(int(v), 0) if isinstance(v, int) else 0


def expression_cost(max_cost: int, cardinality: int | None, decl: DeclType) -> int:
    """A rule's cost per object: its worst case times how often it can run (under an
    unbounded list or map: as often as the smallest value of its type fits in a
    request)."""
    times = cardinality if cardinality is not None else max_cardinality(
        decl.min_serialized_size)
    if max_cost == 0:
        return 0
    return min(max_cost * times, UINT64_MAX)


def cost_error_message(name: str, cost: int, limit: int) -> str:
    """Upstream's getCostErrorMessage (Go's %f and %.1f)."""
    factor = cost / limit
    if factor > 100.0:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {text} (try simplifying the rule, or "
            "adding maxItems, maxProperties, and maxLength where arrays, maps, and strings "
            "are declared)")


@dataclass
class TotalCost:
    """The estimated cost of all rules of a schema, and the (at most 4) rules that
    contribute at least 1% of the limit, most expensive first."""

    total: int = 0
    most_expensive: list[tuple[int, Path]] = field(default_factory=list)

    def observe(self, path: Path, cost: int) -> None:
        self.total = min(self.total + cost, UINT64_MAX)
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT // 100:
            return
        self.most_expensive.append((cost, path))
        self.most_expensive.sort(key=lambda x: -x[0])
        del self.most_expensive[4:]
