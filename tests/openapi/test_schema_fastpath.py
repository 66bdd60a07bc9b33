"""The one-pass request check (`schemas.check_request`) answers as the four walks it
replaces: `type_error`, `drop_nulls`, `timestamps.normalize` and `unknown_fields`, with
and without a stored object whose equal subtrees it skips."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.wire import timestamps
from draemu.openapi import schemas
from draemu.openapi.schemas.node import LIST, MAP, STRUCT, SchemaNode

pytestmark = [pytest.mark.slow, pytest.mark.unit]

KINDS = [("", "v1", "Pod"), ("resource.k8s.io", "v1", "ResourceClaim"),
         ("events.k8s.io", "v1", "Event"), ("coordination.k8s.io", "v1", "Lease")]
TIME_REFS = {"io.k8s.apimachinery.pkg.apis.meta.v1.Time",
             "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}
TIMES = ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05+01:00",
         "2024-01-02T03:04:05.5+00:00", "0999-01-02T03:04:05Z", "yesterday", ""]
JSON_SCALARS = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 1.5]),
                         st.sampled_from(["", "x", "1"] + TIMES))
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True, database=None)


def json_value(data: st.DataObject, depth: int = 0) -> Any:
    """Any JSON value (what an open field or a wrong guess holds)."""
    pick = data.draw(st.integers(0, 3 if depth < 2 else 1))
    if pick == 2:
        return {data.draw(st.sampled_from(["a", "b", "spec"])): json_value(data, depth + 1)}
    if pick == 3:
        return [json_value(data, depth + 1)]
    return None if pick == 1 else data.draw(JSON_SCALARS)


def value_for(data: st.DataObject, node: SchemaNode, depth: int = 0,
              clean: bool = False) -> Any:
    """A value shaped by the schema, with nulls, wrong types and unknown fields mixed in
    unless `clean` (then only what a stored object may hold)."""
    pick = data.draw(st.integers(2 if clean else 0, 19))
    if pick == 0:
        return None
    if pick == 1 or node.is_open:
        return json_value(data)
    ref = (node.ref or "").rsplit("/", 1)[-1]
    if ref in TIME_REFS:
        return data.draw(st.sampled_from(TIMES[:-2] if clean else TIMES))
    shape = node.shape
    if shape == STRUCT:
        names = sorted(node.properties) if depth < 4 else []
        chosen = data.draw(st.lists(st.sampled_from(names), max_size=4, unique=True)) \
            if names else []
        out = {name: value_for(data, node.field(name), depth + 1, clean) for name in chosen}
        if not clean and data.draw(st.integers(0, 9)) == 0:
            out[data.draw(st.sampled_from(["zz", "a.b"]))] = json_value(data)
        return out
    if shape == MAP:
        keys = data.draw(st.lists(st.sampled_from(["k", "a.b", ""]), max_size=2, unique=True))
        return {k: value_for(data, node.field(k), depth + 1, clean) for k in keys}
    if shape == LIST:
        size = data.draw(st.integers(0, 2 if depth < 4 else 0))
        return [value_for(data, node.items(), depth + 1, clean) for _ in range(size)]
    if clean:
        return scalar_for(data, node)
    return data.draw(JSON_SCALARS)


def scalar_for(data: st.DataObject, node: SchemaNode) -> Any:
    """A scalar of the node's JSON type."""
    kind = node.target.get("type")
    if kind == "boolean":
        return data.draw(st.booleans())
    if kind == "integer":
        return data.draw(st.integers(0, 2))
    if kind == "number":
        return data.draw(st.sampled_from([0, 1, 1.0, 1.5]))
    return data.draw(st.sampled_from(["x", "1"]))


def slow(gvk: tuple[str, str, str], obj: Obj) -> tuple[Any, ...]:
    """The four walks, as `fieldvalidation.check` made them."""
    error = schemas.type_error(*gvk, obj)
    if error:
        return ("type", error)
    schemas.drop_nulls(*gvk, obj)
    try:
        timestamps.normalize(*gvk, obj)
    except StatusError as e:
        return ("time", e.message)
    return ("ok", schemas.unknown_fields(*gvk, obj), obj)


def fast(gvk: tuple[str, str, str], obj: Obj, old: Obj | None = None) -> tuple[Any, ...]:
    found = schemas.check_request(*gvk, obj, old, timestamps.format_value)
    if found.type_error:
        return ("type", found.type_error)
    if found.bad_time:
        with pytest.raises(StatusError) as e:
            timestamps.normalize(*gvk, obj)
        return ("time", e.value.message)
    return ("ok", found.unknown, obj)


def stored_object(gvk: tuple[str, str, str], data: st.DataObject) -> Obj:
    """A random object as the server stores it: checked, times rewritten."""
    root = schemas.patch_meta(*gvk)
    obj = {name: value_for(data, root.field(name), 1, clean=True) for name in root.properties}
    outcome = slow(gvk, obj)
    assert outcome[:2] == ("ok", [])
    return obj


def paths(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of a JSON value."""
    out: list[tuple[Any, Any]] = []
    members = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, sub in members:
        out.append((value, key))
        out.extend(paths(sub))
    return out


def retyped(value: Any) -> Any:
    """An equal value of another JSON type (`==` cannot tell them apart); for a string,
    a time in a form the server rewrites."""
    if isinstance(value, str):
        return TIMES[2]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value) if value not in (0, 1) else bool(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def mutate(data: st.DataObject, obj: Obj) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        members = paths(obj)
        if not members:
            return
        parent, key = data.draw(st.sampled_from(members))
        how = data.draw(st.integers(0, 3))
        if how == 0:
            parent[key] = retyped(parent[key])
        elif how == 1:
            parent[key] = json_value(data)
        elif how == 2 and isinstance(parent[key], dict):
            parent[key][data.draw(st.sampled_from(["zz", "a.b"]))] = json_value(data)
        else:
            parent[key] = None


@pytest.mark.parametrize("gvk", KINDS, ids=[k for _, _, k in KINDS])
@SETTINGS
@given(data=st.data())
def test_one_pass_answers_as_the_four_walks(gvk, data):
    obj = value_for(data, schemas.patch_meta(*gvk))
    if isinstance(obj, dict):
        assert fast(gvk, copy.deepcopy(obj)) == slow(gvk, copy.deepcopy(obj))


@pytest.mark.parametrize("gvk", KINDS, ids=[k for _, _, k in KINDS])
@SETTINGS
@given(data=st.data())
def test_skipping_what_equals_the_stored_object_changes_no_answer(gvk, data):
    old = stored_object(gvk, data)
    obj = copy.deepcopy(old)
    mutate(data, obj)
    assert fast(gvk, copy.deepcopy(obj), old) == slow(gvk, copy.deepcopy(obj))


def test_an_integer_where_a_stored_boolean_was_is_still_a_type_error():
    gvk = ("", "v1", "Pod")
    old = {"spec": {"hostNetwork": True}}
    found = schemas.check_request(*gvk, {"spec": {"hostNetwork": 1}}, old,
                                  timestamps.format_value)
    assert found.type_error == ("json: cannot unmarshal number into Go struct field "
                                "PodSpec.spec.hostNetwork of type bool")


def test_a_subtree_equal_to_the_stored_one_is_not_walked():
    gvk = ("", "v1", "Pod")
    old = {"metadata": {"creationTimestamp": "2024-01-02T03:04:05+01:00"}}
    obj = copy.deepcopy(old)
    schemas.check_request(*gvk, obj, old, timestamps.format_value)
    assert obj == old


def test_times_are_rewritten_in_the_servers_form():
    obj = {"metadata": {"creationTimestamp": "2024-01-02T03:04:05+01:00"},
           "status": {"conditions": [{"lastTransitionTime": "2024-01-02T03:04:05.5Z"}]}}
    schemas.check_request("", "v1", "Pod", obj, None, timestamps.format_value)
    assert obj == {"metadata": {"creationTimestamp": "2024-01-02T02:04:05Z"},
                   "status": {"conditions": [{"lastTransitionTime": "2024-01-02T03:04:05Z"}]}}


def test_no_time_is_rewritten_when_one_is_bad():
    obj = {"metadata": {"creationTimestamp": "2024-01-02T03:04:05+01:00"},
           "status": {"startTime": "soon"}}
    found = schemas.check_request("", "v1", "Pod", obj, None, timestamps.format_value)
    assert found.bad_time
    assert obj["metadata"]["creationTimestamp"] == "2024-01-02T03:04:05+01:00"


def test_null_struct_fields_are_dropped_and_null_map_values_kept():
    obj = {"spec": None, "metadata": {"labels": {"a": None}, "zz": None}}
    found = schemas.check_request("", "v1", "Pod", obj, None, timestamps.format_value)
    assert (obj, found.unknown) == ({"metadata": {"labels": {"a": None}}}, [])


def time_paths(node: SchemaNode, path: str, seen: frozenset[int]) -> set[str]:
    if node.is_open or id(node._schema) in seen:
        return set()
    if (node.ref or "").rsplit("/", 1)[-1] in TIME_REFS:
        return {path}
    seen = seen | {id(node._schema)}
    if node.shape == STRUCT:
        return set().union(*(time_paths(node.field(p), f"{path}.{p}", seen)
                             for p in node.properties))
    if node.shape == MAP:
        return time_paths(node.field(""), path + "{}", seen)
    if node.shape == LIST:
        return time_paths(node.items(), path + "[]", seen)
    return set()


def planned_time_paths(name: str, path: str, depth: int = 0) -> set[str]:
    out: set[str] = set()
    for prop, plan in timestamps._fields(name).items():
        here = f"{path}.{prop}"
        while plan[0] in ("list", "map"):
            here += "[]" if plan[0] == "list" else "{}"
            plan = plan[1]
        if plan[0] == "object":
            out |= planned_time_paths(plan[1], here, depth + 1) if depth < 30 else set()
        else:
            out.add(here)
    return out


def test_every_kind_has_its_times_where_the_timestamp_walk_finds_them():
    """A bad time found in one pass is reported by the timestamp walk: they must agree
    on where times are."""
    for (group, version, kind), name in schemas._kinds().items():
        node = schemas.patch_meta(group, version, kind)
        assert time_paths(node, "", frozenset()) == planned_time_paths(name, ""), kind


def all_schemas(schema: Any) -> list[Obj]:
    """A schema and every schema inside it (properties, items, additionalProperties)."""
    if not isinstance(schema, dict):
        return []
    inner = list((schema.get("properties") or {}).values()) + \
        [schema.get("items"), schema.get("additionalProperties")]
    return [schema] + [s for sub in inner for s in all_schemas(sub)]


def test_every_schema_that_takes_strings_and_numbers_is_a_scalar():
    """The one pass neither type-checks nor walks below Quantity and IntOrString, as the
    type walk; it could not skip the unknown-field walk below a struct or list."""
    for name, definition in schemas.definitions().items():
        for schema in all_schemas(definition):
            node = SchemaNode(schema, schemas.definition)
            target = node.target
            if "oneOf" in target or target.get("format") == "int-or-string":
                assert node.is_open or node.shape not in (STRUCT, MAP, LIST), name
