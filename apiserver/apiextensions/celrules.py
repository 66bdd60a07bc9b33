"""`x-kubernetes-validations`: CEL rules of a custom resource schema, compiled when the
CRD is written and evaluated on every write of its objects, with upstream's error
shapes (`spec: Invalid value: "object": <message>`, `failed rule: <rule>`, `reason`,
`fieldPath`, `messageExpression`, transition rules over `oldSelf`).

Values are typed dynamically (the schema does not type `self` at compile time), so a
reference to an undeclared field fails when evaluated ("no such key") rather than when
the CRD is created.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, duplicate, forbidden, invalid, required
from draemu.api.types import Obj
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.kubernetes import KubernetesProgram, compile_kubernetes

VARIABLES = ("self", "oldSelf")
_MISSING = object()


def _uses_old_self(rule: str) -> bool:
    return "oldSelf" in rule


def check_rules(schema: Obj, path: Path) -> list[FieldError]:
    """Compile errors of every rule in a schema tree (at CRD create/update)."""
    from draemu.apiserver.apiextensions.crdvalidation import go_rule_value

    errs: list[FieldError] = []

    def walk(s: Any, p: Path) -> None:
        if not isinstance(s, dict):
            return
        for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
            rpath = p.child("x-kubernetes-validations").index(i)
            text = rule.get("rule") or ""
            try:
                program = compile_kubernetes(text, VARIABLES)
                if program.result_type not in ("bool", "dyn"):
                    raise CELCompileError("cel expression must evaluate to a bool")
            except CELCompileError as e:
                errs.append(FieldError("Invalid", str(rpath.child("rule")), None,
                                       f"{go_rule_value(rule)}: {e.detail}", show_value=False))
                continue
            expr = rule.get("messageExpression")
            if expr:
                try:
                    mp = compile_kubernetes(expr, VARIABLES)
                    if mp.result_type not in ("string", "dyn"):
                        raise CELCompileError("messageExpression must evaluate to a string")
                except CELCompileError as e:
                    detail = e.detail
                    if detail.startswith("compilation failed"):
                        detail = "messageExpression " + detail
                    errs.append(FieldError("Invalid", str(rpath.child("messageExpression")),
                                           None, f"{go_rule_value(rule)}: {detail}",
                                           show_value=False))
            if rule.get("optionalOldSelf") is not None and not _uses_old_self(text):
                errs.append(invalid(rpath.child("optionalOldSelf"),
                                    rule["optionalOldSelf"],
                                    "may not be set if oldSelf is not used in rule"))
        for key, sub in (s.get("properties") or {}).items():
            walk(sub, p.child("properties").key(key))
        if isinstance(s.get("items"), dict):
            walk(s["items"], p.child("items"))
        if isinstance(s.get("additionalProperties"), dict):
            walk(s["additionalProperties"], p.child("additionalProperties"))

    walk(schema, path)
    return errs


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
             ratcheted: list[str] | None = None) -> list[FieldError]:
    """Errors of every rule that does not hold on `obj` (with `old` for transition
    rules; absent on create). Failures of rules without `oldSelf` on a value equal to
    its old one are ratcheted, as upstream: their text goes to `ratcheted` (warnings)."""
    errs: list[FieldError] = []
    _eval(schema, obj, old, "", errs, ratcheted)
    return errs


def _type_name(schema: Obj) -> str:
    return schema.get("type") or ("integer,string" if schema.get("x-kubernetes-int-or-string")
                                  else "")


def _eval(schema: Obj, value: Any, old: Any, path: str, errs: list[FieldError],
          ratcheted: list[str] | None) -> None:
    if value is None:
        return
    for rule in schema.get("x-kubernetes-validations") or ():
        found: list[FieldError] = []
        _run(rule, schema, value, old, path, found)
        if found and ratcheted is not None and old is not _MISSING and \
                not _uses_old_self(rule.get("rule") or "") and value == old:
            ratcheted.extend(str(e) for e in found)
        else:
            errs.extend(found)
    if isinstance(value, dict):
        props = schema.get("properties")
        old_map = old if isinstance(old, dict) else {}
        if props:
            for key, sub in props.items():
                if key in value:
                    _eval(sub, value[key], old_map.get(key, _MISSING),
                          f"{path}.{key}" if path else key, errs, ratcheted)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key, sub_value in value.items():
                _eval(additional, sub_value, old_map.get(key, _MISSING),
                      f"{path}[{key}]", errs, ratcheted)
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return
        old_items = _correlate(schema, value, old)
        for i, item in enumerate(value):
            _eval(items, item, old_items[i], f"{path}[{i}]", errs, ratcheted)


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


def _run(rule: Obj, schema: Obj, value: Any, old: Any, path: str,
         errs: list[FieldError]) -> None:
    text = rule.get("rule") or ""
    uses_old = _uses_old_self(text)
    optional_old = bool(rule.get("optionalOldSelf"))
    if uses_old and old is _MISSING and not optional_old:
        return  # a transition rule: only on updates of a correlated value
    try:
        program = compile_kubernetes(text, VARIABLES)
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
    try:
        result = program.evaluate(variables)
    except CELRuntimeError as e:
        message = e.message
        if message.startswith("operation cancelled"):
            errs.append(invalid(path, type_name, f"'{message}': no further validation "
                                f"rules will be run due to call cost exceeds limit for "
                                f"rule: {_rule_text(rule)}"))
        else:
            errs.append(invalid(path, type_name, f"{message} evaluating rule: "
                                f"{_rule_text(rule)}"))
        return
    if result is True:
        return
    detail = _message(rule, program, variables)
    field = path
    field_path = rule.get("fieldPath")
    if field_path:
        normalized = field_path.lstrip(".")
        field = f"{path}.{normalized}" if path else normalized
    errs.append(_error_for_reason(rule.get("reason"), field, value, schema, detail))


def _message(rule: Obj, program: KubernetesProgram, variables: dict[str, Any]) -> str:
    expr = rule.get("messageExpression")
    if expr:
        try:
            result = compile_kubernetes(expr, VARIABLES).evaluate(variables)
        except (CELCompileError, CELRuntimeError):
            result = None
        if isinstance(result, str) and result.strip() and "\n" not in result:
            return result.strip()
    message = (rule.get("message") or "").strip()
    return message or f"failed rule: {_rule_text(rule)}"


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
