"""The virtual, create-only review kinds that `kubectl auth` uses:
SelfSubjectAccessReview and SelfSubjectRulesReview (authorization.k8s.io/v1) are
answered by the authorizer, SelfSubjectReview (authentication.k8s.io/v1) by the
authenticator. Nothing is stored."""

from __future__ import annotations

from typing import ClassVar

from aiohttp import web

from draemu.api.errors import bad_request
from draemu.api.types import Obj
from draemu.apiserver.auth import Attributes, Authorizer
from draemu.apiserver.registry.strategy import Strategy
from draemu.apiserver.rest_write import body_object
from draemu.apiserver.scope import Scope
from draemu.identity import UserInfo


class _Review(Strategy):
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    verbs: ClassVar[tuple[str, ...]] = ("create",)
    has_generation = False


class SelfSubjectAccessReviewStrategy(_Review):
    group = "authorization.k8s.io"
    kind = "SelfSubjectAccessReview"
    resource = "selfsubjectaccessreviews"


class SelfSubjectRulesReviewStrategy(_Review):
    group = "authorization.k8s.io"
    kind = "SelfSubjectRulesReview"
    resource = "selfsubjectrulesreviews"


class SelfSubjectReviewStrategy(_Review):
    group = "authentication.k8s.io"
    kind = "SelfSubjectReview"
    resource = "selfsubjectreviews"


STRATEGIES = [SelfSubjectAccessReviewStrategy(), SelfSubjectRulesReviewStrategy(),
              SelfSubjectReviewStrategy()]
RESOURCES = {(s.group, s.resource) for s in STRATEGIES}


def _answer(scope: Scope, body: Obj, status: Obj) -> web.Response:
    meta = dict(body.get("metadata") or {})
    meta["creationTimestamp"] = None
    out: Obj = {"kind": scope.resource.kind, "apiVersion": scope.api_version,
                "metadata": meta}
    if "spec" in body:
        out["spec"] = body["spec"]
    out["status"] = status
    return scope.respond(out, 201)


def _access(user: UserInfo, spec: Obj, authorizer: Authorizer) -> Obj:
    res = spec.get("resourceAttributes")
    non_res = spec.get("nonResourceAttributes")
    if res:
        attrs = Attributes(user, res.get("verb", ""), res.get("group", ""),
                           res.get("version", ""), res.get("resource", ""),
                           res.get("subresource", ""), res.get("namespace", ""),
                           res.get("name", ""))
    elif non_res:
        attrs = Attributes(user, non_res.get("verb", ""), path=non_res.get("path", ""))
    else:
        return {"allowed": False, "evaluationError": "spec: Invalid value: either "
                "resourceAttributes or nonResourceAttributes must be set"}
    decision = authorizer.authorize(attrs)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def _rules(user: UserInfo, authorizer: Authorizer) -> Obj:
    everything = authorizer.authorize(Attributes(user, "*", "*", "*", "*"))
    if everything.allowed:
        return {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False}
    return {"resourceRules": [{"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                               "resources": ["selfsubjectaccessreviews",
                                             "selfsubjectrulesreviews"]},
                              {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                               "resources": ["selfsubjectreviews"]}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": [
                "/healthz", "/livez", "/readyz", "/version", "/version/"]}],
            "incomplete": False}


async def create(scope: Scope, authorizer: Authorizer) -> web.Response:
    body = await body_object(scope)
    scope.check_type_meta(body)
    _check_types(scope, body)
    spec = body.get("spec") or {}
    if scope.resource.name == "selfsubjectreviews":
        return _answer(scope, body, {"userInfo": scope.user.to_json()})
    if scope.resource.name == "selfsubjectrulesreviews":
        return _answer(scope, body, _rules(scope.user, authorizer))
    return _answer(scope, body, _access(scope.user, spec, authorizer))


def _check_types(scope: Scope, body: Obj) -> None:
    """Reviews are not stored, but their bodies decode like any other: wrong JSON types
    are a 400 with Go's wording, before any field is read."""
    from draemu.openapi import schemas

    group, version, kind = scope.resource.group, scope.version, scope.resource.kind
    if schemas.has_kind(group, version, kind):
        error = schemas.type_error(group, version, kind, body)
        if error:
            raise bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: '
                              f"{error}")
