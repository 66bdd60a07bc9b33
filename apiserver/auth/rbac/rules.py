"""PolicyRules: matching a request, covering other rules, describing missing ones.

A rule is the JSON of an rbac.authorization.k8s.io/v1 PolicyRule (`verbs`, `apiGroups`,
`resources`, `resourceNames`, `nonResourceURLs`). Matching follows upstream's
RuleAllows: `*` matches everything, `*/scale` any resource's scale subresource, a
nonResourceURL ending in `*` every path under its prefix, and an empty `resourceNames`
any name.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import go_quote

Rule = dict[str, Any]
ALL = "*"


def _resource_matches(rule_resources: list[str], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in rule_resources:
        if candidate == ALL or candidate == combined:
            return True
        # `*/status` matches the status subresource of every resource.
        if subresource and candidate == f"*/{subresource}":
            return True
    return False


def _url_matches(rule_urls: list[str], path: str) -> bool:
    for url in rule_urls:
        if url == ALL or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def allows(rule: Rule, verb: str, *, resource_request: bool, group: str = "",
           resource: str = "", subresource: str = "", name: str = "", path: str = "") -> bool:
    """Whether `rule` allows the request (upstream's RuleAllows)."""
    verbs = rule.get("verbs") or ()
    if ALL not in verbs and verb not in verbs:
        return False
    if not resource_request:
        return _url_matches(rule.get("nonResourceURLs") or [], path)
    groups = rule.get("apiGroups") or ()
    if ALL not in groups and group not in groups:
        return False
    if not _resource_matches(rule.get("resources") or [], resource, subresource):
        return False
    names = rule.get("resourceNames") or ()
    return not names or name in names


# Covering (escalation prevention) ------------------------------------------------------------
def breakdown(rule: Rule) -> list[Rule]:
    """One rule per group, resource, verb and name (or per URL and verb), as upstream's
    BreakdownRule, so that coverage is checked piece by piece."""
    out: list[Rule] = []
    verbs = rule.get("verbs") or []
    names = rule.get("resourceNames") or []
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in verbs:
                if names:
                    out.extend({"apiGroups": [group], "resources": [resource], "verbs": [verb],
                                "resourceNames": [name]} for name in names)
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in rule.get("nonResourceURLs") or []:
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _has_all(owned: list[str], wanted: list[str]) -> bool:
    return set(wanted) <= set(owned)


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if ALL in owned or _has_all(owned, wanted):
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or f"*/{resource.split('/', 1)[1]}" not in owned:
            return False
    return True


def _urls_cover(owned: list[str], wanted: list[str]) -> bool:
    return all(any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owned)
               for w in wanted)


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """Whether `owner` grants everything the atomic rule `sub` grants."""
    verbs, groups = owner.get("verbs") or [], owner.get("apiGroups") or []
    if not (ALL in verbs or _has_all(verbs, sub.get("verbs") or [])):
        return False
    if not (ALL in groups or _has_all(groups, sub.get("apiGroups") or [])):
        return False
    if not _resources_cover(owner.get("resources") or [], sub.get("resources") or []):
        return False
    if not _urls_cover(owner.get("nonResourceURLs") or [], sub.get("nonResourceURLs") or []):
        return False
    owner_names, sub_names = owner.get("resourceNames") or [], sub.get("resourceNames") or []
    if not sub_names:
        return not owner_names
    return not owner_names or _has_all(owner_names, sub_names)


def covers(owner_rules: list[Rule], rules: list[Rule]) -> tuple[bool, list[Rule]]:
    """Whether `owner_rules` grant all of `rules`, and the atomic rules they do not."""
    missing = [sub for rule in rules for sub in breakdown(rule)
               if not any(rule_covers(owner, sub) for owner in owner_rules)]
    return not missing, missing


def compact(rules: list[Rule]) -> list[Rule]:
    """Atomic rules of one group, resource and (at most one) name joined into one rule
    with all their verbs, as upstream's CompactRules."""
    out: list[Rule] = []
    simple: dict[tuple[str, str, tuple[str, ...]], Rule] = {}
    for rule in rules:
        groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
        names = rule.get("resourceNames") or []
        if len(names) > 1 or rule.get("nonResourceURLs") or len(groups) != 1 or \
                len(resources) != 1:
            out.append(rule)
            continue
        key = (groups[0], resources[0], tuple(names))
        if key in simple:
            simple[key]["verbs"] = [*simple[key]["verbs"], *(rule.get("verbs") or [])]
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
    return out + list(simple.values())


def go_list(values: list[str]) -> str:
    """A []string as Go's %q prints it: `["a" "b"]`."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: Rule) -> str:
    """Upstream's CompactString: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`."""
    parts = []
    for key, label in (("apiGroups", "APIGroups"), ("resources", "Resources"),
                       ("nonResourceURLs", "NonResourceURLs"),
                       ("resourceNames", "ResourceNames"), ("verbs", "Verbs")):
        if rule.get(key):
            parts.append(f"{label}:{go_list(rule[key])}")
    return "{" + ", ".join(parts) + "}"
