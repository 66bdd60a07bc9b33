"""Authentication (x509 client certificates, bearer tokens) and authorization.

Identities follow kube-apiserver: a client certificate's CN is the user and its O
entries the groups; a token file is kube's CSV (`token,user,uid,"group1,group2"`).
Every authenticated user is also in `system:authenticated`. Nodes authenticate as
`system:node:<name>` in `system:nodes`, which `UserInfo.node_name` recognises.

Authorization is kube-apiserver's chain with `--authorization-mode=Node,RBAC`:
system:masters first (`PrivilegedGroupAuthorizer`), then the Node authorizer
(nodeauthz.py), then RBAC (apiserver/rbac/), joined by `UnionAuthorizer`.
"""

from __future__ import annotations

import csv
import io
import ssl
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from draemu.api.errors import StatusError, forbidden_error
from draemu.identity import (
    MASTERS,
    UserInfo,
    user_from_peercert,
    with_authenticated,
)

# Paths anyone may read without credentials, as kube-apiserver's default RBAC allows
# (system:public-info-viewer).
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


class TokenFileError(ValueError):
    pass


def load_token_file(path: Path) -> dict[str, UserInfo]:
    """Parse kube's static token file: `token,user,uid[,"group1,group2"]` per line."""
    tokens: dict[str, UserInfo] = {}
    text = Path(path).read_text()
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or (len(row) == 1 and not row[0].strip()) or row[0].startswith("#"):
            continue
        if len(row) < 3:
            raise TokenFileError(f"token file {path}, line {lineno}: expected at least 3 "
                                 f"columns (token,user,uid), got {len(row)}")
        token, user, uid = (c.strip() for c in row[:3])
        if not token or not user:
            raise TokenFileError(f"token file {path}, line {lineno}: token and user must "
                                 "not be empty")
        groups = [g.strip() for g in row[3].split(",") if g.strip()] if len(row) > 3 else []
        tokens[token] = UserInfo(user, uid=uid, groups=with_authenticated(groups))
    return tokens


class Authenticator:
    """Finds who sent a request: client certificate first, then a bearer token."""

    def __init__(self, tokens: dict[str, UserInfo] | None = None,
                 service_accounts: Any = None) -> None:
        self.tokens = dict(tokens or {})
        # ServiceAccount JWTs (apiserver/serviceaccount/authenticator.py), when set.
        self.service_accounts = service_accounts
        # The client certificate comes with a connection's handshake: identify it once
        # per connection, not per request (kube-apiserver's TLS never renegotiates).
        self._peers: weakref.WeakKeyDictionary[ssl.SSLObject, UserInfo | None] = \
            weakref.WeakKeyDictionary()

    def authenticate(self, ssl_object: ssl.SSLObject | None,
                     authorization: str | None) -> UserInfo | None:
        if ssl_object is not None:
            user = self._peer(ssl_object)
            if user is not None:
                return user
        if authorization:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return self.authenticate_token(token.strip())
        return None

    def authenticate_token(self, token: str, audiences: tuple[str, ...] | None = None
                           ) -> UserInfo | None:
        """The user of a bearer token (static token file, then ServiceAccount JWTs), None
        when it is nobody's."""
        found = self.tokens.get(token)
        if found is not None or self.service_accounts is None:
            return found
        try:
            answer = self.service_accounts.authenticate(token, audiences)
        except ValueError:  # signer.TokenError: ours, but invalid
            return None
        return answer[0] if answer is not None else None

    def _peer(self, ssl_object: ssl.SSLObject) -> UserInfo | None:
        try:
            return self._peers[ssl_object]
        except KeyError:
            user = self._peers[ssl_object] = user_from_peercert(ssl_object.getpeercert())
            return user


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
