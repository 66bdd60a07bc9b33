"""Validation and defaults the admissionregistration.k8s.io kinds share (rules,
match resources, match conditions, CEL expressions), after upstream's
`pkg/apis/admissionregistration/validation` with its messages."""

from __future__ import annotations

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
from draemu.apiserver.registry.core.common import qualified_name
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.cel.errors import CELCompileError
from draemu.cel.kubernetes import compile_kubernetes

FAILURE_POLICIES = ["Fail", "Ignore"]
MATCH_POLICIES = ["Equivalent", "Exact"]
OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
SCOPES = ["*", "Cluster", "Namespaced"]
# Variables of admission CEL.
POLICY_VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject",
                    "variables", "authorizer")
WEBHOOK_VARIABLES = ("object", "oldObject", "request")


def default_match_resources(match: Obj | None) -> None:
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def _wildcard_with_others(values: list[str]) -> bool:
    return len(values) > 1 and "*" in values


def validate_rule(rule: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    operations = rule.get("operations") or []
    if not operations:
        errs.append(required(path.child("operations")))
    if _wildcard_with_others(operations):
        errs.append(invalid(path.child("operations"), operations,
                            "if '*' is present, must not specify other operations"))
    for i, op in enumerate(operations):
        if op not in OPERATIONS:
            errs.append(not_supported(path.child("operations").index(i), op, OPERATIONS))
    groups = rule.get("apiGroups") or []
    if not groups:
        errs.append(required(path.child("apiGroups")))
    if _wildcard_with_others(groups):
        errs.append(invalid(path.child("apiGroups"), groups,
                            "if '*' is present, must not specify other API groups"))
    versions = rule.get("apiVersions") or []
    if not versions:
        errs.append(required(path.child("apiVersions")))
    if _wildcard_with_others(versions):
        errs.append(invalid(path.child("apiVersions"), versions,
                            "if '*' is present, must not specify other API versions"))
    for i, version in enumerate(versions):
        if version == "":
            errs.append(required(path.child("apiVersions").index(i)))
    resources = rule.get("resources") or []
    if not resources:
        errs.append(required(path.child("resources")))
    seen: set[str] = set()
    for i, resource in enumerate(resources):
        rpath = path.child("resources").index(i)
        if not isinstance(resource, str) or resource == "":
            errs.append(required(rpath))
            continue
        if resource.count("/") > 1:
            errs.append(invalid(rpath, resource, "must have at most one '/' character"))
        if resource in seen:
            errs.append(duplicate(rpath, resource))
        seen.add(resource)
    if ("*/*" in resources or "*" in resources) and len(resources) > 1 and \
            not all(r.startswith("*") for r in resources):
        errs.append(invalid(path.child("resources"), resources,
                            "if '*/*' or '*' is present, must not specify other resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errs.append(not_supported(path.child("scope"), scope, SCOPES))
    for i, name in enumerate(rule.get("resourceNames") or []):
        if name in (rule.get("resourceNames") or [])[:i]:
            errs.append(duplicate(path.child("resourceNames").index(i), name))
    return errs


def validate_match_resources(match: Obj | None, path: Path) -> list[FieldError]:
    if match is None:
        return []
    errs: list[FieldError] = []
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(required(path.child("matchPolicy")))
    elif policy not in MATCH_POLICIES:
        errs.append(not_supported(path.child("matchPolicy"), policy, MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is None:
            errs.append(required(path.child(key)))
        else:
            errs += validate_label_selector(match[key], path.child(key))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(match.get(key) or []):
            if not isinstance(rule, dict):
                errs.append(required(path.child(key).index(i)))
                continue
            errs += validate_rule(rule, path.child(key).index(i))
    return errs


def validate_expression(expression: str, variables: tuple[str, ...], path: Path,
                        want: str | None = "bool") -> list[FieldError]:
    try:
        compile_kubernetes(expression, variables, want)
    except CELCompileError as e:
        detail = e.detail if not e.result_type else f"must evaluate to {want}"
        return [invalid(path, expression, detail)]
    return []


def validate_match_conditions(conditions: list[Obj], variables: tuple[str, ...],
                              path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(conditions) > 64:
        errs.append(FieldError("TooMany", str(path), len(conditions),
                               "must have at most 64 items"))
    names: set[str] = set()
    for i, cond in enumerate(conditions):
        if not isinstance(cond, dict):
            errs.append(required(path.index(i)))
            continue
        cpath = path.index(i)
        expression = (cond.get("expression") or "").strip()
        if not expression:
            errs.append(required(cpath.child("expression")))
        else:
            errs += validate_expression(expression, variables, cpath.child("expression"))
        name = cond.get("name") or ""
        if not name:
            errs.append(required(cpath.child("name")))
        else:
            errs += qualified_name(name, cpath.child("name"))
            if name in names:
                errs.append(duplicate(cpath.child("name"), name))
            names.add(name)
    return errs


def validate_fully_qualified_name(name: str, path: Path) -> list[FieldError]:
    if not name:
        return [required(path)]
    problems = is_dns1123_subdomain(name)
    if problems:
        return [invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [invalid(path, name, "should be a domain with at least three segments "
                        "separated by dots")]
    return []
