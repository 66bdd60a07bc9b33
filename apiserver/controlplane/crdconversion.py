"""CustomResourceDefinition conversion webhooks (`spec.conversion.strategy: Webhook`):
objects of one version are sent in an apiextensions.k8s.io ConversionReview to the
webhook's `clientConfig` (a URL, or a Service reached at one of its endpoints over the
pod network, its certificate checked for `<service>.<namespace>.svc` against
`caBundle`), and the converted objects are checked as kube-apiserver's webhook converter
checks them: as many as sent, each of the desired apiVersion and the same kind, metadata
unchanged but for labels and annotations.

The strategy's version conversions are synchronous (reads, writes, watches and lists
all convert in place), so the call is a blocking HTTPS request from the apiserver's
event loop, bounded by the upstream converter's 30 s timeout; the webhook is another
process (a pod), never this one.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import socket
import ssl
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.admission.webhooks import CallError, client_config_url
from draemu.apiserver.registry.resources import ResourceTable

if TYPE_CHECKING:
    from draemu.netns import NetnsDialer

TIMEOUT = 30.0  # upstream's webhook converter timeout
REVIEW_VERSIONS = ("v1", "v1beta1")


class ConversionWebhooks:
    """Calls the conversion webhooks of CRDs (`convert`), one call per conversion."""

    def __init__(self, table: ResourceTable, cache: Any, dialer: NetnsDialer | None) -> None:
        self.table = table
        self.cache = cache
        self.dialer = dialer
        self._contexts: dict[str, ssl.SSLContext] = {}

    def convert(self, conversion: Obj, kind: str, objects: list[Obj], desired: str
                ) -> list[Obj]:
        """`objects` (all of one apiVersion) in `desired`; a StatusError when the webhook
        cannot be called or answers wrongly."""
        source = str(objects[0].get("apiVersion") or "")
        webhook = conversion.get("webhook") or {}
        try:
            review_version = next((v for v in webhook.get("conversionReviewVersions") or []
                                   if v in REVIEW_VERSIONS), None)
            if review_version is None:
                raise CallError("no supported conversion review versions: " + ", ".join(
                    webhook.get("conversionReviewVersions") or []))
            uid = str(uuid.uuid4())
            review = {"apiVersion": f"apiextensions.k8s.io/{review_version}",
                      "kind": "ConversionReview",
                      "request": {"uid": uid, "desiredAPIVersion": desired,
                                  "objects": objects}}
            answer = self._post(webhook.get("clientConfig") or {}, review)
            return _converted(answer, uid, objects, desired)
        except CallError as e:
            what = f"conversion webhook for {source}, Kind={kind}"
            text = str(e)
            text = f"{what} {text[1:]}" if text.startswith(">") else f"{what} failed: {text}"
            raise StatusError(500, "InternalError", f"Internal error occurred: {text}"
                              ) from None

    def _post(self, config: Obj, review: Obj) -> Any:
        url, server_name = client_config_url(self.table, self.cache, config)
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 443
        path = (parts.path or "/") + (f"?{parts.query}&" if parts.query else "?")
        path += f"timeout={int(TIMEOUT)}s"
        try:
            raw = self._socket(host, port)
            tls = self._ssl(str(config.get("caBundle") or "")).wrap_socket(
                raw, server_hostname=server_name or host)
            conn = http.client.HTTPSConnection(host, port, timeout=TIMEOUT)
            conn.sock = tls
            try:
                conn.request("POST", path, body=json.dumps(review).encode(), headers={
                    "Content-Type": "application/json", "Accept": "application/json"})
                resp = conn.getresponse()
                body = resp.read()
            finally:
                conn.close()
        except (OSError, http.client.HTTPException) as e:
            raise CallError(f'Post "{url}?timeout={int(TIMEOUT)}s": {e}') from None
        if resp.status >= 300:
            raise CallError(f"the server responded with the status code {resp.status}")
        try:
            return json.loads(body)
        except ValueError as e:
            raise CallError(f"unmarshal response: {e}") from None

    def _socket(self, host: str, port: int) -> socket.socket:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        info = infos[0]
        sock = self.dialer.socket_factory(info) if self.dialer else socket.socket(
            info[0], info[1], info[2])
        sock.settimeout(TIMEOUT)
        try:
            sock.connect(info[4])
        except OSError:
            sock.close()
            raise
        return sock

    def _ssl(self, bundle: str) -> ssl.SSLContext:
        ctx = self._contexts.get(bundle)
        if ctx is None:
            ctx = ssl.create_default_context()
            if bundle:
                try:
                    ctx = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
                except (binascii.Error, ValueError, ssl.SSLError):
                    pass
            self._contexts[bundle] = ctx
        return ctx


def _converted(answer: Any, uid: str, objects: list[Obj], desired: str) -> list[Obj]:
    response = answer.get("response") if isinstance(answer, dict) else None
    if not isinstance(response, dict):
        raise CallError("no response provided")
    if response.get("uid") != uid:
        raise CallError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    result = response.get("result") or {}
    if result.get("status") != "Success":
        if result.get("message"):
            raise CallError(str(result["message"]))
        raise CallError(f"response.result.status was '{result.get('status') or ''}', not "
                        "'Success'")
    converted = response.get("convertedObjects") or []
    if len(converted) != len(objects):
        # ">": the message goes on after the converter's name (no "failed:").
        raise CallError(f">returned {len(converted)} objects, expected {len(objects)}")
    return [_checked(new, old, desired, i) for i, (new, old) in
            enumerate(zip(converted, objects, strict=True))]


def _checked(new: Any, old: Obj, desired: str, index: int) -> Obj:
    """The converted object with the original metadata but its labels and annotations
    (upstream's validateConvertedObject and restoreObjectMeta)."""
    where = f">returned invalid converted object at index {index}"
    if not isinstance(new, dict):
        raise CallError(f"{where}: invalid type, expected=Unstructured")
    if new.get("apiVersion") != desired:
        raise CallError(f"{where}: invalid groupVersion (expected {desired}, received "
                        f"{new.get('apiVersion') or ''})")
    if new.get("kind") != old.get("kind"):
        raise CallError(f"{where}: invalid kind (expected {old.get('kind')}, received "
                        f"{new.get('kind') or ''})")
    meta = dict(old.get("metadata") or {})
    new_meta = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
    for name in ("labels", "annotations"):
        if new_meta.get(name):
            meta[name] = new_meta[name]
        else:
            meta.pop(name, None)
    return {**new, "metadata": meta}
