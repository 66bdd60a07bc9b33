"""Impersonation: `Impersonate-User`, `-Group`, `-Uid` and `-Extra-<key>` headers make a
request act as another user, as kube-apiserver 1.37's impersonation filter does with
ConstrainedImpersonation on (its default).

The requester must be allowed to impersonate. The constrained modes are tried first —
`associated-node` (a service account impersonating the node its pod runs on),
`arbitrary-node`, `serviceaccount`, `user-info` (anyone else) — each needing
`impersonate-on:<mode>:<verb>` on what the request does plus `impersonate:<mode>` on the
identity (users, nodes, serviceaccounts, groups, uids and userextras of
authentication.k8s.io); then the legacy `impersonate` verb on users, groups and
serviceaccounts of the core group (uids and userextras of authentication.k8s.io). The
first refusal met is the answer (403, upstream's texts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

from multidict import CIMultiDictProxy

from draemu.api.errors import StatusError, bad_request, go_quote
from draemu.apiserver.auth.authorization import Attributes, Authorizer, forbidden
from draemu.identity import (
    AUTHENTICATED,
    MASTERS,
    NODE_PREFIX,
    NODES,
    UserInfo,
    service_account_groups,
    split_service_account,
)

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHN_GROUP = "authentication.k8s.io"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_NAME = "system:anonymous"
# Above this many groups or extra values a constrained mode first tries one `*` check.
_MANY = 4


@dataclass
class Wanted:
    name: str
    uid: str
    groups: list[str]
    extra: dict[str, list[str]]


def wanted_user(headers: CIMultiDictProxy[str]) -> Wanted | None:
    """The identity the headers ask for, None without impersonation; 400 for groups,
    uid or extra without a user name."""
    name = headers.get(USER_HEADER, "")
    uid = headers.get(UID_HEADER, "")
    groups = list(headers.getall(GROUP_HEADER, []))
    extra: dict[str, list[str]] = {}
    has_extra = False
    for key, value in headers.items():
        if key.lower().startswith(EXTRA_PREFIX):
            has_extra = True
            extra.setdefault(unquote(key[len(EXTRA_PREFIX):].lower()), []).append(value)
    if not name and (uid or groups or has_extra):
        raise bad_request(f"requested {_go_user(name, uid, groups, extra)} without "
                          "impersonating a user name")
    if not name:
        return None
    return Wanted(name, uid, groups, extra)


def _go_user(name: str, uid: str, groups: list[str], extra: dict[str, list[str]]) -> str:
    """A wanted user as Go's %#v prints a *user.DefaultInfo."""
    shown_groups = "[]string{" + ", ".join(go_quote(g) for g in groups) + "}" if groups \
        else "[]string(nil)"
    if extra:
        shown_extra = "map[string][]string{" + ", ".join(
            f"{go_quote(k)}:[]string{{{', '.join(go_quote(v) for v in vs)}}}"
            for k, vs in sorted(extra.items())) + "}"
    else:
        shown_extra = "map[string][]string(nil)"
    return (f"&user.DefaultInfo{{Name:{go_quote(name)}, UID:{go_quote(uid)}, "
            f"Groups:{shown_groups}, Extra:{shown_extra}}}")


def _node_name(username: str) -> str | None:
    if username.startswith(NODE_PREFIX) and len(username) > len(NODE_PREFIX):
        return username[len(NODE_PREFIX):]
    return None


class Impersonator:
    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def _check(self, attrs: Attributes) -> None:
        decision = self.authorizer.authorize(attrs)
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)

    def impersonate(self, wanted: Wanted, request: Attributes) -> UserInfo:
        """The user the request acts as, or a 403."""
        requester = request.user
        only_name = not wanted.uid and not wanted.groups and not wanted.extra
        node = _node_name(wanted.name)
        account = split_service_account(wanted.name)
        modes: list[tuple[str, Callable[[], bool]]] = [
            ("associated-node", lambda: only_name and node is not None
             and split_service_account(requester.name) is not None
             and requester.extra.get(NODE_NAME_EXTRA) == [node]),
            ("arbitrary-node", lambda: only_name and node is not None),
            ("serviceaccount", lambda: only_name and account is not None),
            ("user-info", lambda: node is None and account is None),
        ]
        first: StatusError | None = None
        for mode, applies in modes:
            if not applies():
                continue
            try:
                self._check(_with(request, verb=f"impersonate-on:{mode}:{request.verb}"))
                return self._identity(wanted, requester, f"impersonate:{mode}", True,
                                      associated=mode == "associated-node")
            except StatusError as e:
                first = first or e
        try:
            return self._identity(wanted, requester, "impersonate", False)
        except StatusError as e:
            raise (first or e) from None

    def _identity(self, wanted: Wanted, requester: UserInfo, verb: str, constrained: bool,
                  associated: bool = False) -> UserInfo:
        name_group = AUTHN_GROUP if constrained else ""
        groups = list(wanted.groups)
        attrs = Attributes(requester, verb, name_group, "v1", "users", name=wanted.name)
        node = _node_name(wanted.name) if constrained else None
        if node is not None:
            attrs = _with(attrs, resource="nodes", name="*" if associated else node)
            if wanted.groups:
                raise forbidden(attrs, "when impersonating a node, cannot impersonate "
                                           f"groups {_go_strings(wanted.groups)}")
            groups = [NODES]
        account = split_service_account(wanted.name)
        if account is not None:
            attrs = _with(attrs, resource="serviceaccounts", namespace=account[0],
                          name=account[1])
            if constrained and wanted.groups:
                raise forbidden(attrs, "when impersonating a service account, cannot "
                                           f"impersonate groups {_go_strings(wanted.groups)}")
            if not wanted.groups:
                groups = list(service_account_groups(account[0])[:2])
        self._check(attrs)
        if wanted.uid:
            self._check(Attributes(requester, verb, AUTHN_GROUP, "v1", "uids", name=wanted.uid))
        if wanted.groups:
            self._check_groups(requester, verb, name_group, wanted.groups, constrained)
        if wanted.extra:
            self._check_extra(requester, verb, wanted.extra, constrained)
        if wanted.name == ANONYMOUS_NAME:
            if UNAUTHENTICATED not in groups:
                groups.append(UNAUTHENTICATED)
        elif UNAUTHENTICATED not in groups and AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        return UserInfo(wanted.name, uid=wanted.uid, groups=tuple(groups),
                        extra={k: list(v) for k, v in wanted.extra.items()})

    def _check_groups(self, requester: UserInfo, verb: str, group: str, groups: list[str],
                      constrained: bool) -> None:
        attrs = Attributes(requester, verb, group, "v1", "groups")
        if constrained:
            if "" in groups:
                raise forbidden(attrs, "impersonating the empty string group is not allowed")
            if MASTERS in groups:
                raise forbidden(_with(attrs, name=MASTERS),
                                    "impersonating the system:masters group is not allowed")
            if len(groups) >= _MANY and \
                    self.authorizer.authorize(_with(attrs, name="*")).allowed:
                return
        for name in groups:
            self._check(_with(attrs, name=name))

    def _check_extra(self, requester: UserInfo, verb: str, extra: dict[str, list[str]],
                     constrained: bool) -> None:
        attrs = Attributes(requester, verb, AUTHN_GROUP, "v1", "userextras")
        if constrained:
            problem = _extra_problem(extra)
            if problem:
                raise forbidden(attrs, problem)
            if sum(len(v) for v in extra.values()) >= _MANY and self.authorizer.authorize(
                    _with(attrs, subresource="*", name="*")).allowed:
                return
        for key, values in extra.items():
            for value in values:
                self._check(_with(attrs, subresource=key, name=value))


def _extra_problem(extra: dict[str, list[str]]) -> str:
    for key, values in extra.items():
        if not key:
            return "impersonating the empty string key in extra is not allowed"
        if key != key.lower():
            return f"impersonating a non-lowercase key in extra is not allowed: {go_quote(key)}"
        if not values:
            return "impersonating empty values in extra is not allowed"
        if "" in values:
            return "impersonating the empty string value in extra is not allowed"
    return ""


def _go_strings(values: list[str]) -> str:
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def _with(attrs: Attributes, **changes: Any) -> Attributes:
    return replace(attrs, **changes)
