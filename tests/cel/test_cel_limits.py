"""No selector can run away (issue 15): RE2's linear-time regexes with Go's syntax errors
at validation, cel-go's parser recursion limit instead of Python's RecursionError, and the
runtime cost limit charging regex matches."""

from __future__ import annotations

import time

import pytest

from draemu.cel import CELRuntimeError, check_expression, compile_expression

pytestmark = pytest.mark.unit

DRIVER = "dra.example.com"


def device(**attributes: str) -> dict:
    return {"name": "dev-0", "driver": DRIVER, "pool": "pool-0", "capacity": {},
            "attributes": {k: {"string": v} for k, v in attributes.items()}}


def test_a_catastrophic_backtracking_pattern_runs_in_linear_time() -> None:
    program = compile_expression('"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".matches("^(a+)+$")')
    started = time.perf_counter()
    assert program.evaluate(device()) is False
    assert time.perf_counter() - started < 0.05


def test_find_and_find_all_use_re2_too() -> None:
    subject = "a" * 40 + "!"
    program = compile_expression(f'"{subject}".find("(a+)+$") == "" && '
                                 f'"{subject}".findAll("(a|aa)+!").size() == 1')
    started = time.perf_counter()
    assert program.evaluate(device()) is True
    assert time.perf_counter() - started < 0.05


@pytest.mark.parametrize(("expression", "message"), [
    ('device.driver.matches("a(")', "error parsing regexp: missing closing ): `a(`"),
    ('device.driver.find("(?<=a)b") == ""',
     "error parsing regexp: invalid or unsupported Perl syntax: `(?<=`"),
    ('device.driver.findAll("a{2000}").size() > 0',
     "error parsing regexp: invalid repeat count: `{2000}`"),
    ('matches(device.driver, "[a")', "error parsing regexp: missing closing ]: `[a`"),
])
def test_a_constant_pattern_that_does_not_compile_is_a_validation_error(
        expression: str, message: str) -> None:
    issues = check_expression(expression)
    assert len(issues) == 1 and issues[0].type == "Invalid"
    assert message in issues[0].detail


def test_a_pattern_that_does_not_compile_at_run_time_is_a_runtime_error() -> None:
    program = compile_expression(f'device.driver.matches(device.attributes["{DRIVER}"].p)')
    with pytest.raises(CELRuntimeError, match="error parsing regexp: missing closing \\)"):
        program.evaluate(device(p="a("))


def test_parentheses_nested_3000_deep_are_refused_with_cel_gos_limit() -> None:
    issues = check_expression("(" * 3000 + "true" + ")" * 3000)
    assert [i.type for i in issues] == ["Invalid"]
    assert "expression recursion limit exceeded: 250" in issues[0].detail


def test_lists_nested_deeper_than_the_limit_are_refused() -> None:
    issues = check_expression("[" * 251 + "]" * 251 + " == []")
    assert "expression recursion limit exceeded: 250" in issues[0].detail


def test_nesting_within_the_limit_compiles_and_runs() -> None:
    program = compile_expression("(" * 240 + "[" * 5 + "]" * 5 + " != []" + ")" * 240)
    assert program.evaluate(device()) is True


def test_a_run_of_1500_negations_keeps_its_parity_as_cel_gos_parser() -> None:
    assert compile_expression("!" * 1500 + "true").evaluate(device()) is True
    assert compile_expression("!" * 1501 + "true").evaluate(device()) is False
    assert compile_expression("-" * 1500 + "1 == 1").evaluate(device()) is True
    assert compile_expression("3 - - -1 == 2").evaluate(device()) is True


def test_a_member_chain_deeper_than_the_limit_is_a_compile_error() -> None:
    issues = check_expression("device.driver" + ".x" * 2000 + " == 1")
    assert "max recursion depth exceeded" in issues[0].detail


def test_a_long_chain_of_ands_is_no_deep_nesting() -> None:
    program = compile_expression("true" + " && true" * 1200)
    assert program.evaluate(device()) is True


def test_regex_matching_is_charged_against_the_runtime_cost_limit() -> None:
    program = compile_expression(
        f'device.attributes["{DRIVER}"].s.matches("[a-z]+[a-z]+[a-z]+[a-z]+[a-z]+[0-9]")')
    assert program.evaluate(device(s="a" * 1000)) is False
    with pytest.raises(CELRuntimeError, match="actual cost limit exceeded"):
        program.evaluate(device(s="a" * 2_000_000))
