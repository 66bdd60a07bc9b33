"""`x-kubernetes-validations`: CEL rules of a custom resource schema, compiled when the
CRD is written and evaluated on every write of its objects, with upstream's error
shapes (`spec: Invalid value: "object": <message>`, `failed rule: <rule>`, `reason`,
`fieldPath`, `messageExpression`, transition rules over `oldSelf`).

A CRD is refused when a rule's worst-case cost, times how often it can run per object,
exceeds 10 million, or all of them together 100 million (`rulecost`: the schema's types
and bounds, upstream's messages). Evaluating an object's rules costs at most 1 million a
rule and 10 million a request (RuntimeCELCostBudget); past either, validation stops with
upstream's messages.

Values are typed dynamically for the checks (the schema does not type `self` at compile
time), so a reference to an undeclared field fails when evaluated ("no such key") rather
than when the CRD is created; the cost estimate does know the schema's types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from draemu.api.errors import FieldError, Path, duplicate, forbidden, invalid, required
from draemu.api.types import Obj
from draemu.apiserver.apiextensions import rulecost
from draemu.cel.cost import PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET, Meter
from draemu.cel.errors import CELCompileError, CELRuntimeError, CostLimitExceeded, Interrupted
from draemu.cel.kubernetes import KubernetesProgram, RuleTypes, compile_kubernetes

VARIABLES = ("self", "oldSelf")
_MISSING = object()
OUT_OF_BUDGET = ("validation failed due to running out of cost budget, no further "
                 "validation rules will be run")


def _uses_old_self(rule: str) -> bool:
    return "oldSelf" in rule


def go_rule_value(rule: Obj) -> str:
    """A ValidationRule as upstream prints the bad value of a rule error (Go's %#v of
    the internal type)."""
    def ptr(value: Any, type_: str) -> str:
        if value is None:
            return f"(*{type_})(nil)"
        return f"(*{type_})({json.dumps(value)})"
    return ("apiextensions.ValidationRule{" + f"Rule:{json.dumps(rule.get('rule', ''))}, "
            f"Message:{json.dumps(rule.get('message', ''))}, "
            f"MessageExpression:{json.dumps(rule.get('messageExpression', ''))}, "
            f"Reason:{ptr(rule.get('reason'), 'apiextensions.FieldValueErrorReason')}, "
            f"FieldPath:{json.dumps(rule.get('fieldPath', ''))}, "
            f"OptionalOldSelf:{ptr(rule.get('optionalOldSelf'), 'bool')}" + "}")


@dataclass
class _Check:
    """One schema's rule checks at CRD create or update."""

    types: rulecost.SchemaTypes
    suppress_per_expression: bool  # the version's schema is unchanged by an update
    total: rulecost.TotalCost
    errs: list[FieldError]

    def node(self, s: Obj, p: Path, cardinality: int | None) -> None:
        rule_types = self.types.of(s)
        for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
            self.rule(rule, p.child("x-kubernetes-validations").index(i), rule_types,
                      cardinality, self.types.decl(s))

    def rule(self, rule: Obj, rpath: Path, types: RuleTypes | None, cardinality: int | None,
             decl: Any) -> None:
        text = rule.get("rule") or ""
        try:
            program = compile_kubernetes(text, VARIABLES, types=types)
            if program.result_type not in ("bool", "dyn"):
                raise CELCompileError("cel expression must evaluate to a bool")
        except CELCompileError as e:
            self.errs.append(FieldError("Invalid", str(rpath.child("rule")), None,
                                        f"{go_rule_value(rule)}: {e.detail}",
                                        show_value=False))
        else:
            cost = rulecost.expression_cost(program.cost, cardinality, decl)
            self._observe(rpath.child("rule"), cost, "estimated rule cost")
        expr = rule.get("messageExpression")
        if expr:
            self.message(rule, expr, rpath, types)
        if rule.get("optionalOldSelf") is not None and not _uses_old_self(text):
            self.errs.append(invalid(rpath.child("optionalOldSelf"), rule["optionalOldSelf"],
                                     "may not be set if oldSelf is not used in rule"))

    def message(self, rule: Obj, expr: str, rpath: Path, types: RuleTypes | None) -> None:
        try:
            mp = compile_kubernetes(expr, VARIABLES, types=types)
            if mp.result_type not in ("string", "dyn"):
                raise CELCompileError("messageExpression must evaluate to a string")
        except CELCompileError as e:
            detail = e.detail
            if detail.startswith("compilation failed"):
                detail = "messageExpression " + detail
            self.errs.append(FieldError("Invalid", str(rpath.child("messageExpression")),
                                        None, f"{go_rule_value(rule)}: {detail}",
                                        show_value=False))
            return
        self._observe(rpath.child("messageExpression"), mp.cost,
                      "estimated messageExpression cost")

    def _observe(self, path: Path, cost: int, name: str) -> None:
        if not self.suppress_per_expression and \
                cost > rulecost.STATIC_ESTIMATED_COST_LIMIT:
            self.errs.append(forbidden(path, rulecost.cost_error_message(
                name, cost, rulecost.STATIC_ESTIMATED_COST_LIMIT)))
        self.total.observe(path, cost)


def check_rules(schema: Obj, path: Path, *, unchanged: bool = False) -> list[FieldError]:
    """Compile errors and cost errors of every rule in a schema tree (at CRD create or
    update; `unchanged`: an update left this version's schema as it was, so only the
    total counts, as upstream)."""
    check = _Check(rulecost.schema_types(schema), unchanged, rulecost.TotalCost(), [])

    def walk(s: Any, p: Path, cardinality: int | None) -> None:
        if not isinstance(s, dict):
            return
        check.node(s, p, cardinality)
        child = rulecost.child_cardinality(s, cardinality)
        for key, sub in (s.get("properties") or {}).items():
            walk(sub, p.child("properties").key(key), child)
        if isinstance(s.get("items"), dict):
            walk(s["items"], p.child("items"), child)
        if isinstance(s.get("additionalProperties"), dict):
            walk(s["additionalProperties"], p.child("additionalProperties"), child)

    walk(schema, path, 1)
    if check.total.total > rulecost.STATIC_ESTIMATED_CRD_COST_LIMIT:
        for _cost, expensive in check.total.most_expensive:
            check.errs.append(forbidden(expensive, "contributed to estimated rule cost total "
                                        "exceeding cost limit for entire OpenAPIv3 schema"))
        check.errs.append(forbidden(path, rulecost.cost_error_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            check.total.total, rulecost.STATIC_ESTIMATED_CRD_COST_LIMIT)))
    return check.errs


def has_rules(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    subs = list((schema.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            subs.append(schema[key])
    return any(has_rules(s) for s in subs)


def evaluate(schema: Obj, obj: Any, old: Any = _MISSING,
             ratcheted: list[str] | None = None, *, deadline: float | None = None
             ) -> list[FieldError]:
    """Errors of every rule that does not hold on `obj` (with `old` for transition
    rules; absent on create). Failures of rules without `oldSelf` on a value equal to
    its old one are ratcheted, as upstream: their text goes to `ratcheted` (warnings).
    The rules share one RuntimeCELCostBudget; `deadline` (time.monotonic()) interrupts
    an evaluation that runs past it."""
    run = _Evaluation(rulecost.schema_types(schema), ratcheted, deadline)
    run.node(schema, obj, old, "")
    return run.errs


def _type_name(schema: Obj) -> str:
    return schema.get("type") or ("integer,string" if schema.get("x-kubernetes-int-or-string")
                                  else "")


class _Evaluation:
    """The rules of one object, in upstream's order, against one cost budget."""

    def __init__(self, types: rulecost.SchemaTypes, ratcheted: list[str] | None,
                 deadline: float | None) -> None:
        self.types = types
        self.ratcheted = ratcheted
        self.deadline = deadline
        self.remaining = RUNTIME_CEL_COST_BUDGET
        self.stopped = False
        self.errs: list[FieldError] = []

    def node(self, schema: Obj, value: Any, old: Any, path: str) -> None:
        if value is None or self.stopped:
            return
        rules = schema.get("x-kubernetes-validations") or ()
        if rules and self.remaining <= 0:
            self.stop(invalid(path, _type_name(schema), OUT_OF_BUDGET))
            return
        for rule in rules:
            found: list[FieldError] = []
            self.rule(rule, schema, value, old, path, found)
            if found and self.ratcheted is not None and old is not _MISSING and \
                    not _uses_old_self(rule.get("rule") or "") and value == old:
                self.ratcheted.extend(str(e) for e in found)
            else:
                self.errs.extend(found)
            if self.stopped:
                return
        self.children(schema, value, old, path)

    def children(self, schema: Obj, value: Any, old: Any, path: str) -> None:
        if isinstance(value, dict):
            props = schema.get("properties")
            old_map = old if isinstance(old, dict) else {}
            if props:
                for key, sub in props.items():
                    if key in value:
                        self.node(sub, value[key], old_map.get(key, _MISSING),
                                  f"{path}.{key}" if path else key)
            additional = schema.get("additionalProperties")
            if isinstance(additional, dict):
                for key, sub_value in value.items():
                    self.node(additional, sub_value, old_map.get(key, _MISSING),
                              f"{path}[{key}]")
        elif isinstance(value, list):
            items = schema.get("items")
            if not isinstance(items, dict):
                return
            old_items = _correlate(schema, value, old)
            for i, item in enumerate(value):
                self.node(items, item, old_items[i], f"{path}[{i}]")

    def stop(self, error: FieldError) -> None:
        self.errs.append(error)
        self.stopped = True

    def run(self, program: KubernetesProgram, variables: dict[str, Any]
            ) -> tuple[Any, CELRuntimeError | None, bool]:
        """(result, error, within budget): the budget pays what the evaluation cost."""
        meter = Meter(PER_CALL_LIMIT, self.deadline)
        try:
            result, error = program.evaluate(variables, meter), None
        except CELRuntimeError as e:
            result, error = None, e
        if meter.cost > self.remaining:
            return result, error, False
        self.remaining -= meter.cost
        return result, error, True

    def rule(self, rule: Obj, schema: Obj, value: Any, old: Any, path: str,
             errs: list[FieldError]) -> None:
        text = rule.get("rule") or ""
        uses_old = _uses_old_self(text)
        optional_old = bool(rule.get("optionalOldSelf"))
        if uses_old and old is _MISSING and not optional_old:
            return  # a transition rule: only on updates of a correlated value
        types = self.types.of(schema)
        try:
            program = compile_kubernetes(text, VARIABLES, types=types)
        except CELCompileError:
            return  # the CRD's validation refused it; a stored CRD from elsewhere is skipped
        variables: dict[str, Any] = {"self": value}
        if uses_old:
            if optional_old:
                from draemu.cel.values import NONE, OptionalValue

                variables["oldSelf"] = NONE if old is _MISSING else OptionalValue(True, old)
            else:
                variables["oldSelf"] = old
        type_name = _type_name(schema)
        result, error, paid = self.run(program, variables)
        if not paid:
            self.stop(invalid(path, type_name, OUT_OF_BUDGET))
            return
        if isinstance(error, CostLimitExceeded):
            self.stop(invalid(path, type_name, f"'{error.message}': no further validation "
                              "rules will be run due to call cost exceeds limit for rule: "
                              f"{_rule_text(rule)}"))
            return
        if isinstance(error, Interrupted):  # the request's time is up: so is every rule's
            self.stop(invalid(path, type_name, f"{error.message} evaluating rule: "
                              f"{_rule_text(rule)}"))
            return
        if error is not None:
            errs.append(invalid(path, type_name, f"{error.message} evaluating rule: "
                                f"{_rule_text(rule)}"))
            return
        if result is True:
            return
        detail = self.message(rule, variables, types, path, type_name)
        if detail is None:
            return
        field = path
        field_path = rule.get("fieldPath")
        if field_path:
            normalized = field_path.lstrip(".")
            field = f"{path}.{normalized}" if path else normalized
        errs.append(_error_for_reason(rule.get("reason"), field, value, schema, detail))

    def message(self, rule: Obj, variables: dict[str, Any], types: RuleTypes | None,
                path: str, type_name: str) -> str | None:
        """The failed rule's message (None: the messageExpression stopped validation)."""
        expr = rule.get("messageExpression")
        if expr:
            try:
                program = compile_kubernetes(expr, VARIABLES, types=types)
            except CELCompileError:
                program = None
            if program is not None:
                result, error, paid = self.run(program, variables)
                if not paid:
                    self.stop(invalid(path, type_name, "messageExpression evaluation "
                                      "failed due to running out of cost budget, no further "
                                      "validation rules will be run"))
                    return None
                if isinstance(error, CostLimitExceeded):
                    self.stop(invalid(path, type_name, "no further validation rules will "
                                      "be run due to call cost exceeds limit for "
                                      f"messageExpression: {_go_quote(expr)}"))
                    return None
                if isinstance(result, str) and result.strip() and "\n" not in result:
                    return result.strip()
        message = (rule.get("message") or "").strip()
        return message or f"failed rule: {_rule_text(rule)}"


def _go_quote(s: str) -> str:
    import json

    return json.dumps(s, ensure_ascii=False)


def _correlate(schema: Obj, value: list[Any], old: Any) -> list[Any]:
    """Old items of a list-map by their keys; other lists do not correlate (their items
    see no oldSelf), as upstream."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return [_MISSING] * len(value)
    keys = schema.get("x-kubernetes-list-map-keys") or []

    def key_of(item: Any) -> tuple[Any, ...] | None:
        if not isinstance(item, dict):
            return None
        return tuple(item.get(k) for k in keys)

    by_key = {key_of(o): o for o in old if key_of(o) is not None}
    return [by_key.get(key_of(v), _MISSING) for v in value]


def _rule_text(rule: Obj) -> str:
    return (rule.get("message") or "").strip() or (rule.get("rule") or "").strip()


def _error_for_reason(reason: str | None, field: str, value: Any, schema: Obj,
                      detail: str) -> FieldError:
    composite = schema.get("type") in ("object", "array") or isinstance(value, (dict, list))
    if reason == "FieldValueForbidden":
        return forbidden(field, detail)
    if reason == "FieldValueRequired":
        return required(field, detail)
    if reason == "FieldValueDuplicate":
        if composite:
            return FieldError("Duplicate", field, None, "", show_value=False)
        return duplicate(field, value)
    if composite:
        return FieldError("Invalid", field, None, detail, show_value=False)
    return invalid(field, value, detail)
