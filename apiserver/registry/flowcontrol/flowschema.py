"""flowcontrol.apiserver.k8s.io/v1 FlowSchema: which requests go to which priority level
(API Priority and Fairness, `apiserver/flowcontrol/`). Upstream's strategy and
validation (pkg/registry/flowcontrol/flowschema, pkg/apis/flowcontrol/validation):
status only through /status, the generation moves with the spec, the mandatory
schemas' specs are fixed."""

from __future__ import annotations

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
from draemu.api.names import is_dns1123_label, is_dns1123_subdomain
from draemu.api.types import Obj
from draemu.apiserver.registry.flowcontrol.bootstrapconfig import (
    MANDATORY_SCHEMA_SPECS,
    spec_equalish,
)
from draemu.apiserver.registry.generic import AGE_COLUMN, NAME, GenericStrategy, Printed
from draemu.apiserver.registry.strategy import Column, Context

MAX_MATCHING_PRECEDENCE = 10000
DEFAULT_MATCHING_PRECEDENCE = 1000
SUPPORTED_VERBS = sorted(["get", "list", "create", "update", "delete", "deletecollection",
                          "patch", "watch", "proxy"])
_DISTINGUISHERS = ["ByNamespace", "ByUser"]
_SUBJECT_KINDS = ["Group", "ServiceAccount", "User"]
_NAMESPACE_INTRO = "each member of this list must be '*' or a DNS-1123 label; "
_FORBIDDEN_MEMBER = {"user": "user is forbidden when subject kind is not 'User'",
                     "group": "group is forbidden when subject kind is not 'Group'",
                     "serviceAccount": "serviceAccount is forbidden when subject kind is not "
                                       "'ServiceAccount'"}
_KIND_MEMBER = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}


def dangling_status(obj: Obj) -> str:
    """The Dangling condition's status (`?` before the controller wrote one)."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Dangling":
            return str(cond.get("status") or "")
    return "?"


def _distinguisher(obj: Obj) -> str:
    method = (obj.get("spec") or {}).get("distinguisherMethod")
    return method.get("type", "") if isinstance(method, dict) else "<none>"


class FlowSchemaStrategy(GenericStrategy):
    group = "flowcontrol.apiserver.k8s.io"
    kind = "FlowSchema"
    resource = "flowschemas"
    singular = "flowschema"
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    subresources = frozenset({"status"})
    printer = (
        NAME,
        Printed(Column("PriorityLevel", description="`name` is the name of the priority "
                       "level configuration being referenced Required."),
                lambda o: ((o.get("spec") or {}).get("priorityLevelConfiguration") or {})
                .get("name", "")),
        Printed(Column("MatchingPrecedence", description="`matchingPrecedence` is used to "
                       "choose among the FlowSchemas that match a given request."),
                lambda o: (o.get("spec") or {}).get("matchingPrecedence", 0)),
        Printed(Column("DistinguisherMethod", description="`distinguisherMethod` defines how "
                       "to compute the flow distinguisher for requests that match this "
                       "schema."), _distinguisher),
        AGE_COLUMN,
        Printed(Column("MissingPL", description="references a broken or non-existent "
                       "PriorityLevelConfiguration"), dangling_status),
    )

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
            spec["matchingPrecedence"] = DEFAULT_MATCHING_PRECEDENCE

    def table_sort(self, objects: list[Obj]) -> list[Obj]:
        # Upstream prints a list in matching order.
        return sorted(objects, key=lambda o: ((o.get("spec") or {}).get("matchingPrecedence", 0),
                                              (o.get("metadata") or {}).get("name", "")))

    def validate_object(self, obj: Obj, ctx: Context) -> list[FieldError]:
        name = (obj.get("metadata") or {}).get("name", "")
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs = validate_spec(name, spec, path)
        mandatory = MANDATORY_SCHEMA_SPECS.get(name)
        if mandatory is not None and not spec_equalish(mandatory, spec):
            errs.append(invalid(path, spec, f"spec of '{name}' must equal the fixed value"))
        return errs + validate_status(obj.get("status") or {}, Path("status"))

    def validate_status_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return validate_status(new.get("status") or {}, Path("status"))


def validate_spec(name: str, spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    precedence = spec.get("matchingPrecedence") or 0
    at = path.child("matchingPrecedence")
    if precedence <= 0:
        errs.append(invalid(at, precedence, "must be a positive value"))
    if precedence > MAX_MATCHING_PRECEDENCE:
        errs.append(invalid(at, precedence, f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != "exempt":
        errs.append(invalid(at, precedence,
                            "only the schema named 'exempt' may have matchingPrecedence 1"))
    method = spec.get("distinguisherMethod")
    if isinstance(method, dict) and method.get("type") not in _DISTINGUISHERS:
        errs.append(not_supported(path.child("distinguisherMethod", "type"), method,
                                  _DISTINGUISHERS))
    level = (spec.get("priorityLevelConfiguration") or {}).get("name") or ""
    at = path.child("priorityLevelConfiguration", "name")
    if level:
        errs += [invalid(at, level, msg) for msg in is_dns1123_subdomain(level)]
    else:
        errs.append(required(at, "must reference a priority level"))
    for i, rule in enumerate(spec.get("rules") or []):
        errs += _rule(rule if isinstance(rule, dict) else {}, path.child("rules").index(i))
    return errs


def _rule(rule: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    subjects = rule.get("subjects") or []
    if not subjects:
        errs.append(required(path.child("subjects"), "subjects must contain at least one value"))
    for i, subject in enumerate(subjects):
        errs += _subject(subject if isinstance(subject, dict) else {},
                         path.child("subjects").index(i))
    resource_rules = rule.get("resourceRules") or []
    non_resource_rules = rule.get("nonResourceRules") or []
    if not resource_rules and not non_resource_rules:
        errs.append(required(path, "at least one of resourceRules and nonResourceRules has to "
                             "be non-empty"))
    for i, rr in enumerate(resource_rules):
        errs += _resource_rule(rr if isinstance(rr, dict) else {},
                               path.child("resourceRules").index(i))
    for i, nr in enumerate(non_resource_rules):
        errs += _non_resource_rule(nr if isinstance(nr, dict) else {},
                                   path.child("nonResourceRules").index(i))
    return errs


def _subject(subject: Obj, path: Path) -> list[FieldError]:
    kind = subject.get("kind") or ""
    member = _KIND_MEMBER.get(kind)
    if member is None:
        return [not_supported(path.child("kind"), kind, _SUBJECT_KINDS)]
    errs: list[FieldError] = []
    body = subject.get(member)
    at = path.child(member)
    if not isinstance(body, dict):
        errs.append(required(at, f"{member} is required when subject kind is '{kind}'"))
    elif kind == "ServiceAccount":
        name, namespace = body.get("name") or "", body.get("namespace") or ""
        if not name:
            errs.append(required(at.child("name")))
        elif name != "*":
            errs += [invalid(at.child("name"), name, m) for m in is_dns1123_subdomain(name)]
        if namespace:
            errs += [invalid(at.child("namespace"), namespace, m)
                     for m in is_dns1123_label(namespace)]
        else:
            errs.append(required(at.child("namespace"),
                                 "must specify namespace for service account"))
    elif not body.get("name"):
        errs.append(required(at.child("name")))
    for other in ("serviceAccount", "user", "group"):
        if other != member and subject.get(other) is not None:
            errs.append(forbidden(path.child(other), _FORBIDDEN_MEMBER[other]))
    return errs


def _verbs(verbs: list[Any], path: Path) -> list[FieldError]:
    if not verbs:
        return [required(path, "verbs must contain at least one value")]
    if "*" in verbs:
        return [invalid(path, verbs, "if '*' is present, must not specify other verbs")] \
            if len(verbs) > 1 else []
    if not set(verbs) <= set(SUPPORTED_VERBS):
        return [not_supported(path, verbs, SUPPORTED_VERBS)]
    return []


def _resource_rule(rule: Obj, path: Path) -> list[FieldError]:
    errs = _verbs(rule.get("verbs") or [], path.child("verbs"))
    groups = rule.get("apiGroups") or []
    if not groups:
        errs.append(required(path.child("apiGroups"),
                             "resource rules must supply at least one api group"))
    elif len(groups) > 1 and "*" in groups:
        errs.append(invalid(path.child("apiGroups"), groups,
                            "if '*' is present, must not specify other api groups"))
    resources = rule.get("resources") or []
    if not resources:
        errs.append(required(path.child("resources"),
                             "resource rules must supply at least one resource"))
    elif len(resources) > 1 and "*" in resources:
        errs.append(invalid(path.child("resources"), resources,
                            "if '*' is present, must not specify other resources"))
    namespaces = rule.get("namespaces") or []
    if not namespaces and not rule.get("clusterScope"):
        errs.append(required(path.child("namespaces"), "resource rules that are not cluster "
                             "scoped must supply at least one namespace"))
    elif "*" in namespaces:
        if len(namespaces) > 1:
            errs.append(invalid(path.child("namespaces"), namespaces,
                                "if '*' is present, must not specify other namespaces"))
    else:
        for i, namespace in enumerate(namespaces):
            errs += [invalid(path.child("namespaces").index(i), namespace, _NAMESPACE_INTRO + m)
                     for m in is_dns1123_label(str(namespace))]
    return errs


def _non_resource_rule(rule: Obj, path: Path) -> list[FieldError]:
    errs = _verbs(rule.get("verbs") or [], path.child("verbs"))
    urls = rule.get("nonResourceURLs") or []
    at = path.child("nonResourceURLs")
    if not urls:
        errs.append(required(at, "nonResourceURLs must contain at least one value"))
    elif "*" in urls:
        if len(urls) > 1:
            errs.append(invalid(at, urls,
                                "if '*' is present, must not specify other non-resource URLs"))
    else:
        for i, url in enumerate(urls):
            problem = _url_problem(str(url))
            if problem:
                errs.append(invalid(at.index(i), url, problem))
    return errs


def _url_problem(url: str) -> str:
    """Upstream's ValidateNonResourceURLPath."""
    if not url:
        return "must not be empty"
    if url == "/":
        return ""
    if not url.startswith("/"):
        return "must start with slash"
    if " " in url:
        return "must not contain white-space"
    if "//" in url:
        return "must not contain double slash"
    stars = url.count("*")
    if stars > 1 or (stars == 1 and not url.endswith("/*")):
        return "wildcard can only do suffix matching"
    return ""


def validate_status(status: Obj, path: Path) -> list[FieldError]:
    """Conditions of either kind: a type each, no type twice."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, cond in enumerate(status.get("conditions") or []):
        at = path.child("conditions").index(i)
        kind = str(cond.get("type") or "") if isinstance(cond, dict) else ""
        if kind in seen:
            errs.append(duplicate(at.child("type"), kind))
        seen.add(kind)
        if not kind:
            errs.append(required(at.child("type")))
    return errs


STRATEGIES = [FlowSchemaStrategy()]
