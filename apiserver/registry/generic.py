"""A declarative strategy for the long tail of kinds: the printer columns, immutable
fields, required fields and field selectors written as data, so that a kind whose rules
are mostly those costs a short class instead of a copy of the same methods.

    class CSIDriverStrategy(GenericStrategy):
        group, kind, resource = "storage.k8s.io", "CSIDriver", "csidrivers"
        namespaced = False
        versions = storage_version = ...
        printer = (NAME, Printed(Column("AttachRequired"), lambda o: ...), AGE_COLUMN)
        immutable_fields = ("spec.attachRequired",)

        def validate_object(self, obj, ctx): ...   # the kind's own rules, if any

Upstream has no such type (each kind's strategy is hand written); this one keeps the
contract of `Strategy` and only fills in its methods from the class attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from draemu.api.errors import FieldError, Path, invalid, required
from draemu.apiserver.registry.core.common import FIELD_IMMUTABLE, since
from draemu.apiserver.registry.strategy import (
    AGE,
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Obj,
    Strategy,
)
from draemu.apiserver.registry.strategy import (
    AGE_COLUMN as AGE_DEFINITION,
)

Cell = Callable[[Obj], Any]
_MISSING = object()


@dataclass(frozen=True)
class Printed:
    """One Table column and how to compute its cell from a stored object."""

    column: Column
    cell: Cell


def name_of(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def get_path(obj: Obj, dotted: str, default: Any = None) -> Any:
    """`spec.selector` of `obj`, or `default` when a step is missing."""
    node: Any = obj
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def field(dotted: str, empty: Any = "<none>") -> Cell:
    """A cell showing one field, `empty` when unset."""
    def cell(obj: Obj) -> Any:
        value = get_path(obj, dotted)
        return empty if value in (None, "") else value
    return cell


def age_of(dotted: str) -> Cell:
    """A cell with the time since a timestamp field (`<none>` when unset)."""
    def cell(obj: Obj) -> str:
        value = get_path(obj, dotted)
        return since(value) if value else "<none>"
    return cell


NAME = Printed(NAME_COLUMN, name_of)
AGE_COLUMN = Printed(AGE_DEFINITION, lambda obj: AGE)

# What upstream prints for kinds without a printer (the default table convertor).
CREATED_AT = Printed(CREATED_AT_COLUMN,
                     lambda obj: (obj.get("metadata") or {}).get("creationTimestamp", ""))


class GenericStrategy(Strategy):
    # Table columns with their cells, in order.
    printer: ClassVar[tuple[Printed, ...]] = (NAME, AGE_COLUMN)
    # Dotted paths that may not change on an update ("field is immutable").
    immutable_fields: ClassVar[tuple[str, ...]] = ()
    # Dotted paths that must be set (non-empty) on every write.
    required_fields: ClassVar[tuple[str, ...]] = ()
    # Field-selector attributes beyond metadata.name and metadata.namespace.
    field_selectors: ClassVar[dict[str, Cell]] = {}
    # Defaults of scalar fields, as dotted path -> value (set when absent).
    defaults: ClassVar[dict[str, Any]] = {}

    # Extension points -----------------------------------------------------------------
    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        """The kind's own rules on every create and update."""
        return []

    def validate_object_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        """The kind's own rules that compare an update with the stored object."""
        return []

    # Strategy ---------------------------------------------------------------------------
    def default(self, obj: Obj, version: str) -> None:
        for dotted, value in self.defaults.items():
            *parents, last = dotted.split(".")
            node = obj
            for part in parents:
                child = node.get(part)
                if child is None:
                    child = node[part] = {}
                if not isinstance(child, dict):
                    break
                node = child
            else:
                if node.get(last) is None:
                    node[last] = value

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = [required(Path(dotted))
                for dotted in self.required_fields if get_path(obj, dotted) in (None, "", [], {})]
        return errs + self.validate_object(obj, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs = self.validate(new, ctx)
        for dotted in self.immutable_fields:
            value = get_path(new, dotted, _MISSING)
            if value != get_path(old, dotted, _MISSING):
                errs.append(invalid(Path(dotted),
                                    None if value is _MISSING else value, FIELD_IMMUTABLE))
        return errs + self.validate_object_update(new, old, ctx)

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        return {name: str(cell(obj)) for name, cell in self.field_selectors.items()}

    def table_columns(self) -> list[Column]:
        return [p.column for p in self.printer]

    def table_row(self, obj: Obj) -> list[Any]:
        return [p.cell(obj) for p in self.printer]
