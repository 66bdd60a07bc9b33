"""Who a request is: the user, groups and extra of Kubernetes' user.Info.

Shared by the apiserver (which authenticates and authorizes requests) and the
kubelets' servers (which accept the apiserver's and administrators' client
certificates): a client certificate's CN is the user and its O entries the groups,
every authenticated user is also in `system:authenticated`, and nodes are
`system:node:<name>` in `system:nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MASTERS = "system:masters"
NODES = "system:nodes"
AUTHENTICATED = "system:authenticated"
NODE_PREFIX = "system:node:"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS = "system:serviceaccounts"
# The control plane's own users, bound by the bootstrap RBAC policy.
KUBE_SCHEDULER = "system:kube-scheduler"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    @property
    def node_name(self) -> str | None:
        """The node of a kubelet identity, else None."""
        if self.name.startswith(NODE_PREFIX) and NODES in self.groups:
            return self.name[len(NODE_PREFIX):]
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = self.extra
        return out


ANONYMOUS = UserInfo("system:anonymous", groups=("system:unauthenticated",))
# The identity of requests on the loopback-only plain-HTTP endpoint.
INSECURE_ADMIN = UserInfo("system:admin", groups=(MASTERS, AUTHENTICATED))


def service_account_user(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED)


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a `system:serviceaccount:<ns>:<name>` user, else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username[len(SERVICE_ACCOUNT_PREFIX):].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name


def with_authenticated(groups: list[str]) -> tuple[str, ...]:
    return tuple(groups) if AUTHENTICATED in groups else (*groups, AUTHENTICATED)


def user_from_peercert(peercert: dict[str, Any] | None) -> UserInfo | None:
    """The identity in a verified client certificate (ssl's `getpeercert()` form)."""
    if not peercert:
        return None
    name = ""
    groups: list[str] = []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return UserInfo(name, groups=with_authenticated(groups))
