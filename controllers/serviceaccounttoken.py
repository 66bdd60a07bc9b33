"""Legacy ServiceAccount token Secrets, as kube-controller-manager's tokens controller:
a Secret of type `kubernetes.io/service-account-token` that names a ServiceAccount in its
`kubernetes.io/service-account.name` annotation gets a long-lived token for it (signed
with the service-account key, like the apiserver's), the cluster CA and the namespace;
one that names a missing account (or an account with another uid) is deleted. Nothing
is created unless asked for: bound tokens (TokenRequest) are the default since 1.24.

It runs as the manager itself (upstream's controller uses the root credentials) and only
with the key (`--service-account-private-key-file`, `draemu up` passes its own).
"""

from __future__ import annotations

import base64
from typing import Any

from draemu.api.meta import meta
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller
from draemu.satokens import legacy_claims

TOKEN_TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


class ServiceAccountTokenController(Controller):
    name = "serviceaccount-token"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.secrets = inf.informer("v1", "secrets")
        self.accounts = inf.informer("v1", "serviceaccounts")
        self.handlers_enqueue(self.secrets)
        self.accounts.add_handler(on_add=self._account_changed,
                                  on_update=lambda _o, n: self._account_changed(n),
                                  on_delete=self._account_changed)

    def primary(self) -> Any:
        return self.secrets

    def _account_changed(self, account: Obj) -> None:
        namespace, name = meta(account).get("namespace", ""), meta(account).get("name", "")
        for key in self.secrets.keys():
            secret = self.secrets.get(key)
            if secret is not None and secret.get("type") == TOKEN_TYPE and \
                    meta(secret).get("namespace") == namespace and \
                    (meta(secret).get("annotations") or {}).get(NAME_ANNOTATION) == name:
                self.queue.add(key)

    async def reconcile(self, key: str) -> float | None:
        secret = self.secrets.get(key)
        signer = self.ctx.signer
        if secret is None or secret.get("type") != TOKEN_TYPE or signer is None or \
                meta(secret).get("deletionTimestamp"):
            return None
        m = meta(secret)
        namespace, annotations = m.get("namespace", ""), m.get("annotations") or {}
        account = self.accounts.get(f"{namespace}/{annotations.get(NAME_ANNOTATION, '')}")
        wanted_uid = annotations.get(UID_ANNOTATION)
        if account is None or (wanted_uid and wanted_uid != meta(account).get("uid")):
            try:
                await self.client.delete("v1", "secrets", m["name"], namespace)
            except ApiError as e:
                if e.code != 404:
                    raise
            return None
        data = secret.get("data") or {}
        ca = self.client.ca_pem or b""
        if data.get("token") and data.get("namespace") == _b64(namespace) and \
                data.get("ca.crt") == _b64(ca) and wanted_uid:
            return None
        uid = meta(account).get("uid", "")
        token = signer.sign(legacy_claims(namespace, meta(account)["name"], uid, m["name"]))
        await self.client.patch("v1", "secrets", m["name"], {
            "metadata": {"annotations": {UID_ANNOTATION: uid},
                         "resourceVersion": m.get("resourceVersion")},
            "data": {"token": _b64(token), "namespace": _b64(namespace), "ca.crt": _b64(ca)}},
            namespace=namespace)
        return None
