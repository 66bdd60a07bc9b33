"""Which part of a false selector failed on a device, and in which words."""

from __future__ import annotations

import pytest

from draemu.cel import CelDevice
from draemu.scheduler.dra.clauses import conjuncts, failing_clause, plain

pytestmark = pytest.mark.unit

T4 = CelDevice({"name": "gpu-0", "pool": "node-3", "attributes": {
    "memory": {"int": 16 << 30}, "cudaMajor": {"int": 11}, "model": {"string": "Tesla-T4"}},
    "capacity": {"memory": {"value": "16Gi"}}}, driver="gpu.nvidia.com")
MEMORY = 'device.attributes["gpu.nvidia.com"].memory'
SCENARIO_1 = f"""{MEMORY} >= 85899345920
  && device.attributes["gpu.nvidia.com"].cudaMajor >= 11"""


def test_a_top_level_and_chain_splits_into_its_operands() -> None:
    assert conjuncts(SCENARIO_1) == [f"{MEMORY} >= 85899345920",
                                     'device.attributes["gpu.nvidia.com"].cudaMajor >= 11']


def test_and_inside_strings_brackets_or_under_an_or_does_not_split() -> None:
    assert conjuncts('"a && b" == x && (c && d)') == ['"a && b" == x', "(c && d)"]
    assert conjuncts("a && b || c") == ["a && b || c"]
    assert conjuncts("a ? b && c : d") == ["a ? b && c : d"]
    assert conjuncts("x.?y.orValue(1) == 1 && z") == ["x.?y.orValue(1) == 1", "z"]


def test_the_failing_clause_is_the_first_false_operand() -> None:
    assert failing_clause(SCENARIO_1, T4) == f"{MEMORY} >= 85899345920"
    swapped = f'device.attributes["gpu.nvidia.com"].cudaMajor >= 12 && {MEMORY} >= 1'
    assert failing_clause(swapped, T4) == 'device.attributes["gpu.nvidia.com"].cudaMajor >= 12'


def test_a_clause_that_cannot_be_split_is_given_whole_on_one_line() -> None:
    assert failing_clause(f"{MEMORY} > 1 &&\n  false || false", T4) == \
        f"{MEMORY} > 1 && false || false"


def test_numbers_compared_read_as_too_small_or_too_large_with_quantities() -> None:
    assert plain(f"{MEMORY} >= 85899345920", T4) == "memory 16Gi, too small (needs >= 80Gi)"
    assert plain('device.attributes["gpu.nvidia.com"].cudaMajor <= 10', T4) == \
        "cudaMajor 11, too large (needs <= 10)"
    assert plain(f"85899345920 <= {MEMORY}", T4) == "memory 16Gi, too small (needs >= 80Gi)"


def test_quantities_compared_with_compare_to_read_as_the_quantities() -> None:
    clause = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
    assert plain(clause, T4) == "memory 16Gi, too small (needs >= 40Gi)"


def test_strings_and_fields_read_as_what_the_device_has_and_what_was_asked() -> None:
    assert plain('device.attributes["gpu.nvidia.com"].model == "H100"', T4) == \
        'model "Tesla-T4", not "H100"'
    assert plain("device.allowMultipleAllocations == true", T4) == \
        "allowMultipleAllocations=false (needs true)"
    assert plain('device.driver == "nic.mellanox.com"', T4) == \
        'driver "gpu.nvidia.com", not "nic.mellanox.com"'


def test_what_is_not_a_simple_comparison_has_no_words() -> None:
    assert plain(f"{MEMORY} > 1 || false", T4) == ""
    assert plain('"x" in device.attributes["gpu.nvidia.com"]', T4) == ""
    assert plain('device.attributes["gpu.nvidia.com"].absent == 1', T4) == ""  # an error
