"""JSON patch (RFC 6902) and JSON merge patch (RFC 7386), with upstream's error codes."""

from __future__ import annotations

import pytest

from draemu.api.errors import StatusError
from draemu.apiserver.wire.patch import apply_json_patch, apply_merge_patch

pytestmark = pytest.mark.unit

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}},
      "data": {"k": "v"}, "list": [1, 2]}


@pytest.mark.parametrize("ops, expected", [
    ([{"op": "add", "path": "/data/new", "value": "x"}], {"k": "v", "new": "x"}),
    ([{"op": "replace", "path": "/data/k", "value": "w"}], {"k": "w"}),
    ([{"op": "remove", "path": "/data/k"}], {}),
    ([{"op": "copy", "from": "/data/k", "path": "/data/c"}], {"k": "v", "c": "v"}),
    ([{"op": "move", "from": "/data/k", "path": "/data/m"}], {"m": "v"}),
    ([{"op": "test", "path": "/data/k", "value": "v"},
      {"op": "add", "path": "/data/t", "value": "ok"}], {"k": "v", "t": "ok"}),
], ids=["add", "replace", "remove", "copy", "move", "test-then-add"])
def test_json_patch_operations(ops, expected):
    assert apply_json_patch(CM, ops)["data"] == expected


def test_json_patch_appends_to_a_list_with_dash():
    assert apply_json_patch(CM, [{"op": "add", "path": "/list/-", "value": 3}])["list"] == [1, 2, 3]


def test_json_patch_does_not_change_its_input():
    apply_json_patch(CM, [{"op": "remove", "path": "/data/k"}])
    assert CM["data"] == {"k": "v"}


@pytest.mark.parametrize("ops, message", [
    ([{"op": "test", "path": "/data/k", "value": "other"}], "testing value /data/k failed"),
    ([{"op": "replace", "path": "/data/nope", "value": 1}],
     "replace operation does not apply: doc is missing key: /data/nope"),
    ([{"op": "remove", "path": "/data/nope"}], "remove operation does not apply"),
    ([{"op": "add", "path": "/nope/deeper", "value": 1}], "add operation does not apply"),
    ([{"op": "frobnicate", "path": "/data"}], "Unexpected kind: frobnicate"),
], ids=["test-fails", "replace-missing", "remove-missing", "add-missing-parent", "bad-op"])
def test_a_json_patch_that_does_not_apply_is_a_422(ops, message):
    with pytest.raises(StatusError) as err:
        apply_json_patch(CM, ops)
    assert (err.value.code, err.value.reason) == (422, "Invalid")
    assert message in err.value.message


def test_a_failed_operation_fails_the_whole_patch():
    ops = [{"op": "add", "path": "/data/first", "value": "1"},
           {"op": "test", "path": "/data/k", "value": "wrong"}]
    with pytest.raises(StatusError):
        apply_json_patch(CM, ops)
    assert "first" not in CM["data"]


def test_a_json_patch_that_is_not_a_list_is_a_400():
    with pytest.raises(StatusError) as err:
        apply_json_patch(CM, {"op": "add"})
    assert err.value.code == 400


def test_more_than_ten_thousand_operations_is_a_413():
    ops = [{"op": "test", "path": "/data/k", "value": "v"}] * 10001
    with pytest.raises(StatusError) as err:
        apply_json_patch(CM, ops)
    assert err.value.code == 413
    assert "The allowed maximum operations in a JSON patch is 10000, got 10001" in \
        err.value.message


@pytest.mark.parametrize("patch, field, expected", [
    ({"data": {"k2": "v2"}}, "data", {"k": "v", "k2": "v2"}),
    ({"data": {"k": None}}, "data", {}),
    ({"list": [9]}, "list", [9]),
    ({"metadata": {"labels": {"a": None, "b": "2"}}}, "metadata",
     {"name": "c", "labels": {"b": "2"}}),
    ({"data": "scalar"}, "data", "scalar"),
    ({"new": {"x": None, "y": 1}}, "new", {"y": 1}),
], ids=["merge-object", "null-deletes", "list-replaces", "nested", "scalar-replaces-object",
        "new-object-drops-nulls"])
def test_merge_patch(patch, field, expected):
    assert apply_merge_patch(CM, patch)[field] == expected


def test_a_merge_patch_that_is_not_an_object_is_a_400():
    with pytest.raises(StatusError) as err:
        apply_merge_patch(CM, [1, 2])
    assert err.value.code == 400


def test_a_move_from_a_missing_path_names_the_from_path():
    with pytest.raises(StatusError) as err:
        apply_json_patch(CM, [{"op": "move", "from": "/data/nope", "path": "/data/x"}])
    assert err.value.message == ("move operation does not apply: doc is missing from path: "
                                 "/data/nope: missing value")
