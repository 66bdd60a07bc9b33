"""Authentication: who sent a request (x509 client certificates, bearer tokens).

Identities follow kube-apiserver: a client certificate's CN is the user and its O
entries the groups; a token file is kube's CSV (`token,user,uid,"group1,group2"`).
Every authenticated user is also in `system:authenticated`. Nodes authenticate as
`system:node:<name>` in `system:nodes`, which `UserInfo.node_name` recognises.
"""

from __future__ import annotations

import csv
import io
import ssl
import weakref
from pathlib import Path
from typing import Any

from draemu.identity import UserInfo, user_from_peercert, with_authenticated


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
        # ServiceAccount JWTs (auth/serviceaccounttokens.py), when set.
        self.service_accounts = service_accounts
        # The client certificate comes with a connection's handshake: identify it once
        # per connection, not per request (kube-apiserver's TLS never renegotiates).
        self._peers: weakref.WeakKeyDictionary[ssl.SSLObject, UserInfo | None] = \
            weakref.WeakKeyDictionary()

    def add_token(self, token: str, user: UserInfo) -> None:
        """One more bearer token (the loopback socket's identities)."""
        self.tokens[token] = user

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
