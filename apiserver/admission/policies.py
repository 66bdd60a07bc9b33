"""ValidatingAdmissionPolicy enforcement: on every create, update and delete of a served
kind, each ValidatingAdmissionPolicyBinding whose policy and binding match the request
has the policy's CEL `validations` evaluated (with `object`, `oldObject`, `request`,
`params`, `namespaceObject` and `variables`), after its `matchConditions`, once per
parameter object; failures act as the binding's `validationActions` say (Deny: the
request fails with upstream's message and code; Warn: a Warning header; Audit: nothing
to write here, draemu keeps no audit log). Errors follow `failurePolicy`.

Policies, bindings and parameters are read from the watch cache, so every apiserver of a
store enforces the same set the moment its cache holds them; expressions are compiled
once (`draemu.cel.kubernetes`' cache). `authorizer` checks go to the apiserver's own
authorizer (RBAC, the node authorizer, system:masters).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from draemu.api import labels
from draemu.api.errors import StatusError
from draemu.api.types import Obj
from draemu.apiserver.admission.matching import Request, resources_match
from draemu.apiserver.registry.resources import ResourceTable
from draemu.cel.cost import (
    PER_CALL_LIMIT,
    RUNTIME_CEL_COST_BUDGET,
    RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS,
    Meter,
)
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.kubernetes import compile_kubernetes
from draemu.cel.library.authz import Authorizer, ResourceCheck

GROUP = "admissionregistration.k8s.io"
POLICIES = "validatingadmissionpolicies"
BINDINGS = "validatingadmissionpolicybindings"
# Never admitted by policies, so that a bad policy cannot lock its own fix out
# (upstream's IsExemptAdmissionConfigurationResource).
EXEMPT = frozenset({"validatingadmissionpolicies", "validatingadmissionpolicybindings",
                    "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
                    "validatingwebhookconfigurations", "mutatingwebhookconfigurations"})
VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "variables",
             "authorizer")
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413,
          "Invalid": 422}
OUT_OF_BUDGET = ("validation failed due to running out of cost budget, no further "
                 "validation rules will be run")
_MAX_MESSAGE = 5 * 1024


@dataclass
class Decision:
    deny: bool
    message: str
    reason: str = "Invalid"
    index: int = 0  # of the validation in the policy (audit annotations name it)
    error: bool = False  # the evaluation failed (failurePolicy decided `deny`)


@dataclass
class Matched:
    """A binding that applies to a request, with its policy and params (or the
    configuration error that stands for them)."""

    policy: str
    binding: str
    actions: list[str]
    pspec: Obj
    params: list[Obj | None] | str


@dataclass
class Plan:
    """What a request's policies are evaluated with, read from the watch cache."""

    req: Request
    obj: Obj | None
    old: Obj | None
    request: Obj  # the `request` variable
    ns_obj: Obj | None
    user: Any
    matched: list[Matched]
    warnings: list[str]
    audit: list[Obj] | None


class Budget:
    """What a policy's expressions may still cost on one request: each expression is
    stopped at PerCallLimit, and all of them together past the budget end the policy's
    evaluation (upstream's remainingBudget). `deadline`: when evaluations are
    interrupted (time.monotonic(); None: never)."""

    def __init__(self, limit: int, deadline: float | None) -> None:
        self.remaining = limit
        self.deadline = deadline
        self.pending = 0  # what variables evaluated for the current expression cost

    def meter(self) -> Meter:
        return Meter(PER_CALL_LIMIT, self.deadline)

    def pay(self, meter: Meter) -> bool:
        """False (and nothing left) when the expression and the variables it read cost
        more than what remains."""
        cost = meter.cost + self.pending
        self.pending = 0
        if cost > self.remaining:
            self.remaining = -1
            return False
        self.remaining -= cost
        return True


class LazyVariables(dict):
    """`variables`: each composited variable is evaluated when first used, in the
    context of the request (an unused variable that would fail does no harm); what it
    cost is charged to the budget with the expression that read it."""

    def __init__(self, definitions: list[Obj], context: dict[str, Any],
                 budget: Budget) -> None:
        super().__init__()
        self._definitions = {d.get("name", ""): d.get("expression", "") for d in definitions}
        self._context = context
        self._budget = budget

    def get(self, name: Any, default: Any = None) -> Any:
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        expression = self._definitions.get(name)
        if expression is None:
            return default
        meter = self._budget.meter()
        try:
            value = compile_kubernetes(expression, VARIABLES).evaluate(self._context, meter)
        finally:
            self._budget.pending += meter.cost
        self[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._definitions

    def charge_to(self, budget: Budget) -> None:
        """What variables evaluated from now on cost goes to `budget` (a mutating policy
        evaluates each mutation on a budget of its own; values already computed stay)."""
        self._budget = budget


class ValidatingAdmission:
    """`admit(...)` for one request, against the served kinds of `table` and the
    objects of the watch cache `cache`."""

    def __init__(self, table: ResourceTable, cache: Any, authorizer: Any = None) -> None:
        self.table = table
        self.resource_of = table.by_group_resource
        self.cache = cache
        # The apiserver's authorizer (`authorize(Attributes) -> Decision`), for the
        # policies' `authorizer` variable; None: every check is denied.
        self.authorizer = authorizer

    def authorize(self, user: Any, verb: str, group: str, resource: str, subresource: str,
                   namespace: str, name: str, path: str) -> tuple[bool, str]:
        if self.authorizer is None:
            return False, "no authorizer"
        from draemu.apiserver.auth.authorization import Attributes

        decision = self.authorizer.authorize(Attributes(
            user, verb, group, "*", resource, subresource, namespace, name,
            path if path else ""))
        return decision.allowed, decision.reason

    def admit(self, *, operation: str, group: str, version: str, resource: str,
              subresource: str, kind: str, namespaced: bool, namespace: str, name: str,
              obj: Obj | None, old: Obj | None, user: Any, dry_run: bool,
              warnings: list[str], audit: list[Obj] | None = None,
              deadline: float | None = None) -> None:
        """Raises the first denial; Warn failures go to `warnings`, Audit failures to
        `audit` (the audit log's `validation.policy.admission.k8s.io/validation_failure`
        annotation). `deadline` (time.monotonic()) interrupts evaluations past it.

        In two steps for callers on an event loop: `plan` (the watch cache's bindings,
        policies, params and namespace: on the loop) and `decide` (the CEL: in a worker,
        `draemu.cel.offload`)."""
        found = self.plan(operation=operation, group=group, version=version,
                          resource=resource, subresource=subresource, kind=kind,
                          namespaced=namespaced, namespace=namespace, name=name, obj=obj,
                          old=old, user=user, dry_run=dry_run, warnings=warnings, audit=audit)
        if found is not None:
            self.decide(found, deadline)

    def plan(self, *, operation: str, group: str, version: str, resource: str,
             subresource: str, kind: str, namespaced: bool, namespace: str, name: str,
             obj: Obj | None, old: Obj | None, user: Any, dry_run: bool,
             warnings: list[str], audit: list[Obj] | None = None) -> Plan | None:
        """The bindings that apply to the request, with their policies and params (None:
        nothing to evaluate). Reads the watch cache: call it on the event loop."""
        if group == GROUP and resource in EXEMPT:
            return None
        bindings_res = self.resource_of(GROUP, BINDINGS)
        policies_res = self.resource_of(GROUP, POLICIES)
        if bindings_res is None or policies_res is None:
            return None
        bindings = self.cache.list(bindings_res.prefix)
        if not bindings:
            return None
        req = Request(operation, group, version, resource, subresource, kind, namespace, name,
                      namespaced)
        ns_obj = None
        if namespaced and namespace:
            ns_res = self.resource_of("", "namespaces")
            ns_obj = self.cache.get(ns_res.key("", namespace)) if ns_res is not None else None
        out = Plan(req, obj, old, request_variable(req, user, dry_run), ns_obj, user, [],
                   warnings, audit)
        for _key, binding in bindings:
            spec = binding.get("spec") or {}
            policy = self.cache.get(policies_res.key("", spec.get("policyName") or ""))
            if policy is None:
                continue
            pspec = policy.get("spec") or {}
            if not resources_match(pspec.get("matchConstraints"), req, obj, old, ns_obj):
                continue
            if spec.get("matchResources") is not None and not resources_match(
                    spec["matchResources"], req, obj, old, ns_obj):
                continue
            try:
                params: list[Obj | None] | str = collect_params(
                    self.table, self.cache, pspec, spec, req)
            except ConfigError as e:
                params = str(e)
            out.matched.append(Matched(policy["metadata"]["name"], binding["metadata"]["name"],
                                       spec.get("validationActions") or [], pspec, params))
        return out if out.matched else None

    def decide(self, plan: Plan, deadline: float | None,
               authorize: Callable[..., tuple[bool, str]] | None = None) -> None:
        """The CEL of the planned bindings; raises the first denial. `authorize`: how the
        `authorizer` variable's checks reach the apiserver's authorizer (default: called
        directly; from a worker thread, through the event loop)."""
        req = plan.req
        authorizer = Authorizer(authorize or self.authorize, plan.user, ResourceCheck(
            None, req.group, req.resource, req.subresource, req.namespace, req.name))
        denied: tuple[str, str, Decision] | None = None
        for m in plan.matched:
            for decision in self._evaluate(m, plan, authorizer, deadline):
                if not decision.deny:
                    continue
                if "Deny" in m.actions and denied is None:
                    denied = (m.policy, m.binding, decision)
                if "Warn" in m.actions:
                    plan.warnings.append(f"Validation failed for ValidatingAdmissionPolicy "
                                         f"'{m.policy}' with binding '{m.binding}': "
                                         f"{decision.message}")
                if "Audit" in m.actions and plan.audit is not None:
                    plan.audit.append({"message": decision.message, "policy": m.policy,
                                       "binding": m.binding, "expressionIndex": decision.index,
                                       "validationActions": list(m.actions)})
        if denied is not None:
            policy_name, binding_name, decision = denied
            raise _forbidden(req, f"ValidatingAdmissionPolicy '{policy_name}' with binding "
                             f"'{binding_name}' denied request: {decision.message}",
                             decision.reason)

    # Evaluation -----------------------------------------------------------------------------
    def _evaluate(self, m: Matched, plan: Plan, authorizer: Authorizer,
                  deadline: float | None) -> list[Decision]:
        pspec = m.pspec
        fail = (pspec.get("failurePolicy") or "Fail") == "Fail"
        if isinstance(m.params, str):
            return [_error(fail, m.params)]
        out: list[Decision] = []
        for param in m.params:
            context: dict[str, Any] = {
                "object": plan.obj, "oldObject": plan.old, "request": plan.request,
                "params": param, "namespaceObject": namespace_variable(plan.ns_obj),
                "authorizer": authorizer}
            budget = Budget(RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, deadline)
            context["variables"] = LazyVariables(pspec.get("variables") or [], context,
                                                 budget)
            matched = self._match_conditions(pspec, context, fail, budget)
            if isinstance(matched, Decision):
                out.append(matched)
                continue
            if not matched:
                continue
            out += self._validations(pspec, context, fail, Budget(RUNTIME_CEL_COST_BUDGET,
                                                                  deadline))
        return out

    def _validations(self, pspec: Obj, context: dict[str, Any], fail: bool,
                     budget: Budget) -> list[Decision]:
        """One decision per validation, or one error when they ran out of budget. The
        messageExpressions run after every validation, on what remains (upstream's
        message filter: all of them, whatever the validations' results)."""
        validations = pspec.get("validations") or []
        context["variables"] = LazyVariables(pspec.get("variables") or [], context, budget)
        out: list[Decision] = []
        for i, validation in enumerate(validations):
            decision = self._validation(validation, context, fail, budget)
            if budget.remaining < 0:
                return [_error(fail, OUT_OF_BUDGET)]
            decision.index = i
            out.append(decision)
        messages = [_message_expression(v, context, budget) for v in validations]
        for decision, validation, message in zip(out, validations, messages, strict=True):
            if budget.remaining < 0 and not decision.error:
                decision.deny, decision.error = fail, True
                decision.message = f"failed messageExpression: {OUT_OF_BUDGET}"
            elif decision.message is _FAILED:
                decision.message = message or _static_message(validation)
        return out

    def _match_conditions(self, pspec: Obj, context: dict[str, Any],
                          fail: bool, budget: Budget) -> bool | Decision:
        for condition in pspec.get("matchConditions") or []:
            expression = condition.get("expression") or ""
            meter = budget.meter()
            try:
                result = compile_kubernetes(expression, VARIABLES).evaluate(context, meter)
            except CELCompileError as e:
                return _error(fail, e.detail)
            except CELRuntimeError as e:
                if not budget.pay(meter):
                    return _error(fail, OUT_OF_BUDGET)
                return _error(fail, f"matchCondition '{condition.get('name', '')}' "
                              f"resulted in error: {e.message}")
            if not budget.pay(meter):
                return _error(fail, OUT_OF_BUDGET)
            if result is not True:
                if not isinstance(result, bool):
                    return _error(fail, f"matchCondition '{condition.get('name', '')}' "
                                  "resulted in error: must evaluate to bool")
                return False
        return True

    def _validation(self, validation: Obj, context: dict[str, Any], fail: bool,
                    budget: Budget) -> Decision:
        expression = validation.get("expression") or ""
        meter = budget.meter()
        try:
            result = compile_kubernetes(expression, VARIABLES).evaluate(context, meter)
        except CELCompileError as e:
            return _error(fail, e.detail)
        except CELRuntimeError as e:
            budget.pay(meter)
            return _error(fail, f"expression '{expression}' resulted in error: "
                                f"{e.message}")
        if not budget.pay(meter):
            return _error(fail, OUT_OF_BUDGET)
        if not isinstance(result, bool):
            return _error(fail, f"expression '{expression}' resulted in error: expected "
                                "bool, got " + type(result).__name__)
        if result:
            return Decision(False, "")
        # The message is evaluated after every validation, on what remains of the budget.
        return Decision(True, _FAILED, validation.get("reason") or "Invalid")


class ConfigError(Exception):
    pass


def collect_params(table: ResourceTable, cache: Any, pspec: Obj, bspec: Obj,
                   req: Request) -> list[Obj | None]:
    """The parameter objects a binding selects for its policy, from the watch cache
    ([None] when the policy takes none). Raises ConfigError (upstream's messages)."""
    kind = pspec.get("paramKind")
    if not kind:
        return [None]
    ref = bspec.get("paramRef")
    api_version = kind.get("apiVersion") or ""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    resource = next((r for r in table.resources
                     if r.group == group and r.kind == (kind.get("kind") or "")), None)
    if resource is None:
        raise ConfigError(f"failed to configure policy: failed to find resource "
                          f"referenced by paramKind: '{api_version}, Kind="
                          f"{kind.get('kind', '')}'")
    if ref is None:
        return [None]  # the policy's `params` is null
    namespace = ref.get("namespace") or ""
    if resource.namespaced and not namespace:
        namespace = req.namespace
        if not namespace:
            raise ConfigError("failed to configure binding: cannot use namespaced paramRef "
                              "in policy binding that matches cluster-scoped resources")
    elif not resource.namespaced and namespace:
        raise ConfigError("failed to configure binding: paramRef.namespace must not be "
                          "provided for a cluster-scoped `paramKind`")
    found: list[Obj | None] = []
    if ref.get("name"):
        param = cache.get(resource.key(namespace, ref["name"]))
        if param is not None:
            found.append(param)
    else:
        selector = ref.get("selector") or {}
        prefix = resource.namespace_prefix(namespace) if resource.namespaced else \
            resource.prefix
        for _key, param in cache.list(prefix):
            if labels.matches(selector, (param.get("metadata") or {}).get("labels")):
                found.append(param)
    if not found:
        if (ref.get("parameterNotFoundAction") or "Deny") == "Deny":
            raise ConfigError("failed to configure binding: no params found for policy "
                              "binding with `Deny` parameterNotFoundAction")
        return []
    return [_with_type(p, kind) for p in found]


def _with_type(param: Obj | None, kind: Obj) -> Obj | None:
    if param is None or param.get("kind"):
        return param
    return {"apiVersion": kind.get("apiVersion"), "kind": kind.get("kind"), **param}


_FAILED = "<failed validation>"  # a denial whose message is still to be evaluated


def _error(fail: bool, message: str) -> Decision:
    """An evaluation that failed: the failurePolicy decides."""
    return Decision(fail, message, error=True)


def _message_expression(validation: Obj, context: dict[str, Any], budget: Budget
                        ) -> str | None:
    """The messageExpression's text, if it yields a usable one (None after the budget
    ran out)."""
    expr = validation.get("messageExpression")
    if not expr or budget.remaining < 0:
        return None
    meter = budget.meter()
    try:
        result = compile_kubernetes(expr, VARIABLES).evaluate(context, meter)
    except (CELCompileError, CELRuntimeError):
        result = None
    if not budget.pay(meter) or not isinstance(result, str):
        return None
    text = result.strip()
    return text if text and "\n" not in text and len(text) <= _MAX_MESSAGE else None


def _static_message(validation: Obj) -> str:
    message = (validation.get("message") or "").strip()
    return message or f"failed expression: {(validation.get('expression') or '').strip()}"


def request_variable(req: Request, user: Any, dry_run: bool) -> Obj:
    kind = {"group": req.group, "version": req.version, "kind": req.kind}
    resource = {"group": req.group, "version": req.version, "resource": req.resource}
    out: Obj = {"uid": str(uuid.uuid4()), "kind": kind, "resource": resource,
                "requestKind": kind, "requestResource": resource, "name": req.name,
                "namespace": req.namespace, "operation": req.operation,
                "userInfo": user_info(user),
                "dryRun": dry_run}
    if req.subresource:
        out["subResource"] = out["requestSubResource"] = req.subresource
    return out


def user_info(user: Any) -> Obj:
    """The request's user as `request.userInfo` has it: every field present (a typed
    UserInfo in upstream's CEL), so `request.userInfo.extra[?'k']` works for anyone."""
    return {"username": getattr(user, "name", ""), "uid": getattr(user, "uid", ""),
            "groups": list(getattr(user, "groups", ()) or ()),
            "extra": {k: list(v) for k, v in (getattr(user, "extra", None) or {}).items()}}


def namespace_variable(ns: Obj | None) -> Obj | None:
    """The namespace as policies see it: metadata without managed fields, spec, status."""
    if ns is None:
        return None
    meta = {k: v for k, v in (ns.get("metadata") or {}).items() if k != "managedFields"}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
            "spec": ns.get("spec") or {}, "status": ns.get("status") or {}}


def _forbidden(req: Request, message: str, reason: str) -> StatusError:
    qualified = f"{req.resource}.{req.group}" if req.group else req.resource
    subject = f'{qualified} "{req.name}"' if req.name else qualified
    details: Obj = {"name": req.name}
    if req.group:
        details["group"] = req.group
    details["kind"] = req.resource
    details["causes"] = [{"message": message}]
    return StatusError(_CODES.get(reason, 422), reason, f"{subject} is forbidden: {message}",
                       details)
