"""Which requests a ValidatingAdmissionPolicy (or its binding, or a webhook) applies to:
`matchConstraints` / `matchResources` (resourceRules, excludeResourceRules,
namespaceSelector, objectSelector, matchPolicy), after upstream's
`admission/plugin/policy/matching` and `webhook/predicates`."""

from __future__ import annotations

from dataclasses import dataclass

from draemu.api import labels
from draemu.api.types import Obj


@dataclass(frozen=True)
class Request:
    """What admission knows of one request."""

    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    group: str
    version: str
    resource: str
    subresource: str
    kind: str
    namespace: str
    name: str
    namespaced: bool


def _rule_matches(rule: Obj, req: Request, exact: bool) -> bool:
    operations = rule.get("operations") or []
    if "*" not in operations and req.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and req.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if exact and "*" not in versions and req.version not in versions:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and req.namespaced or scope == "Namespaced" and not req.namespaced:
        return False
    names = rule.get("resourceNames") or []
    if names and req.name not in names:
        return False
    wanted = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
    for resource in rule.get("resources") or []:
        if resource == "*/*" or resource == wanted:
            return True
        main, _, sub = resource.partition("/")
        if main == "*" and not sub and not req.subresource:
            return True
        if main == "*" and sub and sub == req.subresource:
            return True
        if main == req.resource and sub == "*" and req.subresource:
            return True
    return False


def resources_match(match: Obj | None, req: Request, obj: Obj | None, old: Obj | None,
                    namespace: Obj | None) -> bool:
    """Whether `match` (a MatchResources) selects the request. `namespace` is the
    request's Namespace object (None for cluster-scoped objects)."""
    if match is None:
        return True
    exact = (match.get("matchPolicy") or "Equivalent") == "Exact"
    rules = match.get("resourceRules")
    if rules is not None and not any(_rule_matches(r, req, exact) for r in rules):
        return False
    if any(_rule_matches(r, req, exact) for r in match.get("excludeResourceRules") or []):
        return False
    if not _namespace_matches(match.get("namespaceSelector"), req, obj, old, namespace):
        return False
    return _object_matches(match.get("objectSelector"), obj, old)


def _labels_of(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _namespace_matches(selector: Obj | None, req: Request, obj: Obj | None, old: Obj | None,
                       namespace: Obj | None) -> bool:
    if labels.is_empty(selector):
        return True
    if req.group == "" and req.resource == "namespaces" and not req.subresource:
        # A Namespace is matched by its own labels.
        return labels.matches(selector, _labels_of(obj or old))
    if not req.namespaced:
        return True  # cluster-scoped objects are not selected out by namespace
    return labels.matches(selector, _labels_of(namespace))


def _object_matches(selector: Obj | None, obj: Obj | None, old: Obj | None) -> bool:
    if labels.is_empty(selector):
        return True
    return any(o is not None and labels.matches(selector, _labels_of(o)) for o in (obj, old))
