"""The DRA CEL environment, case by case from upstream's compile tests
(k8s.io/dynamic-resource-allocation/cel), plus draemu's own."""

from __future__ import annotations

import pytest

from draemu.cel import (
    NO_SUCH_KEY_HINT,
    CELCompileError,
    CELIssue,
    CELRuntimeError,
    check_expression,
    compile_expression,
)
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

DRIVER = "dra.example.com"


def device(attributes: dict | None = None, capacity: dict | None = None,
           driver: str = DRIVER, **extra: object) -> dict:
    return {"name": "dev-0", "driver": driver, "pool": "pool-0",
            "attributes": attributes or {},
            "capacity": {k: {"value": v} for k, v in (capacity or {}).items()}, **extra}


MATCHES = [
    ("true", {}, True),
    ("false", {}, False),
    ('"no-such-domain" in device.attributes', {}, False),
    ('"dra.example.com" in device.attributes',
     {"attributes": {"dra.example.com/something": {"bool": True}}}, True),
    ('device.driver == ""', {"driver": ""}, True),
    ('device.driver == "dra.example.com"', {}, True),
    ('device.attributes["dra.example.com"].name', {"attributes": {"name": {"bool": True}}}, True),
    ('device.attributes["dra.example.com"]["name"]',
     {"attributes": {"name": {"bool": True}}}, True),
    ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
     {"attributes": {"name": {"bool": True}}}, True),
    ('device.attributes["other.example.com"].name',
     {"attributes": {"other.example.com/name": {"bool": True}}}, True),
    ('device.attributes["dra.example.com"].name > 0', {"attributes": {"name": {"int": 1}}}, True),
    ('device.attributes["dra.example.com"].name == "fish"',
     {"attributes": {"name": {"string": "fish"}}}, True),
    ('device.attributes["dra.example.com"].names.size() == 2',
     {"attributes": {"names": {"versions": ["1.0.0", "2.0.0"]}}}, True),
    ('device.attributes["dra.example.com"].names.exists(x, x > 0)',
     {"attributes": {"names": {"ints": [1, 2]}}}, True),
    ('device.attributes["dra.example.com"].names.all(x, x != "")',
     {"attributes": {"names": {"strings": ["fish", "bird"]}}}, True),
    ('device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))',
     {"attributes": {"names": {"versions": ["1.0.0", "2.0.0"]}}}, True),
    ('device.attributes["dra.example.com"].name.includes("fish")',
     {"attributes": {"name": {"strings": ["fish", "bird"]}}}, True),
    ('device.attributes["dra.example.com"].name.includes(true)',
     {"attributes": {"name": {"bool": False}}}, False),
    ('device.attributes["dra.example.com"].name.includes(1)',
     {"attributes": {"name": {"ints": [1, 2]}}}, True),
    ('device.attributes["dra.example.com"].name.includes(semver("1.0.0"))',
     {"attributes": {"name": {"version": "1.0.0"}}}, True),
    ('device.attributes["dra.example.com"].name.includes(semver("3.0.0"))',
     {"attributes": {"name": {"versions": ["1.0.0", "2.0.0"]}}}, False),
    ('1 in device.attributes["dra.example.com"].names',
     {"attributes": {"names": {"ints": [1, 2, 3]}}}, True),
    ('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
     {"attributes": {"name": {"version": "1.0.0"}}}, True),
    (('device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && '
     'isSemver("v1.0.0", true)'), {"attributes": {"name": {"version": "1.0.0"}}}, True),
    ('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
     {"capacity": {"name": "1Mi"}}, True),
    (('"name" in device.capacity["dra.example.com"] && '
     'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))'),
     {"capacity": {"name": "1Mi"}}, True),
    (('!("name" in device.capacity["dra.example.com"]) || '
     'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))'), {}, True),
    ('device.attributes.exists_one(x, x == "dra.example.com")',
     {"attributes": {"services": {"string": "x"}}}, True),
    ('device.attributes["dra.example.com"].exists_one(x, x == "services")',
     {"attributes": {"services": {"string": "x"}}}, True),
    ('device.attributes["dra.example.com"].services.split("example").size() >= 2',
     {"attributes": {"services": {"string": "some_example_value"}}}, True),
    ('device.attributes["dra.example.com"].services.matches("[^a]?sym")',
     {"attributes": {"services": {"string": "asymetric"}}}, True),
    ('device.capacity.exists_one(x, x == "dra.example.com")', {"capacity": {"memory": "1Mi"}},
     True),
    ("device.allowMultipleAllocations == true", {"allowMultipleAllocations": True}, True),
    ("device.allowMultipleAllocations == false", {}, True),
    # draemu's own: the libraries a selector commonly uses.
    ('has(device.attributes["dra.example.com"].model)', {}, False),
    ('device.attributes["dra.example.com"].?model.orValue("none") == "none"', {}, True),
    ('device.attributes["dra.example.com"][?"model"].hasValue()',
     {"attributes": {"model": {"string": "A100"}}}, True),
    ('device.capacity["dra.example.com"].memory.compareTo(quantity("80Gi")) == 0',
     {"capacity": {"memory": "80Gi"}}, True),
    (('device.capacity["dra.example.com"].memory.add(quantity("1Gi")).isGreaterThan('
     'quantity("80Gi"))'), {"capacity": {"memory": "80Gi"}}, True),
    ('device.attributes["dra.example.com"].v.major() == 12',
     {"attributes": {"v": {"version": "12.2.0"}}}, True),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', {}, True),
    ('device.attributes["dra.example.com"].model.lowerAscii().startsWith("a1")',
     {"attributes": {"model": {"string": "A100"}}}, True),
    ('device.attributes["dra.example.com"].model.find("[0-9]+") == "100"',
     {"attributes": {"model": {"string": "A100"}}}, True),
    ("[1, 2, 3].isSorted() && [3, 1].sum() == 4 && [4, 2].min() == 2", {}, True),
    ('sets.contains(["a", "b"], ["a"]) && !sets.intersects([1], [2])', {}, True),
    ("[1, 2].map(x, x * 2) == [2, 4] && [1, 2, 3].filter(x, x > 1).size() == 2", {}, True),
    ("1 == 1.0 && 2u > 1 && 1 != true", {}, True),
    ("int('12') + 1 == 13 && string(12) == '12' && double(1) / 2.0 == 0.5", {}, True),
    ('"x" + "y" == "xy" && [1] + [2] == [1, 2] && {"a": 1}["a"] == 1', {}, True),
    ("7 / 2 == 3 && -7 % 3 == -1", {}, True),
    ('device.attributes["dra.example.com"].n > 1 ? true : false',
     {"attributes": {"n": {"int": 2}}}, True),
    ('cidr("10.0.0.0/8").containsIP(device.attributes["dra.example.com"].addr)',
     {"attributes": {"addr": {"string": "10.1.2.3"}}}, True),
    ('isIP("::1") && ip("::1").isLoopback() && ip("10.0.0.1").family() == 4', {}, True),
    ('!isCIDR("10.0.0.0/33") && cidr("10.1.0.0/16").prefixLength() == 16', {}, True),
    ('url("https://gpu.example.com:8443/x?y=1").getPort() == "8443"', {}, True),
    ('"%s has %d cores (%.1f%%)".format(["gpu", 108, 99.5]) == "gpu has 108 cores (99.5%)"',
     {}, True),
    ('{1: "a", 2: "b"}.all(k, k > 0) && {1: 2}.map(k, k + 1) == [2]', {}, True),
    ('[1, 2].all(i, v, v > i) && {"a": 1}.transformMap(k, v, v + 1) == {"a": 2}', {}, True),
    # An error on one side of || is absorbed when the other side decides.
    ('device.attributes["dra.example.com"].nope || true', {}, True),
]


@pytest.mark.parametrize(("expression", "fields", "expected"), MATCHES)
def test_selector_verdict(expression: str, fields: dict, expected: bool) -> None:
    assert check_expression(expression, gates=FeatureGates(
        {"DRAListTypeAttributes": True})) == []
    assert compile_expression(expression).evaluate(device(**fields)) is expected


RUNTIME_ERRORS = [
    ('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', {},
     "no such key: noSuchAttr"),
    ('device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))', {},
     "no such key: noSuchAttr"),
    ('device.attributes["dra.example.com"].name.exists(x, x > 0)',
     {"attributes": {"name": {"int": 1}}}, "got 'types.Int', expected iterable type"),
    ('device.attributes["dra.example.com"].name.exists(x, x == "fish")',
     {"attributes": {"name": {"string": "fish"}}}, "got 'types.String', expected iterable type"),
    ('device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
     {"attributes": {"name": {"version": "1.0.0"}}}, "got 'cel.Semver', expected iterable type"),
    ('device.attributes["dra.example.com"].names', {"attributes": {"names": {"strings": ["a"]}}},
     "CEL result of type list could not be converted to bool"),
    ('device.attributes["dra.example.com"].name.includes("value-48")',
     {"attributes": {"name": {"strings": [f"value-{i}" for i in range(49)]}}},
     "'includes' function cannot be applied to lists longer than 48 values"),
    (("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
     "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"), {},
     "actual cost limit exceeded"),
    ("device.attributes['dra.example.com'].x", {"attributes": {"x": {}}},
     "attribute x: unsupported attribute value"),
    ("device.attributes['dra.example.com'].v == semver('1.0.0')",
     {"attributes": {"v": {"version": "1.0"}}}, "parse semantic version"),
    ("1 / 0 == 1", {}, "division by zero"),
    ("9223372036854775807 + 1 > 0", {}, "integer overflow"),
]


@pytest.mark.parametrize(("expression", "fields", "message"), RUNTIME_ERRORS)
def test_selector_runtime_error(expression: str, fields: dict, message: str) -> None:
    program = compile_expression(expression)
    with pytest.raises(CELRuntimeError, match=None) as info:
        program.evaluate(device(**fields))
    assert message in str(info.value)


def test_missing_attribute_error_says_how_to_guard() -> None:
    """The allocator names the device in its prefix, so the message does not (upstream)."""
    program = compile_expression('device.attributes["dra.example.com"].model == "A100"')
    with pytest.raises(CELRuntimeError) as info:
        program.evaluate(device())
    text = str(info.value)
    assert text == "no such key: model" + NO_SUCH_KEY_HINT
    assert text.endswith(NO_SUCH_KEY_HINT)
    assert info.value.key == "model"


COMPILE_ERRORS = [
    ("?!", "Syntax error"),
    ("1", "must evaluate to bool or the unknown type, not int"),
    ("device.driver", "must evaluate to bool or the unknown type, not string"),
    ("x > 1", "undeclared reference to 'x' (in container '')"),
    ("device.foo == 1", "undefined field 'foo'"),
    ('device.driver.noSuchFunction()', "undeclared reference to 'noSuchFunction'"),
    ('"a" + 1 == "a1"', "found no matching overload for '_+_' applied to '(string, int)'"),
]


@pytest.mark.parametrize(("expression", "message"), COMPILE_ERRORS)
def test_selector_compile_error(expression: str, message: str) -> None:
    with pytest.raises(CELCompileError) as info:
        compile_expression(expression)
    assert message in str(info.value)
    [issue] = check_expression(expression)
    assert issue.type == "Invalid" and message in issue.detail


def test_compile_error_points_at_the_problem() -> None:
    [issue] = check_expression("device.driver == x")
    assert issue.detail == ("compilation failed: ERROR: <input>:1:18: undeclared reference to "
                            "'x' (in container '')\n | device.driver == x\n | .................^")


def test_includes_needs_list_type_attributes_gate_for_new_expressions() -> None:
    expression = 'device.attributes["dra.example.com"].attr.includes("fish")'
    [issue] = check_expression(expression, gates=FeatureGates({"DRAListTypeAttributes": False}))
    assert "undeclared reference to 'includes'" in issue.detail
    assert check_expression(expression, gates=FeatureGates({"DRAListTypeAttributes": True})) == []
    # Stored expressions (the allocator's environment) always know it.
    assert compile_expression(expression).evaluate(
        device({"attr": {"string": "fish"}})) is True


def test_allow_multiple_allocations_needs_consumable_capacity_gate_for_new_expressions() -> None:
    expression = "device.allowMultipleAllocations == false"
    [issue] = check_expression(expression, gates=FeatureGates({"DRAConsumableCapacity": False}))
    assert "undefined field 'allowMultipleAllocations'" in issue.detail
    assert check_expression(expression, gates=FeatureGates({"DRAConsumableCapacity": True})) == []


def test_expression_length_checked_before_compiling() -> None:
    expression = "true && " * 1300 + "true"
    assert check_expression(expression) == [
        CELIssue("TooLong", "may not be more than 10240 bytes")]


def test_expensive_expression_is_forbidden() -> None:
    expression = "[1,2,3,4,5,6,7,8,9,10].all(a, " * 6 + "true" + ")" * 6
    [issue] = check_expression(expression)
    assert (issue.type, issue.detail) == ("Forbidden", "too complex, exceeds cost limit")


def test_cheap_expression_is_far_below_cost_limit() -> None:
    program = compile_expression('device.attributes["dra.example.com"].model == "A100"')
    assert program.cost < 100


def test_compiled_programs_are_cached() -> None:
    expression = 'device.driver == "cache.example.com"'
    assert compile_expression(expression) is compile_expression(expression)
