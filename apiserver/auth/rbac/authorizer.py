"""The RBAC authorizer: a request is allowed when a rule of a role bound to its user
allows it, as kube-apiserver's RBAC authorizer decides.

Bindings and roles are read from the watch cache on every decision (no copy to keep in
step): ClusterRoleBindings apply everywhere, RoleBindings in their namespace; a binding
whose role does not exist grants nothing and says so in the reason of a refusal
(`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`), as upstream's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.auth.authorization import Attributes, Decision
from draemu.apiserver.auth.rbac.rules import Rule, allows
from draemu.identity import UserInfo, service_account_user

GROUP = "rbac.authorization.k8s.io"
Lookup = Callable[[str, str, str, str], Any]
NamespaceLookup = Callable[[str, str, str], list[Obj]]


def _describe_subject(subject: Obj, namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or namespace}"'
    return f'{kind} "{name}"'


def applies_to(user: UserInfo, subject: Obj, namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or namespace
        return bool(ns) and user.name == service_account_user(ns, name)
    return False


def role_rules(lookup: Lookup, role_ref: Obj, namespace: str) -> tuple[list[Rule], str]:
    """The rules of a binding's role, or an error text when it cannot be resolved
    (upstream's listers' NotFound, with the singular resource name)."""
    kind, name = role_ref.get("kind"), role_ref.get("name", "")
    if kind == "ClusterRole":
        role = lookup("clusterroles", GROUP, "", name)
        if role is None:
            return [], f'clusterrole.{GROUP} "{name}" not found'
    elif kind == "Role":
        role = lookup("roles", GROUP, namespace, name)
        if role is None:
            return [], f'role.{GROUP} "{name}" not found'
    else:
        return [], f'unsupported role reference kind: "{kind}"'
    return list(role.get("rules") or []), ""


# Decisions kept between changes of RBAC objects; past this many the memo starts over.
_MEMO_LIMIT = 50_000


class RBACAuthorizer:
    """`version()` (optional) changes whenever a role or binding does: decisions and
    resolved rules are remembered until then (the watch cache's bucket versions)."""

    def __init__(self, lookup: Lookup, in_namespace: NamespaceLookup,
                 version: Callable[[], Any] | None = None) -> None:
        self.lookup = lookup
        self.in_namespace = in_namespace
        self.version = version
        self._seen: Any = None
        self._resolved: dict[tuple[Any, ...], list[tuple[str, Rule | None, str]]] = {}
        self._decisions: dict[tuple[Any, ...], Decision] = {}

    def _fresh(self) -> bool:
        """Forget what was derived from RBAC objects that changed since; False when there
        is no version to go by (nothing is remembered then)."""
        if self.version is None:
            return False
        now = self.version()
        if now != self._seen or len(self._decisions) > _MEMO_LIMIT:
            self._seen = now
            self._resolved.clear()
            self._decisions.clear()
        return True

    def _rules(self, user: UserInfo, namespace: str) -> list[tuple[str, Rule | None, str]]:
        key = (user.name, user.groups, namespace)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = list(self.visit(user, namespace))
        return found

    def visit(self, user: UserInfo, namespace: str) -> Iterator[tuple[str, Rule | None, str]]:
        """(source, rule, error) for every rule that applies to `user` in `namespace`
        (cluster-wide rules only when `namespace` is empty), as upstream's VisitRulesFor."""
        for binding in self.in_namespace("clusterrolebindings", GROUP, ""):
            subject = next((s for s in binding.get("subjects") or []
                            if applies_to(user, s, "")), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            rules, error = role_rules(self.lookup, ref, "")
            if error:
                yield "", None, error
                continue
            source = (f'ClusterRoleBinding "{binding["metadata"]["name"]}" of '
                      f'{ref.get("kind")} "{ref.get("name")}" to {_describe_subject(subject, "")}')
            for rule in rules:
                yield source, rule, ""
        if not namespace:
            return
        for binding in self.in_namespace("rolebindings", GROUP, namespace):
            subject = next((s for s in binding.get("subjects") or []
                            if applies_to(user, s, namespace)), None)
            if subject is None:
                continue
            ref = binding.get("roleRef") or {}
            rules, error = role_rules(self.lookup, ref, namespace)
            if error:
                yield "", None, error
                continue
            source = (f'RoleBinding "{binding["metadata"]["name"]}/{namespace}" of '
                      f'{ref.get("kind")} "{ref.get("name")}" to '
                      f"{_describe_subject(subject, namespace)}")
            for rule in rules:
                yield source, rule, ""

    def authorize(self, attrs: Attributes) -> Decision:
        if not self._fresh():
            return self._decide(attrs, self.visit(attrs.user, attrs.namespace))
        user = attrs.user
        key = (user.name, user.groups, attrs.namespace, attrs.verb, attrs.group,
               attrs.resource, attrs.subresource, attrs.name, attrs.path,
               attrs.resource_request)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = self._decide(
                attrs, self._rules(user, attrs.namespace))
        return decision

    def _decide(self, attrs: Attributes, rules: Any) -> Decision:
        errors: list[str] = []
        for source, rule, error in rules:
            if rule is None:
                errors.append(error)
                continue
            if allows(rule, attrs.verb, resource_request=attrs.resource_request,
                      group=attrs.group, resource=attrs.resource,
                      subresource=attrs.subresource, name=attrs.name, path=attrs.path):
                return Decision(True, f"RBAC: allowed by {source}")
        if not errors:
            return Decision(False, "")
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return Decision(False, f"RBAC: {joined}")

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """Every rule `user` holds in `namespace`, and the resolution errors met."""
        rules: list[Rule] = []
        errors: list[str] = []
        resolved = self._rules(user, namespace) if self._fresh() else self.visit(user, namespace)
        for _source, rule, error in resolved:
            if rule is None:
                errors.append(error)
            else:
                rules.append(rule)
        return rules, errors
