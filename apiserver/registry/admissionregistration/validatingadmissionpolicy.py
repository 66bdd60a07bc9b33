"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
ValidatingAdmissionPolicyBinding: stored, defaulted and validated here (expressions
compiled with upstream's messages); `draemu.apiserver.admission.policies` enforces
them."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    invalid,
    not_supported,
    required,
)
from draemu.api.names import is_dns1123_subdomain
from draemu.api.types import Obj
from draemu.apiserver.registry.admissionregistration.common import (
    FAILURE_POLICIES,
    POLICY_VARIABLES,
    authorize_binding,
    authorize_param_kind,
    default_match_resources,
    param_ref_cell,
    static_suffix_warnings,
    validate_expression,
    validate_match_conditions,
    validate_match_resources,
    validate_param_kind,
    validate_param_ref,
    validate_static_suffix,
    validate_variables,
)
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

GROUP = "admissionregistration.k8s.io"
POLICIES = "validatingadmissionpolicies"
REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
ACTIONS = ["Audit", "Deny", "Warn"]


class ValidatingAdmissionPolicyStrategy(Strategy):
    group = GROUP
    kind = "ValidatingAdmissionPolicy"
    resource = "validatingadmissionpolicies"
    singular = "validatingadmissionpolicy"
    categories = ("api-extensions",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("failurePolicy", "Fail")
        default_match_resources(spec.get("matchConstraints"))

    def prepare_for_create(self, obj: Obj, ctx: Context) -> None:
        obj.pop("status", None)

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs = validate_policy_spec(spec, Path("spec"))
        errs += validate_static_suffix(obj["metadata"].get("name") or "")
        return errs or authorize_param_kind(spec.get("paramKind"), ctx,
                                            Path("spec").child("paramKind"))

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        return static_suffix_warnings(obj, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec = new.get("spec") or {}
        errs = validate_policy_spec(spec, Path("spec"))
        kind = spec.get("paramKind")
        if errs or kind is None or kind == (old.get("spec") or {}).get("paramKind"):
            return errs
        return authorize_param_kind(kind, ctx, Path("spec").child("paramKind"))

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, Column("Validations", type="integer", description="Validations "
                              "indicates the number of validation rules defined in this "
                              "configuration"),
                Column("ParamKind", description="ParamKind specifies the kind of resources "
                       "used to parameterize this policy"), AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        kind = spec.get("paramKind")
        param = f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"
        return [obj["metadata"].get("name", ""), len(spec.get("validations") or []), param,
                AGE]


def validate_policy_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(required(path.child("failurePolicy")))
    elif failure not in FAILURE_POLICIES:
        errs.append(not_supported(path.child("failurePolicy"), failure, FAILURE_POLICIES))
    if spec.get("paramKind") is not None:
        errs += validate_param_kind(spec["paramKind"], path.child("paramKind"))
    match = spec.get("matchConstraints")
    if match is None:
        errs.append(required(path.child("matchConstraints")))
    else:
        errs += validate_match_resources(match, path.child("matchConstraints"))
        if not match.get("resourceRules"):
            errs.append(required(path.child("matchConstraints", "resourceRules")))
    errs += validate_match_conditions(spec.get("matchConditions") or [], POLICY_VARIABLES,
                                      path.child("matchConditions"))
    errs += validate_variables(spec.get("variables") or [], path.child("variables"))
    validations = spec.get("validations") or []
    if not validations and not spec.get("auditAnnotations"):
        detail = "validations or auditAnnotations must contain at least one item"
        errs.append(required(path.child("validations"), detail))
        errs.append(required(path.child("auditAnnotations"), detail))
    for i, validation in enumerate(validations):
        if not isinstance(validation, dict):
            errs.append(required(path.child("validations").index(i)))
            continue
        errs += _validate_validation(validation, path.child("validations").index(i))
    keys: set[str] = set()
    for i, annotation in enumerate(spec.get("auditAnnotations") or []):
        if not isinstance(annotation, dict):
            errs.append(required(path.child("auditAnnotations").index(i)))
            continue
        apath = path.child("auditAnnotations").index(i)
        key = annotation.get("key") or ""
        if not key:
            errs.append(required(apath.child("key")))
        elif key in keys:
            errs.append(duplicate(apath.child("key"), key))
        keys.add(key)
        value = (annotation.get("valueExpression") or "").strip()
        if not value:
            errs.append(required(apath.child("valueExpression")))
        else:
            errs += validate_expression(annotation["valueExpression"], POLICY_VARIABLES,
                                        apath.child("valueExpression"), want=None)
    return errs


def _validate_validation(validation: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    expression = validation.get("expression") or ""
    if not expression.strip():
        errs.append(required(path.child("expression"), "expression is not specified"))
    else:
        errs += validate_expression(expression, POLICY_VARIABLES, path.child("expression"))
    message_expression = validation.get("messageExpression")
    if message_expression is not None and message_expression != "":
        if not message_expression.strip():
            errs.append(invalid(path.child("messageExpression"), message_expression,
                                "must be non-empty if specified"))
        else:
            errs += validate_expression(message_expression, POLICY_VARIABLES,
                                        path.child("messageExpression"), want="string")
    message = validation.get("message")
    if message:
        if not message.strip():
            errs.append(invalid(path.child("message"), message, "must be non-empty if "
                                "specified"))
        elif "\n" in message.strip():
            errs.append(invalid(path.child("message"), message, "must not contain line "
                                "breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(not_supported(path.child("reason"), reason, REASONS))
    return errs


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    group = GROUP
    kind = "ValidatingAdmissionPolicyBinding"
    resource = "validatingadmissionpolicybindings"
    singular = "validatingadmissionpolicybinding"
    categories = ("api-extensions",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_match_resources(spec.get("matchResources"))

    def validate_spec(self, obj: Obj) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        policy = spec.get("policyName") or ""
        if not policy:
            errs.append(required(path.child("policyName")))
        else:
            errs += [invalid(path.child("policyName"), policy, m)
                     for m in is_dns1123_subdomain(policy)]
        ref = spec.get("paramRef")
        if ref is not None:
            errs += validate_param_ref(ref, path.child("paramRef"))
        errs += validate_match_resources(spec.get("matchResources"),
                                         path.child("matchResources"))
        errs += _validate_actions(spec.get("validationActions") or [],
                                  path.child("validationActions"))
        return errs

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = self.validate_spec(obj) + validate_static_suffix(
            obj["metadata"].get("name") or "")
        return errs or authorize_binding(obj, ctx, POLICIES)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        errs = self.validate_spec(new)
        if errs or spec.get("paramRef") is None or (
                spec.get("paramRef") == old_spec.get("paramRef")
                and spec.get("policyName") == old_spec.get("policyName")):
            return errs
        return authorize_binding(new, ctx, POLICIES)

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        return static_suffix_warnings(obj, ctx)

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, Column("PolicyName", description="PolicyName indicates the policy "
                              "definition which the policy binding binded to"),
                Column("ParamRef", description="ParamRef indicates the param resource "
                       "which sets the configuration param"), AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        return [obj["metadata"].get("name", ""), spec.get("policyName", ""),
                param_ref_cell(spec.get("paramRef")), AGE]


def _validate_actions(actions: list[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in ACTIONS:
            errs.append(not_supported(path.index(i), action, ACTIONS))
        if action in seen:
            errs.append(duplicate(path.index(i), action))
        seen.add(action)
    if {"Deny", "Warn"} <= seen:
        errs.append(invalid(path, actions, "must not contain both Deny and Warn (repeating "
                            "the same validation failure information in the API response and "
                            "headers serves no purpose)"))
    if not seen:
        errs.append(required(path, "at least one validation action is required"))
    return errs


STRATEGIES = [ValidatingAdmissionPolicyStrategy(), ValidatingAdmissionPolicyBindingStrategy()]
