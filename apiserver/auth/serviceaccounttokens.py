"""Bearer JWTs to users: upstream's service-account token authenticator.

A bound token (TokenRequest) must carry our issuer, one of the audiences asked for
(the apiserver's own by default) and an unexpired `exp`; the ServiceAccount, and the
Pod, Secret or Node it is bound to, must still exist with the uids in the token (a pod
being deleted invalidates it too). A legacy token (a `kubernetes.io/service-account-token`
Secret's) must still be that Secret's data. The user is `system:serviceaccount:<ns>:<name>`
in `system:serviceaccounts` and `system:serviceaccounts:<ns>`, with the pod and node in
its extra as upstream's.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

from draemu.api.types import Obj
from draemu.identity import UserInfo, service_account_groups, service_account_user
from draemu.satokens import (
    ISSUER,
    LEGACY_ISSUER,
    Signer,
    TokenError,
    looks_like_jwt,
)

Lookup = Callable[[str, str, str, str], Any]
EXTRA = "authentication.kubernetes.io/"
API_AUDIENCES = (ISSUER,)


def _uid(obj: Obj | None) -> str:
    return ((obj or {}).get("metadata") or {}).get("uid", "")


class ServiceAccountAuthenticator:
    def __init__(self, signer: Signer, lookup: Lookup,
                 audiences: tuple[str, ...] = API_AUDIENCES) -> None:
        self.signer = signer
        self.lookup = lookup
        self.audiences = audiences

    def authenticate(self, token: str, audiences: tuple[str, ...] | None = None
                     ) -> tuple[UserInfo, list[str]] | None:
        """(user, the audiences it is good for), None for a token that is not ours;
        TokenError for one of ours that does not verify."""
        if not looks_like_jwt(token):
            return None
        claims = self.signer.verify(token)
        if claims.get("iss") == LEGACY_ISSUER:
            return self._legacy(token, claims), list(audiences or self.audiences)
        wanted = audiences or self.audiences
        aud = claims.get("aud")
        token_audiences = [aud] if isinstance(aud, str) else list(aud or [])
        matching = [a for a in wanted if a in token_audiences]
        if not matching:
            raise TokenError("token audiences " + _go(token_audiences) + " is invalid for "
                             "the target audiences " + _go(list(wanted)))
        now = time.time()
        if not isinstance(claims.get("exp"), int) or now > claims["exp"]:
            raise TokenError("service account token has expired")
        if isinstance(claims.get("nbf"), int) and now < claims["nbf"] - 60:
            raise TokenError("service account token is not valid yet")
        return self._bound(claims), matching

    def _bound(self, claims: Obj) -> UserInfo:
        private = claims.get("kubernetes.io") or {}
        namespace = private.get("namespace") or ""
        account = private.get("serviceaccount") or {}
        name = account.get("name") or ""
        sa = self.lookup("serviceaccounts", "", namespace, name)
        if sa is None:
            raise TokenError(f'serviceaccounts "{name}" not found')
        if _uid(sa) != account.get("uid"):
            raise TokenError(f"service account UID ({_uid(sa)}) does not match claim "
                             f"({account.get('uid')})")
        extra: dict[str, list[str]] = {}
        pod_ref = private.get("pod")
        if pod_ref:
            pod = self.lookup("pods", "", namespace, pod_ref.get("name", ""))
            if pod is None or _uid(pod) != pod_ref.get("uid") or \
                    (pod.get("metadata") or {}).get("deletionTimestamp"):
                raise TokenError("token has been invalidated")
            extra[EXTRA + "pod-name"] = [pod_ref.get("name", "")]
            extra[EXTRA + "pod-uid"] = [pod_ref.get("uid", "")]
        secret_ref = private.get("secret")
        if secret_ref:
            secret = self.lookup("secrets", "", namespace, secret_ref.get("name", ""))
            if secret is None or _uid(secret) != secret_ref.get("uid") or \
                    (secret.get("metadata") or {}).get("deletionTimestamp"):
                raise TokenError("token has been invalidated")
        node_ref = private.get("node")
        if node_ref:
            if not pod_ref:
                node = self.lookup("nodes", "", "", node_ref.get("name", ""))
                if node is None or _uid(node) != node_ref.get("uid"):
                    raise TokenError("token has been invalidated")
            extra[EXTRA + "node-name"] = [node_ref.get("name", "")]
            if node_ref.get("uid"):
                extra[EXTRA + "node-uid"] = [node_ref["uid"]]
        if claims.get("jti"):
            extra[EXTRA + "credential-id"] = [f"JTI={claims['jti']}"]
        return UserInfo(service_account_user(namespace, name), uid=_uid(sa),
                        groups=service_account_groups(namespace), extra=extra)

    def _legacy(self, token: str, claims: Obj) -> UserInfo:
        prefix = "kubernetes.io/serviceaccount/"
        namespace = claims.get(prefix + "namespace") or ""
        name = claims.get(prefix + "service-account.name") or ""
        secret_name = claims.get(prefix + "secret.name") or ""
        secret = self.lookup("secrets", "", namespace, secret_name)
        stored = ((secret or {}).get("data") or {}).get("token", "")
        if secret is None or (secret.get("metadata") or {}).get("deletionTimestamp") or \
                base64.b64decode(stored or "").decode(errors="replace") != token:
            raise TokenError("token has been invalidated")
        sa = self.lookup("serviceaccounts", "", namespace, name)
        if sa is None or _uid(sa) != claims.get(prefix + "service-account.uid"):
            raise TokenError("token has been invalidated")
        return UserInfo(service_account_user(namespace, name), uid=_uid(sa),
                        groups=service_account_groups(namespace))


def _go(values: list[str]) -> str:
    return "[" + " ".join(values) + "]"
