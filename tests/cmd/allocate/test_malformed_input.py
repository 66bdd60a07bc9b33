"""`draemu allocate --no-validate` takes objects as they are: structurally wrong ones
must end in "unusable input" or an Error outcome, never in a crash."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from draemu.cmd.explain import offline
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

CASES = [yaml.safe_load(p.read_text())
         for p in sorted((Path(__file__).parent / "cases").glob("upstream-*.yaml"))]
JUNK: list[Any] = [None, "x", 3, -1, [], {}, [1], {"a": 1}, True, "1Gi"]


def _paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    children = obj.items() if isinstance(obj, dict) else enumerate(obj) \
        if isinstance(obj, list) else ()
    for key, value in children:
        yield from _paths(value, (*prefix, key))


def _replace(obj: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def test_any_single_corruption_gives_an_outcome_or_an_input_error() -> None:
    rng = random.Random(20261129)
    outcomes = {"InputError": 0, "Allocated": 0, "Unsatisfiable": 0, "Error": 0}
    for _ in range(400):
        items = copy.deepcopy(rng.choice(CASES)["input"]["items"])
        _replace(items, rng.choice([p for p in _paths(items) if p]), rng.choice(JUNK))
        try:
            outcome, _, _ = offline.run(items, "node-1", {}, FeatureGates(), validate=False)
        except offline.InputError:
            outcomes["InputError"] += 1
            continue
        outcomes[outcome.status] += 1
        assert outcome.explanation.summary
    assert outcomes["InputError"] and outcomes["Allocated"]
