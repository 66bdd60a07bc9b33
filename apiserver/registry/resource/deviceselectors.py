"""Device selectors: the `cel` member and its compile-time checks.

The CEL environment itself lives in `draemu.cel` (shared with the scheduler); this
module only maps its findings onto field errors at `...selectors[i].cel.expression`.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, internal, invalid, required, too_long
from draemu.cel import MAX_COST, CELCompileError, check_expression, compile_derived
from draemu.features import FeatureGates

from .fields import Errors, bounded_list, obj

CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
SELECTORS_MAX = 32


def selector_list(items: list[Any] | None, path: Path, gates: FeatureGates,
                  stored: bool = False) -> Errors:
    """`stored`: the expressions were accepted before (a DeviceClass update that keeps its
    selectors), so they compile in CEL's more lenient stored-expressions environment."""
    return bounded_list(items, SELECTORS_MAX, path,
                        lambda item, p: selector(obj(item), p, gates, stored))


def selector(value: dict[str, Any], path: Path, gates: FeatureGates,
             stored: bool = False) -> Errors:
    cel = value.get("cel")
    if not isinstance(cel, dict):
        return [required(path.child("cel"))]
    return cel_expression(cel.get("expression") or "", path.child("cel", "expression"), gates,
                          stored)


def cel_expression(expression: str, path: Path, gates: FeatureGates,
                   stored: bool = False) -> Errors:
    if len(expression.encode()) > CEL_EXPRESSION_MAX_LENGTH:
        # Too long expressions are not even compiled.
        return [too_long(path, CEL_EXPRESSION_MAX_LENGTH)]
    if not expression:
        return [required(path, "expression is required")]
    return [_issue_to_error(issue, expression, path)
            for issue in check_expression(expression, gates=gates, stored=stored)]


def _issue_to_error(issue: Any, expression: str, path: Path) -> FieldError:
    kind, detail = issue.type, issue.detail
    if kind == "Forbidden":
        return forbidden(path, detail)
    if kind == "TooLong":
        return too_long(path, CEL_EXPRESSION_MAX_LENGTH)
    if kind == "Required":
        return required(path, detail)
    if kind == "Invalid":
        return invalid(path, expression, detail)
    return internal(path, detail)


def derived_expression(expression: str, path: Path, gates: FeatureGates) -> tuple[Errors, int]:
    """A derived attribute's expression: its errors and its estimated cost, which the
    claim adds up against DeviceClaimDerivedAttributeCELMaxCost."""
    if len(expression.encode()) > CEL_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_EXPRESSION_MAX_LENGTH)], 0
    try:
        program = compile_derived(expression, gates=gates, stored=False)
    except CELCompileError as e:
        return [invalid(path, expression, e.detail)], 0
    if program.cost > MAX_COST:
        return [forbidden(path, "too complex, exceeds cost limit")], program.cost
    return [], program.cost
