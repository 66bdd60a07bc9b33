"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
ValidatingAdmissionPolicyBinding: stored, defaulted and validated here (expressions
compiled with upstream's messages); `draemu.apiserver.admission.policies` enforces
them."""

from __future__ import annotations

import re
from typing import Any

from draemu.api.errors import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from draemu.api.names import is_dns1035_label, is_dns1123_subdomain
from draemu.api.types import Obj
from draemu.apiserver.registry.admissionregistration.common import (
    FAILURE_POLICIES,
    POLICY_VARIABLES,
    default_match_resources,
    validate_expression,
    validate_match_conditions,
    validate_match_resources,
)
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

GROUP = "admissionregistration.k8s.io"
REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"]
ACTIONS = ["Audit", "Deny", "Warn"]
NOT_FOUND_ACTIONS = ["Deny", "Allow"]
_CEL_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else",
                 "for", "function", "if", "import", "let", "loop", "package", "namespace",
                 "return", "var", "void", "while"}


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
        return validate_policy_spec(obj.get("spec") or {}, Path("spec"))

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
        errs += _validate_param_kind(spec["paramKind"], path.child("paramKind"))
    match = spec.get("matchConstraints")
    if match is None:
        errs.append(required(path.child("matchConstraints")))
    else:
        errs += validate_match_resources(match, path.child("matchConstraints"))
        if not match.get("resourceRules"):
            errs.append(required(path.child("matchConstraints", "resourceRules")))
    errs += validate_match_conditions(spec.get("matchConditions") or [], POLICY_VARIABLES,
                                      path.child("matchConditions"))
    for i, variable in enumerate(spec.get("variables") or []):
        if not isinstance(variable, dict):
            errs.append(required(path.child("variables").index(i)))
            continue
        vpath = path.child("variables").index(i)
        name = (variable.get("name") or "").strip()
        if not name:
            errs.append(required(vpath.child("name"), "name is not specified"))
        elif not _CEL_IDENTIFIER.match(name) or name in _CEL_RESERVED:
            errs.append(invalid(vpath.child("name"), variable.get("name"),
                                "must be a valid CEL identifier"))
        expression = (variable.get("expression") or "").strip()
        if not expression:
            errs.append(required(vpath.child("expression"), "expression is not specified"))
        else:
            errs += validate_expression(variable["expression"], POLICY_VARIABLES,
                                        vpath.child("expression"), want=None)
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


def _validate_param_kind(kind: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version = kind.get("apiVersion") or ""
    if not api_version:
        errs.append(required(path.child("apiVersion")))
    elif api_version.count("/") > 1:
        errs.append(invalid(path.child("apiVersion"), api_version,
                            f"unexpected GroupVersion string: {api_version}"))
    else:
        group, _, version = api_version.rpartition("/")
        if group and is_dns1123_subdomain(group):
            errs.append(invalid(path.child("apiVersion"), group,
                                ",".join(is_dns1123_subdomain(group))))
        if not version:
            errs.append(invalid(path.child("apiVersion"), api_version,
                                "version must be specified"))
        elif is_dns1035_label(version):
            errs.append(invalid(path.child("apiVersion"), version,
                                ",".join(is_dns1035_label(version))))
    name = kind.get("kind") or ""
    if not name:
        errs.append(required(path.child("kind")))
    elif is_dns1035_label(name.lower()):
        errs.append(invalid(path.child("kind"), name, "may have mixed case, but should "
                            "otherwise match: " + ",".join(is_dns1035_label(name.lower()))))
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

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
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
            errs += _validate_param_ref(ref, path.child("paramRef"))
        errs += validate_match_resources(spec.get("matchResources"),
                                         path.child("matchResources"))
        errs += _validate_actions(spec.get("validationActions") or [],
                                  path.child("validationActions"))
        return errs

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, Column("PolicyName", description="PolicyName indicates the policy "
                              "definition which the policy binding binded to"),
                Column("ParamRef", description="ParamRef indicates the param resource "
                       "which sets the configration param"), AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        ref = spec.get("paramRef")
        if ref is None:
            param = "<unset>"
        elif ref.get("namespace"):
            param = f"{ref['namespace']}/{ref.get('name') or '*'}"
        else:
            param = ref.get("name") or "*"
        return [obj["metadata"].get("name", ""), spec.get("policyName", ""), param, AGE]


def _validate_param_ref(ref: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name, selector = ref.get("name") or "", ref.get("selector")
    if name:
        if name in (".", "..") or "/" in name or "%" in name:
            errs.append(invalid(path.child("name"), name,
                                "may not contain '/' or '%' and may not be '.' or '..'"))
        if selector is not None:
            errs.append(forbidden(path.child("name"), "name and selector are mutually "
                                  "exclusive"))
    if selector is not None:
        errs += validate_label_selector(selector, path.child("selector"))
        if name:
            errs.append(forbidden(path.child("selector"), "name and selector are mutually "
                                  "exclusive"))
    if not name and selector is None:
        errs.append(required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(required(path.child("parameterNotFoundAction")))
    elif action not in NOT_FOUND_ACTIONS:
        errs.append(not_supported(path.child("parameterNotFoundAction"), action,
                                  NOT_FOUND_ACTIONS))
    return errs


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
