"""Privilege-escalation prevention on writes of roles and bindings, as upstream's RBAC
registry (pkg/registry/rbac/*/policybased):

- a Role or ClusterRole may be written by `system:masters`, by whoever may `escalate`
  it, or by a user who holds every permission it grants (in the role's namespace);
  an aggregationRule needs every permission (`*` on `*`);
- a RoleBinding or ClusterRoleBinding may be written by `system:masters`, by whoever
  may `bind` the role it refers to, or by a user who holds every permission of that
  role (a role that does not exist then refuses the write).

Refusals are 403s with upstream's texts (`user "x" (groups=[...]) is attempting to grant
RBAC permissions not currently held:` and the missing rules, one per line).
"""

from __future__ import annotations

from typing import Any, Protocol

from draemu.api.errors import StatusError, forbidden_error
from draemu.api.types import Obj
from draemu.apiserver.auth.authorization import Attributes, Decision
from draemu.apiserver.auth.rbac.rules import Rule, compact, compact_string, covers, go_list
from draemu.identity import MASTERS, UserInfo

GROUP = "rbac.authorization.k8s.io"
FULL_AUTHORITY: list[Rule] = [
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
]


class AccessControl(Protocol):
    """What escalation checks ask of the request's authorizer."""

    def authorize(self, attrs: Attributes) -> Decision: ...

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]: ...


def escalation_allowed(user: UserInfo) -> bool:
    # The apiserver's own loopback identity is in system:masters: it may do anything.
    return MASTERS in user.groups


def _forbidden(resource: str, name: str, message: str) -> StatusError:
    return forbidden_error(f'{resource}.{GROUP} "{name}" is forbidden: {message}',
                           {"name": name, "group": GROUP, "kind": resource})


def no_escalation_refusal(access: AccessControl, user: UserInfo, namespace: str,
                          rules: list[Rule]) -> str:
    """Why granting `rules` would escalate `user`'s privileges in `namespace`, or ""."""
    owned, errors = access.rules_for(user, namespace)
    ok, missing = covers(owned, rules)
    if ok:
        return ""
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (f"user {_quote(user.name)} (groups={go_list(list(user.groups))}) is attempting "
               "to grant RBAC permissions not currently held:\n" + "\n".join(lines))
    if errors:
        joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        message += f"; resolution errors: [{joined}]"
    return message


def _quote(text: str) -> str:
    return go_list([text])[1:-1]


def check_role_write(access: AccessControl | None, user: UserInfo, resource: str,
                     namespace: str, name: str, role: Obj, *, request_name: str) -> None:
    """Refuse (403) a create or update of a Role (`resource` "roles") or ClusterRole
    that grants more than `user` holds."""
    if escalation_allowed(user) or access is None:
        return
    # The name is the request's: a create (POST to the collection) names none, so only
    # an `escalate` on every role of the namespace allows it, as upstream.
    if access.authorize(Attributes(user, "escalate", GROUP, "*", resource, "", namespace,
                                   request_name)).allowed:
        return
    if role.get("aggregationRule") is not None and \
            no_escalation_refusal(access, user, namespace, FULL_AUTHORITY):
        raise _forbidden(resource, name, "must have cluster-admin privileges to use the "
                                         "aggregationRule")
    message = no_escalation_refusal(access, user, namespace, list(role.get("rules") or []))
    if message:
        raise _forbidden(resource, name, message)


def check_binding_write(access: AccessControl | None, user: UserInfo, resource: str,
                        namespace: str, name: str, binding: Obj,
                        role_rules: Any) -> None:
    """Refuse (403) a create or update of a RoleBinding (`resource` "rolebindings") or
    ClusterRoleBinding whose role grants more than `user` holds. `role_rules(roleRef,
    namespace)` resolves the role: (rules, error)."""
    if escalation_allowed(user) or access is None:
        return
    ref = binding.get("roleRef") or {}
    target = {"ClusterRole": "clusterroles", "Role": "roles"}.get(ref.get("kind", ""))
    if target is not None and access.authorize(Attributes(
            user, "bind", ref.get("apiGroup", ""), "", target, "", namespace,
            ref.get("name", ""))).allowed:
        return
    rules, error = role_rules(ref, namespace)
    if error:
        raise _forbidden(resource, name, error)
    message = no_escalation_refusal(access, user, namespace, rules)
    if message:
        raise _forbidden(resource, name, message)


def only_gc_fields_changed(new: Obj, old: Obj) -> bool:
    """Whether an update changes nothing but owner references and finalizers (what the
    garbage collector writes), which upstream lets through unchecked."""
    ignored = ("ownerReferences", "finalizers", "managedFields", "resourceVersion",
               "generation", "uid", "creationTimestamp", "deletionTimestamp",
               "deletionGracePeriodSeconds")

    def strip(obj: Obj) -> Obj:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ignored}
        return {**{k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")},
                "metadata": meta}

    return strip(new) == strip(old)
