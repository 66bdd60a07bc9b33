"""Authorization: what a request wants (`Attributes`), the authorizers' contract and
kube-apiserver's chain with `--authorization-mode=Node,RBAC`: system:masters first
(`PrivilegedGroupAuthorizer`), then the Node authorizer (`nodeauthorizer.py`), then RBAC
(`auth/rbac/`), joined by `UnionAuthorizer`. Who the user is: `authentication.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from draemu.api.errors import StatusError, forbidden_error
from draemu.identity import MASTERS, UserInfo

# Paths anyone may read without credentials, as kube-apiserver's default RBAC allows
# (system:public-info-viewer).
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


@dataclass(frozen=True)
class Attributes:
    """What a request wants to do, as kube's authorizer sees it."""

    user: UserInfo
    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    # The request's fieldSelector: the node authorizer lets nodes list only their own.
    field_selector: str = ""

    @property
    def resource_request(self) -> bool:
        return bool(self.resource)


def forbidden(attrs: Attributes, reason: str = "") -> StatusError:
    """The 403 of a refused request, in upstream's words (ForbiddenStatusError):
    `<resource>.<group> "<name>" is forbidden: User "<u>" cannot <verb> resource "<res>"
    in API group "<g>" in the namespace "<ns>"`, then `: <reason>` when there is one."""
    user = attrs.user.name
    because = f": {reason}" if reason else ""
    if not attrs.resource_request:
        return forbidden_error(f'forbidden: User "{user}" cannot {attrs.verb} path '
                               f'"{attrs.path}"{because}')
    what = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else \
        " at the cluster scope"
    subject = f'{qualified} "{attrs.name}" is forbidden' if attrs.name else \
        f"{qualified} is forbidden"
    return forbidden_error(
        f'{subject}: User "{user}" cannot {attrs.verb} resource "{what}" in API group '
        f'"{attrs.group}"{where}{because}',
        {"name": attrs.name, **({"group": attrs.group} if attrs.group else {}),
         "kind": attrs.resource})


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class Authorizer(Protocol):
    def authorize(self, attrs: Attributes) -> Decision: ...


class UnionAuthorizer:
    """The first authorizer that allows decides; otherwise the reasons of those that
    gave one are joined, as kube-apiserver's union authorizer does. Its rules are the
    union of its authorizers' (`rules_for`: SelfSubjectRulesReview, escalation checks)."""

    def __init__(self, *authorizers: Authorizer) -> None:
        self.authorizers = authorizers

    def authorize(self, attrs: Attributes) -> Decision:
        reasons = []
        for authorizer in self.authorizers:
            decision = authorizer.authorize(attrs)
            if decision.allowed:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
        return Decision(False, ", ".join(reasons))

    def rules_for(self, user: UserInfo, namespace: str
                  ) -> tuple[list[dict[str, Any]], list[str]]:
        """(PolicyRules, resolution errors) of `user` in `namespace`."""
        rules: list[dict[str, Any]] = []
        errors: list[str] = []
        for authorizer in self.authorizers:
            resolve = getattr(authorizer, "rules_for", None)
            if resolve is not None:
                more, problems = resolve(user, namespace)
                rules += more
                errors += problems
        return rules, errors


class PrivilegedGroupAuthorizer:
    """system:masters may do anything (upstream's privileged-group authorizer, first in
    the chain); everyone else is left to the Node and RBAC authorizers."""

    _ALL = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["*"], "nonResourceURLs": ["*"]}]

    def authorize(self, attrs: Attributes) -> Decision:
        if MASTERS in attrs.user.groups:
            return Decision(True, "")
        return Decision(False, "")

    def rules_for(self, user: UserInfo, namespace: str
                  ) -> tuple[list[dict[str, Any]], list[str]]:
        return ([dict(r) for r in self._ALL] if MASTERS in user.groups else []), []
