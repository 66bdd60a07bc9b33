"""Kubernetes' CEL authz library, the `authorizer` variable of admission policies:

    authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('get')
    authorizer.requestResource.subresource('scale').check('update').allowed()
    authorizer.path('/healthz').check('get').reason()
    authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list')

`check` returns a decision with `allowed()`, `reason()`, `errored()` and `error()`. The
checks themselves are the caller's: an `Authorizer` value wraps a function
`authorize(user, verb, group, resource, subresource, namespace, name, path)` returning
(allowed, reason), which the apiserver implements with its own authorizer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from draemu.cel import cost as costs
from draemu.cel import estimatecalls as estimates
from draemu.cel.library.registry import register, want

AuthorizeFn = Callable[[Any, str, str, str, str, str, str, str], tuple[bool, str]]


class Authorizer(dict):
    """The `authorizer` variable; `requestResource` is a field (a resource check of the
    request's own resource)."""

    def __init__(self, authorize: AuthorizeFn, user: Any,
                 request: ResourceCheck | None = None) -> None:
        super().__init__()
        self.authorize = authorize
        self.user = user
        if request is not None:
            self["requestResource"] = replace(request, authorizer=self)


@dataclass(frozen=True)
class ResourceCheck:
    authorizer: Authorizer | None
    group: str
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class PathCheck:
    authorizer: Authorizer
    path: str


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str
    error: str = ""


def _authorizer(name: str, v: object) -> Authorizer:
    want(name, v, Authorizer)
    assert isinstance(v, Authorizer)
    return v


@register("group", True, (1,), "dyn", cost=1, estimate=estimates.fixed_rule(1))
def group(a: object, name: object) -> ResourceCheck:
    want("group", name, str)
    return ResourceCheck(_authorizer("group", a), str(name))


@register("path", True, (1,), "dyn", cost=1, estimate=estimates.fixed_rule(1))
def path(a: object, value: object) -> PathCheck:
    want("path", value, str)
    return PathCheck(_authorizer("path", a), str(value))


@register("serviceAccount", True, (2,), "dyn", cost=1, estimate=estimates.fixed_rule(1))
def service_account(a: object, namespace: object, name: object) -> Authorizer:
    from draemu.identity import UserInfo, service_account_groups, service_account_user

    want("serviceAccount", namespace, str)
    want("serviceAccount", name, str)
    auth = _authorizer("serviceAccount", a)
    user = UserInfo(service_account_user(str(namespace), str(name)),
                    groups=tuple(service_account_groups(str(namespace))))
    return Authorizer(auth.authorize, user)


def _resource_check(name: str, v: object) -> ResourceCheck:
    want(name, v, ResourceCheck)
    assert isinstance(v, ResourceCheck)
    return v


def _setter(field: str) -> None:
    @register(field, True, (1,), "dyn", cost=1, estimate=estimates.fixed_rule(1))
    def set_field(check: object, value: object) -> ResourceCheck:
        want(field, value, str)
        return replace(_resource_check(field, check), **{field: str(value)})


for _field in ("resource", "subresource", "namespace", "name"):
    _setter(_field)


@register("check", True, (1,), "dyn",
          cost=costs.fixed_cost(350_000), estimate=estimates.fixed_rule(350_000))
def check(target: object, verb: object) -> Decision:
    want("check", verb, str)
    if isinstance(target, PathCheck):
        auth = target.authorizer
        allowed, reason = auth.authorize(auth.user, str(verb).lower(), "", "", "", "", "",
                                         target.path)
        return Decision(allowed, reason)
    rc = _resource_check("check", target)
    assert rc.authorizer is not None
    auth = rc.authorizer
    allowed, reason = auth.authorize(auth.user, str(verb), rc.group, rc.resource,
                                     rc.subresource, rc.namespace, rc.name, "")
    return Decision(allowed, reason)


def _decision(name: str, v: object) -> Decision:
    want(name, v, Decision)
    assert isinstance(v, Decision)
    return v


@register("allowed", True, (0,), "bool", cost=1, estimate=estimates.fixed_rule(1))
def allowed(d: object) -> bool:
    return _decision("allowed", d).allowed


@register("reason", True, (0,), "string", cost=1, estimate=estimates.fixed_rule(1))
def reason(d: object) -> str:
    return _decision("reason", d).reason


@register("errored", True, (0,), "bool", cost=1, estimate=estimates.fixed_rule(1))
def errored(d: object) -> bool:
    return bool(_decision("errored", d).error)


@register("error", True, (0,), "string", cost=1, estimate=estimates.fixed_rule(1))
def error(d: object) -> str:
    return _decision("error", d).error
