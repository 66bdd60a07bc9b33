"""The declarative strategy of the long tail of kinds: defaults, required and immutable
fields, field selectors and printed cells come from class attributes."""

from __future__ import annotations

from typing import Any

import pytest
from kind_helpers import ctx, messages

from draemu.apiserver.registry.generic import (
    AGE_COLUMN,
    NAME,
    GenericStrategy,
    Printed,
    field,
    get_path,
)
from draemu.apiserver.registry.strategy import AGE, Column

pytestmark = pytest.mark.unit


class Widget(GenericStrategy):
    group = "example.com"
    kind = "Widget"
    resource = "widgets"
    versions = ("v1",)
    storage_version = "v1"
    defaults = {"spec.size": 1, "spec.mode": "Fast"}
    required_fields = ("spec.owner",)
    immutable_fields = ("spec.owner", "spec.shape.kind")
    field_selectors = {"spec.owner": field("spec.owner", "")}
    printer = (NAME, Printed(Column("Owner"), field("spec.owner")), AGE_COLUMN)


W = Widget()


def widget(**spec: Any) -> dict:
    return {"metadata": {"name": "w"}, "spec": spec}


def test_defaults_fill_only_missing_scalars() -> None:
    obj = widget(size=3)
    W.default(obj, "v1")
    assert obj["spec"] == {"size": 3, "mode": "Fast"}
    empty: dict = {"metadata": {"name": "w"}}
    W.default(empty, "v1")
    assert empty["spec"] == {"size": 1, "mode": "Fast"}


def test_required_and_immutable_fields() -> None:
    assert messages(W.validate(widget(), ctx())) == ["spec.owner: Required value"]
    old = widget(owner="a", shape={"kind": "round"})
    new = widget(owner="b", shape={"kind": "round"})
    assert messages(W.validate_update(new, old, ctx())) == [
        'spec.owner: Invalid value: "b": field is immutable']
    removed = widget(owner="a")
    assert messages(W.validate_update(removed, old, ctx())) == [
        "spec.shape.kind: Invalid value: null: field is immutable"]


def test_columns_cells_and_field_selectors() -> None:
    obj = widget(owner="a")
    assert [c.name for c in W.table_columns()] == ["Name", "Owner", "Age"]
    assert W.table_row(obj) == ["w", "a", AGE]
    assert W.table_row(widget()) == ["w", "<none>", AGE]
    assert W.selectable_fields(obj) == {"spec.owner": "a"}
    assert get_path(obj, "spec.shape.kind", "none") == "none"
