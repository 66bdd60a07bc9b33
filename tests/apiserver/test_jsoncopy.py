"""The JSON-tree copy used on the write paths."""

from __future__ import annotations

import pytest

from draemu.apiserver.wire.jsoncopy import clone

pytestmark = pytest.mark.unit


def test_clone_shares_no_dict_or_list_with_the_original() -> None:
    pod = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    copied = clone(pod)
    copied["metadata"]["labels"]["a"] = "changed"
    copied["spec"]["containers"][0]["name"] = "changed"
    copied["spec"]["containers"].append({"name": "d"})
    assert pod == {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}


def test_clone_keeps_scalars_and_equality() -> None:
    value = {"s": "x", "i": 1, "f": 1.5, "b": True, "n": None, "l": [1, [2, {"k": "v"}]]}
    assert clone(value) == value


def test_clone_copies_other_mutable_values_deeply() -> None:
    inner = {"k": ["v"]}
    value = {"t": (inner,)}
    copied = clone(value)
    copied["t"][0]["k"].append("w")
    assert inner == {"k": ["v"]}
