"""Per-namespace defaults every real cluster has: the `default` ServiceAccount (the
service account controller) and the `kube-root-ca.crt` ConfigMap with the cluster's CA
bundle (the root CA certificate publisher)."""

from __future__ import annotations

from typing import Any

from draemu.api.meta import meta
from draemu.api.types import Obj
from draemu.client import ApiError
from draemu.controllers.base import Controller

ROOT_CA = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters.")


class ServiceAccountController(Controller):
    name = "serviceaccount"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.namespaces = inf.informer("v1", "namespaces")
        self.accounts = inf.informer("v1", "serviceaccounts")
        self.handlers_enqueue(self.namespaces)
        self.accounts.add_handler(on_delete=lambda sa: self.queue.add(
            meta(sa).get("namespace", "")))

    def primary(self) -> Any:
        return self.namespaces

    async def reconcile(self, key: str) -> float | None:
        ns = self.namespaces.get(key)
        if ns is None or meta(ns).get("deletionTimestamp"):
            return None
        if self.accounts.get(f"{key}/default") is None:
            try:
                await self.client.create("v1", "serviceaccounts", {
                    "apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": key}}, namespace=key)
            except ApiError as e:
                if e.code not in (409, 403, 404):  # exists, or namespace going away
                    raise
        return None


class RootCACertPublisher(Controller):
    name = "root-ca-cert-publisher"

    def setup(self) -> None:
        inf = self.ctx.informers
        self.namespaces = inf.informer("v1", "namespaces")
        self.configmaps = inf.informer("v1", "configmaps")
        self.handlers_enqueue(self.namespaces)
        self.configmaps.add_handler(
            on_update=lambda _o, cm: self._changed(cm), on_delete=self._changed)

    def primary(self) -> Any:
        return self.namespaces

    def _changed(self, cm: Obj) -> None:
        if meta(cm).get("name") == ROOT_CA:
            self.queue.add(meta(cm).get("namespace", ""))

    async def reconcile(self, key: str) -> float | None:
        pem = self.client.ca_pem
        ns = self.namespaces.get(key)
        if not pem or ns is None or meta(ns).get("deletionTimestamp"):
            return None
        data = {"ca.crt": pem.decode()}
        annotations = {"kubernetes.io/description": ROOT_CA_DESCRIPTION}
        current = self.configmaps.get(f"{key}/{ROOT_CA}")
        try:
            if current is None:
                await self.client.create("v1", "configmaps", {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA, "namespace": key, "annotations": annotations},
                    "data": data}, namespace=key)
            elif current.get("data") != data or (meta(current).get("annotations") or {}).get(
                    "kubernetes.io/description") != ROOT_CA_DESCRIPTION:
                await self.client.patch("v1", "configmaps", ROOT_CA, {
                    "metadata": {"annotations": annotations}, "data": data}, namespace=key)
        except ApiError as e:
            if e.code not in (409, 403, 404):
                raise
        return None
