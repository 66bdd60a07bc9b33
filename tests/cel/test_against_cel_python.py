"""draemu's CEL evaluator against cel-python's own interpreter, on standard CEL.

draemu parses with cel-python's grammar but evaluates with its own closures (about
25× faster than cel-python's transpiled runner, 150× than its interpreter); on
expressions both support, the two must agree.
"""

from __future__ import annotations

import celpy
import pytest
from celpy import celtypes

from draemu.cel import compile_expression

pytestmark = pytest.mark.unit

DEVICE = {"name": "gpu-0", "driver": "gpu.example.com",
          "attributes": {"model": {"string": "A100"}, "cores": {"int": 108},
                         "mig": {"bool": True}}}

EXPRESSIONS = [
    'device.driver == "gpu.example.com"',
    'device.driver.startsWith("gpu.") && device.driver.endsWith(".com")',
    'device.driver.contains("example") || false',
    'device.attributes["gpu.example.com"].model == "A100"',
    'device.attributes["gpu.example.com"].cores > 100',
    'device.attributes["gpu.example.com"].cores % 7 == 3',
    'device.attributes["gpu.example.com"].mig',
    '!device.attributes["gpu.example.com"].mig',
    '"model" in device.attributes["gpu.example.com"]',
    '"other.example.com" in device.attributes',
    'has(device.attributes["gpu.example.com"].model)',
    'size(device.attributes["gpu.example.com"]) == 3',
    'device.attributes["gpu.example.com"].model.matches("^A[0-9]+$")',
    '[1, 2, 3].exists(x, x == device.attributes["gpu.example.com"].cores - 106)',
    '[1, 2, 3].all(x, x < 4) && [1, 2, 3].exists_one(x, x > 2)',
    '[1, 2, 3].map(x, x * 2) == [2, 4, 6]',
    '[1, 2, 3, 4].filter(x, x % 2 == 0).size() == 2',
    '{"a": 1, "b": 2}["b"] == 2',
    '"a" + "b" == "ab"',
    '10 / 3 == 3 && 10 % 3 == 1 && -7 / 2 == -3',
    '2.5 * 2.0 == 5.0',
    '(1 < 2) == true && (2 <= 2) && !(3 < 1)',
    'device.attributes["gpu.example.com"].cores >= 108 ? true : false',
    '"abc".size() == 3 && size("abc") == 3',
    'int("42") == 42 && string(42) == "42"',
    '[1, 2] + [3] == [1, 2, 3]',
    '"x" in ["x", "y"]',
]


def _to_cel(value: object) -> object:
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): _to_cel(v) for k, v in value.items()})
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    return celtypes.StringType(str(value))


def _cel_python_device() -> object:
    # The device as CEL sees it: attributes by domain, values unwrapped.
    attributes = {k: next(iter(v.values())) for k, v in DEVICE["attributes"].items()}
    return _to_cel({"driver": DEVICE["driver"], "attributes": {DEVICE["driver"]: attributes}})


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_same_verdict_as_cel_python(expression: str) -> None:
    env = celpy.Environment()
    expected = env.program(env.compile(expression)).evaluate({"device": _cel_python_device()})
    assert compile_expression(expression).evaluate(DEVICE) is bool(expected)
