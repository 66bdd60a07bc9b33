"""`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`: a TokenRequest
(authentication.k8s.io/v1) answered with a signed token, as upstream's TokenREST does.

Audiences default to the apiserver's; `expirationSeconds` to 3600 (at least 600, at
most 2^32); a token bound to a Pod also names the pod's node. A pod-bound token asked
for with the kubelet's 3607 seconds for the apiserver's audience is valid for a year but
says when a fresh one is due (`warnafter`), as `--service-account-extend-token-expiration`
(on by default) does.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from draemu.api.errors import (
    FieldError,
    Path,
    StatusError,
    bad_request,
    invalid,
    invalid_object,
    not_found_error,
)
from draemu.api.meta import format_time
from draemu.api.types import Obj
from draemu.apiserver.admission.chain import Attributes
from draemu.apiserver.auth.serviceaccounttokens import API_AUDIENCES
from draemu.apiserver.endpoints.rest_write import body_object
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.strategy import Lookup
from draemu.identity import service_account_user
from draemu.openapi import schemas
from draemu.satokens import ISSUER, Signer

MIN_SECONDS = 600
MAX_SECONDS = 2**32
DEFAULT_SECONDS = 3600
# The kubelet asks for this much; such tokens are extended (upstream's constants).
WARN_ONLY_SECONDS = 3607
EXTENDED_SECONDS = 365 * 24 * 3600
KIND = "TokenRequest"
GROUP = "authentication.k8s.io"


def _invalid(name: str, errors: list[FieldError]) -> StatusError:
    return invalid_object(KIND, GROUP, name, errors)


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def _bound_object(scope: Scope, lookup: Lookup, name: str, ref: Obj
                  ) -> tuple[Obj | None, Obj | None, Obj | None]:
    """(pod, secret, node) a token is bound to, checked as upstream."""
    kind, api_version, ref_name = ref.get("kind", ""), ref.get("apiVersion", ""), \
        ref.get("name", "")
    pod = secret = node = None
    if api_version == "v1" and kind == "Pod":
        pod = lookup("pods", "", scope.namespace, ref_name)
        if pod is None:
            raise not_found_error("pods", "", ref_name)
        if ((pod.get("spec") or {}).get("serviceAccountName") or "default") != name:
            raise bad_request(f'cannot bind token for serviceaccount "{name}" to pod running '
                              "with different serviceaccount name.")
        node_name = (pod.get("spec") or {}).get("nodeName") or ""
        node = lookup("nodes", "", "", node_name) if node_name else None
        if node is None and node_name:
            node = {"metadata": {"name": node_name}}
        found = pod
    elif api_version == "v1" and kind == "Secret":
        secret = found = lookup("secrets", "", scope.namespace, ref_name)
        if secret is None:
            raise not_found_error("secrets", "", ref_name)
    elif api_version == "v1" and kind == "Node":
        node = found = lookup("nodes", "", "", ref_name)
        if node is None:
            raise not_found_error("nodes", "", ref_name)
    else:
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        version = api_version.rpartition("/")[2]
        raise bad_request(f"cannot bind token to object of type {group}/{version}, "
                          f"Kind={kind}")
    if ref.get("uid") and ref["uid"] != _meta(found).get("uid"):
        raise StatusError(409, "Conflict", f'Operation cannot be fulfilled on {kind}.'
                          f' "{ref_name}": the UID in the bound object reference '
                          f'({ref["uid"]}) does not match the UID in record. The object might '
                          "have been deleted and then recreated",
                          {"name": ref_name, "kind": kind})
    return pod, secret, node


def claims(namespace: str, account: Obj, audiences: list[str], seconds: int, *,
           pod: Obj | None = None, secret: Obj | None = None, node: Obj | None = None,
           warn_after: int = 0, now: int | None = None) -> Obj:
    """The claims of a bound token (upstream's token.Claims)."""
    issued = int(time.time()) if now is None else now
    name = _meta(account).get("name", "")
    private: Obj = {"namespace": namespace,
                    "serviceaccount": {"name": name, "uid": _meta(account).get("uid", "")}}
    for key, obj in (("pod", pod), ("secret", secret), ("node", node)):
        if obj is not None:
            private[key] = {"name": _meta(obj).get("name", ""), "uid": _meta(obj).get("uid", "")}
    if warn_after:
        private["warnafter"] = issued + warn_after
    return {"aud": audiences, "exp": issued + seconds, "iat": issued, "iss": ISSUER,
            "jti": str(uuid.uuid4()), "kubernetes.io": private, "nbf": issued,
            "sub": service_account_user(namespace, name)}


async def create_token(scope: Scope, store: Store, signer: Signer) -> web.Response:
    name, namespace = scope.name, scope.namespace
    body = await body_object(scope)
    attrs = Attributes("CREATE", scope, body, None, False, "token")
    await store.admission.admit(attrs)
    for field, want in (("apiVersion", f"{GROUP}/v1"), ("kind", KIND)):
        if body.get(field) and body[field] != want:
            raise bad_request(f"the {'API version' if field == 'apiVersion' else 'kind'} in "
                              f"the data ({body[field]}) does not match the expected "
                              f"{'API version' if field == 'apiVersion' else 'kind'} ({want})")
    error = schemas.type_error(GROUP, "v1", KIND, body)
    if error:
        raise bad_request(f'{KIND} in version "v1" cannot be handled as a {KIND}: {error}')
    meta = dict(body.get("metadata") or {})
    if meta.get("name") and meta["name"] != name:
        raise _invalid(name, [invalid(Path("metadata.name"), meta["name"],
                                      "must match the service account name if specified")])
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise _invalid(name, [invalid(Path("metadata.namespace"), meta["namespace"],
                                      "must match the service account namespace if "
                                      "specified")])
    account = store.objects.lookup("serviceaccounts", "", namespace, name)
    if account is None:
        raise not_found_error("serviceaccounts", "", name)
    spec: Obj = dict(body.get("spec") or {})
    audiences = list(spec.get("audiences") or API_AUDIENCES)
    spec["audiences"] = audiences
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = spec["expirationSeconds"] = DEFAULT_SECONDS
    errors = []
    if not isinstance(seconds, int) or seconds < MIN_SECONDS:
        errors.append(invalid(Path("spec.expirationSeconds"), seconds,
                              "may not specify a duration less than 10 minutes"))
    elif seconds > MAX_SECONDS:
        errors.append(invalid(Path("spec.expirationSeconds"), seconds,
                              "may not specify a duration larger than 2^32 seconds"))
    if errors:
        raise _invalid("", errors)
    pod = secret = node = None
    ref = spec.get("boundObjectRef")
    if ref:
        pod, secret, node = _bound_object(scope, store.objects.lookup, name, ref)
    await store.admission.validate(attrs)
    now = int(time.time())
    lifetime, warn_after = seconds, 0
    if pod is not None and seconds == WARN_ONLY_SECONDS and \
            any(a in API_AUDIENCES for a in audiences):
        lifetime, warn_after = EXTENDED_SECONDS, seconds
    token = signer.sign(claims(namespace, account, audiences, lifetime, pod=pod,
                               secret=secret, node=node, warn_after=warn_after, now=now))
    out_meta: dict[str, Any] = {"name": name, "namespace": namespace,
                                "creationTimestamp": format_time_seconds(now)}
    return scope.respond({"kind": KIND, "apiVersion": f"{GROUP}/v1", "metadata": out_meta,
                          "spec": spec,
                          "status": {"token": token,
                                     "expirationTimestamp": format_time_seconds(now + seconds)}},
                         201)


def format_time_seconds(epoch: int) -> str:
    return format_time(datetime.fromtimestamp(epoch, UTC))
