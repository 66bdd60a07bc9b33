"""Validation and defaults the admissionregistration.k8s.io kinds share (rules,
match resources, match conditions, CEL expressions), after upstream's
`pkg/apis/admissionregistration/validation` with its messages."""

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
from draemu.apiserver.auth.authorization import Attributes
from draemu.apiserver.auth.rbac.escalation import escalation_allowed
from draemu.apiserver.registry.core.common import qualified_name
from draemu.apiserver.registry.core.labelselector import validate_label_selector
from draemu.apiserver.registry.strategy import Context
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
NOT_FOUND_ACTIONS = ["Deny", "Allow"]
GROUP = "admissionregistration.k8s.io"
# Names reserved for the configurations an apiserver loads from its manifest files
# (ManifestBasedAdmissionControlConfig, on by default since 1.37).
STATIC_SUFFIX = ".static.k8s.io"
_CEL_IDENTIFIER = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else",
                 "for", "function", "if", "import", "let", "loop", "package", "namespace",
                 "return", "var", "void", "while"}


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
                        want: str | None = "bool", *, patch_types: bool = False
                        ) -> list[FieldError]:
    """An expression compiles and evaluates to `want` (upstream's messages);
    `patch_types`: in the mutating policies' environment."""
    try:
        compile_kubernetes(expression, variables, want, patch_types=patch_types)
    except CELCompileError as e:
        detail = e.detail if not e.result_type else f"must evaluate to {want} but got {e.got}"
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


def validate_param_kind(kind: Obj, path: Path) -> list[FieldError]:
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


def validate_param_ref(ref: Obj, path: Path) -> list[FieldError]:
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


def validate_variables(variables: list[Any], path: Path) -> list[FieldError]:
    """A policy's `variables`: CEL identifiers as names, expressions that compile."""
    errs: list[FieldError] = []
    for i, variable in enumerate(variables):
        if not isinstance(variable, dict):
            errs.append(required(path.index(i)))
            continue
        vpath = path.index(i)
        name = (variable.get("name") or "").strip()
        if not name:
            errs.append(required(vpath.child("name"), "name is not specified"))
        elif not _CEL_IDENTIFIER.match(variable["name"]) or variable["name"] in _CEL_RESERVED:
            errs.append(invalid(vpath.child("name"), variable.get("name"),
                                "must be a valid CEL identifier"))
        expression = (variable.get("expression") or "").strip()
        if not expression:
            errs.append(required(vpath.child("expression"), "expression is not specified"))
        else:
            errs += validate_expression(variable["expression"], POLICY_VARIABLES,
                                        vpath.child("expression"), want=None)
    return errs


def validate_static_suffix(name: str) -> list[FieldError]:
    if name.endswith(STATIC_SUFFIX):
        return [invalid(Path("metadata").child("name"), name,
                        f'names ending with "{STATIC_SUFFIX}" are reserved for static '
                        "manifest-based configurations and cannot be managed via the API")]
    return []


def param_ref_cell(ref: Obj | None) -> str:
    """A binding's ParamRef column, as upstream prints it."""
    if not isinstance(ref, dict):
        return "<unset>"
    if ref.get("name"):
        return f"{ref.get('namespace') or '*'}/{ref['name']}"
    if ref.get("selector") is not None:
        return go_label_selector(ref["selector"])
    return "<unset>"


def go_label_selector(selector: Obj) -> str:
    """A LabelSelector as its generated Go String() writes it."""
    labels = selector.get("matchLabels") or {}
    pairs = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    requirements = "".join(
        f"LabelSelectorRequirement{{Key:{r.get('key', '')},Operator:{r.get('operator', '')},"
        f"Values:[{' '.join(r.get('values') or [])}],}},"
        for r in selector.get("matchExpressions") or [])
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{requirements}}},}}")


def _go_user(ctx: Context) -> str:
    """The request's user as Go's %v prints a *user.DefaultInfo."""
    info = ctx.user_info
    if info is None:
        return f"&{{{ctx.user}  [{' '.join(ctx.groups)}] map[]}}"
    extra = " ".join(f"{k}:[{' '.join(v)}]" for k, v in sorted((info.extra or {}).items()))
    return f"&{{{info.name} {info.uid} [{' '.join(info.groups)}] map[{extra}]}}"


def _param_target(kind: Obj | None, ctx: Context) -> tuple[str, str, str, str]:
    """(group, version, resource, failure) of a paramKind; `*` where it is not known, and
    why not ("" when resolved)."""
    if not isinstance(kind, dict):
        return "*", "*", "*", "policy"
    api_version = kind.get("apiVersion") or ""
    if api_version.count("/") > 1:
        return "*", "*", "*", "parse"
    group, _, version = api_version.rpartition("/")
    resolve = ctx.resource_of_kind
    resource = resolve(group, version, kind.get("kind") or "") if resolve else None
    return group, version, resource or "*", "" if resource else "resolve"


def authorize_param_kind(kind: Obj | None, ctx: Context, path: Path) -> list[FieldError]:
    """A policy with a paramKind needs its author to read every object of that kind."""
    if kind is None or ctx.authorizer is None or ctx.user_info is None or \
            escalation_allowed(ctx.user_info):
        return []
    group, version, resource, _ = _param_target(kind, ctx)
    decision = ctx.authorizer.authorize(Attributes(ctx.user_info, "get", group, version,
                                                   resource, "", "*", "*"))
    if decision.allowed:
        return []
    return [forbidden(path, f'user {_go_user(ctx)} must have "get" permission on all objects '
                      f"of the referenced paramKind (kind={kind.get('kind', '')}, "
                      f"apiVersion={kind.get('apiVersion', '')})")]


def authorize_param_ref(ref: Obj | None, policy_name: str, policy: Obj | None, ctx: Context,
                        path: Path) -> list[FieldError]:
    """A binding with a paramRef needs its author to read the objects it names (`policy`:
    the bound policy, None when it does not exist)."""
    if ref is None or ctx.authorizer is None or ctx.user_info is None or \
            escalation_allowed(ctx.user_info):
        return []
    kind = ((policy or {}).get("spec") or {}).get("paramKind")
    group, version, resource, failure = _param_target(kind, ctx) if policy is not None \
        else ("*", "*", "*", "policy")
    if kind is None and policy is not None:
        failure = ""
    verb = "get" if ref.get("name") else "list"
    decision = ctx.authorizer.authorize(Attributes(
        ctx.user_info, verb, group, version, resource, "", ref.get("namespace") or "",
        ref.get("name") or ""))
    if decision.allowed:
        return []
    user = _go_user(ctx)
    everything = f'user {user} does not have "{verb}" permission for all groups, versions ' \
        "and resources"
    spec = ((policy or {}).get("spec") or {})
    messages = {
        "policy": f"unable to get policy {policy_name} to determine minimum "
                  f"required permissions and {everything}",
        "parse": f"unable to parse paramKind {go_param_kind(spec.get('paramKind'))} to "
                 f"determine minimum required permissions and {everything}",
        "resolve": f"unable to resolve paramKind {go_param_kind(spec.get('paramKind'))} to "
                   f"determine minimum required permissions and {everything}",
        "": f'user {verb} does not have "{user}" permission on the object referenced by '
            "paramRef"}
    return [forbidden(path, messages[failure])]


def go_param_kind(kind: Obj | None) -> str:
    """A paramKind as Go's %v prints the internal *ParamKind."""
    if not isinstance(kind, dict):
        return "<nil>"
    return f"&{{{kind.get('apiVersion', '')} {kind.get('kind', '')}}}"


def authorize_binding(binding: Obj, ctx: Context, policies: str) -> list[FieldError]:
    """`authorize_param_ref` of a binding, its policy read from the watch cache."""
    spec = binding.get("spec") or {}
    ref = spec.get("paramRef")
    if ref is None:
        return []
    name = spec.get("policyName") or ""
    policy = ctx.lookup(policies, GROUP, "", name) if ctx.lookup is not None else None
    return authorize_param_ref(ref, name, policy, ctx, Path("spec").child("paramRef"))


def static_suffix_warnings(obj: Obj, ctx: Context) -> list[str]:
    """Upstream warns on updates of an object whose name has the reserved suffix (a create
    is refused)."""
    name = (obj.get("metadata") or {}).get("name") or ""
    if ctx.verb == "create" or not name.endswith(STATIC_SUFFIX):
        return []
    return [f'metadata.name: names ending with "{STATIC_SUFFIX}" are reserved for static '
            "manifest-based configurations and cannot be managed via the API"]
