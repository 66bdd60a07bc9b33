"""The virtual, create-only review kinds: SelfSubjectAccessReview,
SelfSubjectRulesReview (`kubectl auth can-i [--list]`), SubjectAccessReview and
LocalSubjectAccessReview (authorization.k8s.io/v1) are answered by the authorizer, as
the request would be (RBAC, Node, system:masters); SelfSubjectReview (`kubectl auth
whoami`) and TokenReview (authentication.k8s.io/v1) by the authenticator. Nothing is
stored."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from aiohttp import web

from draemu.api.errors import FieldError, Path, StatusError, bad_request, invalid, invalid_object
from draemu.api.types import Obj
from draemu.apiserver.auth.authentication import Authenticator
from draemu.apiserver.auth.authorization import Attributes, Authorizer
from draemu.apiserver.endpoints.rest_write import body_object
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.registry.strategy import Strategy
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


class SubjectAccessReviewStrategy(_Review):
    group = "authorization.k8s.io"
    kind = "SubjectAccessReview"
    resource = "subjectaccessreviews"


class LocalSubjectAccessReviewStrategy(_Review):
    group = "authorization.k8s.io"
    kind = "LocalSubjectAccessReview"
    resource = "localsubjectaccessreviews"
    namespaced = True


class SelfSubjectReviewStrategy(_Review):
    group = "authentication.k8s.io"
    kind = "SelfSubjectReview"
    resource = "selfsubjectreviews"


class TokenReviewStrategy(_Review):
    group = "authentication.k8s.io"
    kind = "TokenReview"
    resource = "tokenreviews"


STRATEGIES = [SelfSubjectAccessReviewStrategy(), SelfSubjectRulesReviewStrategy(),
              SubjectAccessReviewStrategy(), LocalSubjectAccessReviewStrategy(),
              SelfSubjectReviewStrategy(), TokenReviewStrategy()]
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


def _invalid(scope: Scope, errors: list[FieldError]) -> StatusError:
    return invalid_object(scope.resource.kind, scope.resource.group, "", errors)


def _attributes(scope: Scope, user: UserInfo, spec: Obj) -> Attributes:
    """The request a review asks about; 422 unless exactly one kind of attributes."""
    res = spec.get("resourceAttributes")
    non_res = spec.get("nonResourceAttributes")
    if (res is None) == (non_res is None):
        raise _invalid(scope, [invalid(Path("spec"), non_res, "exactly one of "
                                       "nonResourceAttributes or resourceAttributes must be "
                                       "specified")])
    if res is not None:
        return Attributes(user, res.get("verb", ""), res.get("group", ""),
                          res.get("version", "") or "*", res.get("resource", ""),
                          res.get("subresource", ""), res.get("namespace", ""),
                          res.get("name", ""))
    return Attributes(user, non_res.get("verb", ""), path=non_res.get("path", ""))


def _decide(authorizer: Authorizer, attrs: Attributes) -> Obj:
    decision = authorizer.authorize(attrs)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def _subject(scope: Scope, spec: Obj) -> UserInfo:
    """The user of a (Local)SubjectAccessReview: exactly as given (no groups added)."""
    if not spec.get("user") and not spec.get("groups"):
        raise _invalid(scope, [invalid(Path("spec").child("user"), spec.get("user") or "",
                                       "at least one of user or group must be specified")])
    extra = {k: list(v or []) for k, v in (spec.get("extra") or {}).items()}
    return UserInfo(spec.get("user") or "", uid=spec.get("uid") or "",
                    groups=tuple(spec.get("groups") or ()), extra=extra)


def _local_namespace(scope: Scope, body: Obj, spec: Obj) -> None:
    namespace = (body.get("metadata") or {}).get("namespace") or scope.namespace
    res = spec.get("resourceAttributes")
    errors = []
    if res is not None and res.get("namespace", "") != namespace:
        errors.append(invalid(Path("spec.resourceAttributes.namespace"),
                              res.get("namespace", ""), "must match metadata.namespace"))
    if spec.get("nonResourceAttributes") is not None:
        errors.append(invalid(Path("spec.nonResourceAttributes"),
                              spec["nonResourceAttributes"], "disallowed on this kind of request"))
    if errors:
        raise _invalid(scope, errors)
    if namespace != scope.namespace:
        raise bad_request(f"spec.resourceAttributes.namespace must match namespace: "
                          f"{scope.namespace}")


def _rules(user: UserInfo, namespace: str, authorizer: Authorizer) -> Obj:
    rules, errors = authorizer.rules_for(user, namespace)  # type: ignore[attr-defined]
    resource_rules, non_resource_rules = [], []
    for rule in rules:
        if rule.get("resources"):
            out = {"verbs": list(rule.get("verbs") or []),
                   "apiGroups": list(rule.get("apiGroups") or []),
                   "resources": list(rule["resources"])}
            if rule.get("resourceNames"):
                out["resourceNames"] = list(rule["resourceNames"])
            resource_rules.append(out)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                       "nonResourceURLs": list(rule["nonResourceURLs"])})
    status: Obj = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                   # Nodes' permissions are not rules: upstream calls their list incomplete.
                   "incomplete": user.node_name is not None}
    if errors:
        status["evaluationError"] = errors[0] if len(errors) == 1 else \
            "[" + ", ".join(errors) + "]"
    return status


def _token_review(spec: Obj, authenticator: Authenticator) -> Obj:
    """Who a bearer token is, for the audiences asked (the apiserver's by default)."""
    from draemu.apiserver.auth.serviceaccounttokens import API_AUDIENCES
    from draemu.satokens import TokenError

    token = spec.get("token") or ""
    if not token:
        raise bad_request("token is required for TokenReview in authentication.k8s.io/v1")
    wanted = tuple(spec.get("audiences") or API_AUDIENCES)
    user: UserInfo | None = authenticator.tokens.get(token)
    audiences = [a for a in wanted if a in API_AUDIENCES]
    error = ""
    if user is None and authenticator.service_accounts is not None:
        try:
            answer = authenticator.service_accounts.authenticate(token, wanted)
        except TokenError as e:
            error = f"[invalid bearer token, {e}]"
            answer = None
        if answer is not None:
            user, audiences = answer
    if user is None or not audiences:
        return {"authenticated": False, "user": {}, **({"error": error} if error else {})}
    return {"authenticated": True, "user": user.to_json(), "audiences": audiences}


async def create(scope: Scope, authorizer: Authorizer,
                 authenticator: Authenticator | None = None) -> web.Response:
    body = await body_object(scope)
    scope.check_type_meta(body)
    _check_types(scope, body)
    spec = body.get("spec") or {}
    name = scope.resource.name
    if name == "selfsubjectreviews":
        return _answer(scope, body, {"userInfo": scope.user.to_json()})
    if name == "tokenreviews":
        assert authenticator is not None
        return _answer(scope, body, _token_review(spec, authenticator))
    if name == "selfsubjectrulesreviews":
        namespace = spec.get("namespace") or ""
        if not namespace:
            raise bad_request("no namespace on request")
        return _answer(scope, body, _rules(scope.user, namespace, authorizer))
    if name == "selfsubjectaccessreviews":
        return _answer(scope, body, _decide(authorizer, _attributes(scope, scope.user, spec)))
    attrs = _attributes(scope, UserInfo(""), spec)
    if name == "localsubjectaccessreviews":
        _local_namespace(scope, body, spec)
    subject = _subject(scope, spec)
    return _answer(scope, body, _decide(authorizer, replace(attrs, user=subject)))


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
