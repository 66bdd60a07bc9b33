"""MutatingAdmissionPolicy enforcement: on every create and update of a served kind, each
MutatingAdmissionPolicyBinding whose policy and binding match the request has the
policy's `mutations` applied in order, once per parameter object, after its
`matchConditions`, to the object in the version the request was written in:

- `ApplyConfiguration`: the CEL expression constructs an `Object{...}` (with
  `Object.<field>...{}` for nested fields, type names following the field path), which
  is merged into the object as server-side apply merges (list maps by key, sets by value);
  it may not set atomic lists, maps or structs, nor fields the kind's schema lacks.
- `JSONPatch`: the expression yields a list of `JSONPatch{op, path, from, value}`, applied
  as RFC 6902 operations; a failed `test` leaves the object as it was.

Every mutation is evaluated on its own runtime budget (upstream's RuntimeCELCostBudget);
the object is defaulted after each. Errors of a policy (evaluation, configuration,
failed merges) deny the request unless its `failurePolicy` is Ignore, with upstream's
status (403, the first error's reason and message, every error as a cause).
`reinvocationPolicy: IfNeeded` takes part in the mutating phase's reinvocation
(`admission/reinvocation.py`).

Policies, bindings and parameters come from the watch cache; the CEL runs off the event
loop (`draemu.cel.offload`), as ValidatingAdmissionPolicy's does (`policies.py`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draemu.api.errors import StatusError, forbidden_error, internal_error
from draemu.api.types import Obj
from draemu.apiserver.admission.matching import Request, resources_match
from draemu.apiserver.admission.policies import (
    OUT_OF_BUDGET,
    VARIABLES,
    Budget,
    ConfigError,
    LazyVariables,
    ValidatingAdmission,
    collect_params,
    namespace_variable,
    request_variable,
)
from draemu.apiserver.admission.reinvocation import ReinvocationContext
from draemu.apiserver.registry.resources import Resource, ResourceTable
from draemu.apiserver.wire.jsoncopy import clone
from draemu.apiserver.wire.patch import managed, typed
from draemu.apiserver.wire.patch.json_patch import apply_json_patch
from draemu.cel.cost import RUNTIME_CEL_COST_BUDGET, RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS
from draemu.cel.errors import CELCompileError, CELRuntimeError
from draemu.cel.kubernetes import compile_kubernetes
from draemu.cel.library.authz import Authorizer, ResourceCheck
from draemu.cel.values import StructValue, Uint, type_name
from draemu.openapi.schemas.node import LIST, MAP, STRUCT, SchemaNode

GROUP = "admissionregistration.k8s.io"
POLICIES = "mutatingadmissionpolicies"
BINDINGS = "mutatingadmissionpolicybindings"
PLUGIN = "MutatingAdmissionPolicy"
# Never mutated by policies, so that a bad policy cannot lock its own fix out.
EXEMPT = frozenset({"validatingadmissionpolicies", "validatingadmissionpolicybindings",
                    "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
                    "validatingwebhookconfigurations", "mutatingwebhookconfigurations"})
RESULT_TYPES = {"ApplyConfiguration": "Object", "JSONPatch": "list(JSONPatch)"}


@dataclass
class PolicyError:
    """One policy's failure, denied by its failurePolicy unless that is Ignore."""

    policy: str
    binding: str | None
    message: str
    fail: bool
    reason: str = ""

    def text(self) -> str:
        if self.binding is None:
            return f'policy "{self.policy}" denied request: {self.message}'
        return (f"policy '{self.policy}' with binding '{self.binding}' denied request: "
                f"{self.message}")


@dataclass
class Invocation:
    """A policy to apply through one binding with one parameter object."""

    policy: str
    binding: str
    pspec: Obj
    param: Obj | None

    @property
    def key(self) -> tuple[str, str, str]:
        meta = (self.param or {}).get("metadata") or {}
        param = f"{meta.get('namespace', '')}/{meta.get('name', '')}" if self.param else ""
        return self.policy, self.binding, param


@dataclass
class MutationPlan:
    """What a request's policies are applied with, read from the watch cache."""

    req: Request
    old: Obj | None
    request: Obj  # the `request` variable
    ns_obj: Obj | None
    user: Any
    resource: Resource
    version: str
    invocations: list[Invocation]
    errors: list[PolicyError] = field(default_factory=list)


class MutationError(Exception):
    """A mutation failed: the message its policy's error carries."""


class MutatingAdmission:
    """`plan` the bindings of a request (on the event loop: the watch cache), then
    `mutate` its object (in a worker: the CEL and the merges)."""

    def __init__(self, table: ResourceTable, cache: Any, authorizer: Any = None) -> None:
        self.table = table
        self.cache = cache
        # The apiserver's authorizer, for the `authorizer` variable (through
        # ValidatingAdmission.authorize, which words the checks as upstream's).
        self.checks = ValidatingAdmission(table, cache, authorizer)

    def plan(self, *, req: Request, obj: Obj | None, old: Obj | None, user: Any,
             dry_run: bool, resource: Resource, version: str) -> MutationPlan | None:
        """The bindings that apply to the request (None: nothing to do)."""
        if req.group == GROUP and req.resource in EXEMPT:
            return None
        bindings_res = self.table.by_group_resource(GROUP, BINDINGS)
        policies_res = self.table.by_group_resource(GROUP, POLICIES)
        if bindings_res is None or policies_res is None:
            return None
        bindings = self.cache.list(bindings_res.prefix)
        if not bindings:
            return None
        ns_obj = None
        if req.namespaced and req.namespace and not (req.group == "" and
                                                     req.resource == "namespaces"):
            ns_res = self.table.by_group_resource("", "namespaces")
            ns_obj = self.cache.get(ns_res.key("", req.namespace)) if ns_res else None
        out = MutationPlan(req, old, request_variable(req, user, dry_run), ns_obj, user,
                           resource, version, [])
        # Policy by policy, each binding of one in turn (upstream's order, which is its
        # informer's; draemu's is by name).
        for _key, binding in sorted(bindings, key=_binding_order):
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
            name, bname = policy["metadata"]["name"], binding["metadata"]["name"]
            try:
                params = collect_params(self.table, self.cache, pspec, spec, req)
            except ConfigError as e:
                out.errors.append(PolicyError(name, bname, str(e), _fails(pspec)))
                continue
            out.invocations += [Invocation(name, bname, pspec, p) for p in params]
        return out if out.invocations or out.errors else None

    def mutate(self, plan: MutationPlan, obj: Obj, reinvocation: ReinvocationContext,
               deadline: float | None,
               authorize: Callable[..., tuple[bool, str]] | None = None) -> Obj:
        """`obj` (the request's version) after the planned policies' mutations; raises
        the request's denial. Records what reinvocation needs in `reinvocation`."""
        mine = reinvocation.of(PLUGIN)
        if reinvocation.is_reinvoke and mine.output_changed(obj):
            mine.require_reinvoking_previously_invoked()
        req = plan.req
        authorizer = Authorizer(authorize or self.checks.authorize, plan.user, ResourceCheck(
            None, req.group, req.resource, req.subresource, req.namespace, req.name))
        errors = list(plan.errors)
        dirty = False
        for inv in plan.invocations:
            context: dict[str, Any] = {
                "object": obj, "oldObject": plan.old, "request": plan.request,
                "params": inv.param, "namespaceObject": namespace_variable(plan.ns_obj),
                "authorizer": authorizer}
            budget = Budget(RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, deadline)
            variables = LazyVariables(inv.pspec.get("variables") or [], context, budget)
            context["variables"] = variables
            try:
                if not _conditions_match(inv.pspec, context, budget):
                    continue
            except MutationError as e:
                errors.append(PolicyError(inv.policy, inv.binding, str(e), _fails(inv.pspec),
                                          "Invalid"))
                continue
            if reinvocation.is_reinvoke and not mine.should_reinvoke(inv.key):
                continue
            before = obj
            for mutation in inv.pspec.get("mutations") or []:
                budget = Budget(RUNTIME_CEL_COST_BUDGET, deadline)
                variables.charge_to(budget)
                context["object"] = obj
                try:
                    obj = self._apply(mutation, context, budget, obj, plan)
                except MutationError as e:
                    errors.append(PolicyError(inv.policy, inv.binding, str(e),
                                              _fails(inv.pspec), "Invalid"))
                    continue
                dirty = True
            if obj != before:
                mine.require_reinvoking_previously_invoked()
                reinvocation.should_reinvoke = True
            if inv.pspec.get("reinvocationPolicy") == "IfNeeded":
                mine.invoked(inv.key)
        if dirty:
            mine.require_reinvoking_previously_invoked()
            reinvocation.should_reinvoke = True
        mine.record_output(obj)
        _deny(errors, req, obj)
        return obj

    def _apply(self, mutation: Obj, context: dict[str, Any], budget: Budget, obj: Obj,
               plan: MutationPlan) -> Obj:
        """One mutation applied to `obj` (which is not changed), then defaulted."""
        patch_type = mutation.get("patchType") or ""
        body = mutation.get("applyConfiguration" if patch_type == "ApplyConfiguration"
                            else "jsonPatch") or {}
        result = _evaluate(body.get("expression") or "", RESULT_TYPES.get(patch_type),
                           context, budget)
        if patch_type == "ApplyConfiguration":
            out = _apply_configuration(result, obj, plan.resource, plan.version)
        else:
            out = _json_patch(result, obj, plan.resource, plan.version)
        plan.resource.strategy.default(out, plan.version)
        return out


def _binding_order(item: tuple[str, Obj]) -> tuple[str, str]:
    binding = item[1]
    return (binding.get("spec") or {}).get("policyName") or "", binding["metadata"]["name"]


def _fails(pspec: Obj) -> bool:
    return (pspec.get("failurePolicy") or "Fail") == "Fail"


def _evaluate(expression: str, want: str | None, context: dict[str, Any],
              budget: Budget) -> Any:
    """The value of a mutation's expression, in upstream's words when it fails."""
    try:
        program = compile_kubernetes(expression.strip(), VARIABLES, want, patch_types=True)
    except CELCompileError as e:
        detail = e.detail if not e.result_type else f"must evaluate to {want} but got {e.got}"
        raise MutationError(detail) from None
    meter = budget.meter()
    try:
        value = program.evaluate(context, meter)
    except CELRuntimeError as e:
        if not budget.pay(meter):
            raise MutationError(OUT_OF_BUDGET) from None
        raise MutationError(f"expression '{expression}' resulted in error: {e.message}"
                            ) from None
    if not budget.pay(meter):
        raise MutationError(OUT_OF_BUDGET)
    return value


def _conditions_match(pspec: Obj, context: dict[str, Any], budget: Budget) -> bool:
    """Whether the policy's matchConditions hold: any false one skips it; otherwise any
    error fails it (MutationError with every error); all true apply it."""
    errors: list[str] = []
    for condition in pspec.get("matchConditions") or []:
        expression = condition.get("expression") or ""
        try:
            program = compile_kubernetes(expression, VARIABLES, "bool")
        except CELCompileError as e:
            errors.append(f"compilation error: {e.detail}")
            continue
        meter = budget.meter()
        try:
            result = program.evaluate(context, meter)
        except CELRuntimeError as e:
            if not budget.pay(meter):
                raise MutationError(OUT_OF_BUDGET) from None
            errors.append(f"expression '{expression}' resulted in error: {e.message}")
            continue
        if not budget.pay(meter):
            raise MutationError(OUT_OF_BUDGET)
        if result is False:
            return False
        if result is not True:
            errors.append(f"expression '{expression}' resulted in error: no such overload")
    if errors:
        raise MutationError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    return True


# ApplyConfiguration ----------------------------------------------------------------------

def _apply_configuration(value: Any, obj: Obj, resource: Resource, version: str) -> Obj:
    if not isinstance(value, StructValue) or value.type_name != "Object":
        raise MutationError(f"unsupported return type from ApplyConfiguration expression: "
                            f"{_cel_type(value)}")
    mismatches = _type_name_errors(value, [value.type_name])
    if mismatches:
        raise MutationError("type mismatch: " + "\n".join(mismatches))
    config = _to_json(value)
    config["apiVersion"], config["kind"] = obj.get("apiVersion"), obj.get("kind")
    node = resource.strategy.schema_node(version) or managed.schema_of(obj)
    untyped = typed.typing_errors(config, node)
    if untyped:
        raise MutationError("error applying patch: failed to convert patch object to typed "
                            "object: " + "\n".join(untyped))
    atomics = _atomic_paths(config, node, "")
    if atomics:
        raise MutationError("error applying patch: invalid ApplyConfiguration: may not "
                            "mutate atomic arrays, maps or structs: " + ", ".join(atomics))
    # A copy: merging shares the subtrees it does not touch, and defaulting works in place.
    merged = typed.merge(clone(obj), config, node)
    assert isinstance(merged, dict)
    return merged


def _atomic_paths(value: Any, node: SchemaNode, path: str) -> list[str]:
    """Where an apply configuration sets an atomic list, map or struct (as a whole: the
    merge would replace what is there)."""
    if node.is_open:
        return []
    out: list[str] = []
    if isinstance(value, dict) and node.shape in (STRUCT, MAP):
        if node.map_type == "atomic":
            out.append(path)
        for name, sub in value.items():
            sub_node = node.field(name)
            if sub_node is not None:
                out += _atomic_paths(sub, sub_node, f"{path}.{name}")
    elif isinstance(value, list) and node.shape == LIST:
        if node.list_type not in ("map", "set"):
            out.append(path)
        items = node.items()
        for i, item in enumerate(value):
            out += _atomic_paths(item, items, f"{path}[{i}]")
    return out


def _type_name_errors(value: Any, path: list[str]) -> list[str]:
    """An `Object` value's nested constructions must be named by their field path from
    the root (`Object{spec: Object.spec{...}}`)."""
    errors: list[str] = []
    if isinstance(value, StructValue):
        want = ".".join(path)
        if value.type_name != want:
            errors.append(f'unexpected type name "{value.type_name}", expected "{want}", '
                          "which matches field name path from root Object type")
        for name, sub in value.items():
            errors += _type_name_errors(sub, [*path, name])
    elif isinstance(value, list):
        for item in value:
            errors += _type_name_errors(item, path)
    elif isinstance(value, dict):
        for item in value.values():
            errors += _type_name_errors(item, path)
    return errors


# JSONPatch -------------------------------------------------------------------------------

def _json_patch(value: Any, obj: Obj, resource: Resource, version: str) -> Obj:
    if not isinstance(value, list):
        raise MutationError("type mismatch: JSONPatchType.expression should evaluate to array")
    ops = []
    for item in value:
        if not isinstance(item, StructValue) or item.type_name != "JSONPatch":
            raise MutationError("type mismatch: JSONPatchType.expression should evaluate to "
                                f"array of JSONPatch: type conversion error from "
                                f"'{_cel_type(item)}' to 'JSONPatch'")
        op: Obj = {"op": item.get("op", ""), "path": item.get("path", "")}
        if item.get("from"):
            op["from"] = item["from"]
        if "value" in item:
            inner = item["value"]
            if isinstance(inner, StructValue):
                mismatches = _type_name_errors(inner, [inner.type_name])
                if mismatches:
                    raise MutationError("type mismatch: " + "\n".join(mismatches))
            op["value"] = _to_json(inner)
        ops.append(op)
    try:
        patched = apply_json_patch(obj, ops)
    except StatusError as e:
        if e.message.startswith("testing value"):
            return obj  # a failed test: the object stays as it is
        raise MutationError(f"JSON Patch: {e.message}") from None
    if resource.strategy.schema_node(version) is None:
        unknown = typed.typing_errors(patched, managed.schema_of(patched))
        if unknown:
            # Upstream decodes the patched object strictly into its Go type.
            fields = ", ".join(f'unknown field "{u.split(":")[0].lstrip(".")}"'
                               for u in unknown)
            raise internal_error(f"strict decoding error: {fields}")
    return patched


def _to_json(value: Any) -> Any:
    """A CEL value as JSON (what upstream's conversion to structpb values gives)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise MutationError(f'map key "{k}" is of type {_cel_type(k)}, not string')
            out[k] = _to_json(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, Uint):
        return int(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise MutationError("JSONPath valueExpression evaluated to a type that could not "
                        f"marshal to JSON: unsupported type: {_cel_type(value)}")


def _cel_type(value: Any) -> str:
    return type_name(value)


def _deny(errors: list[PolicyError], req: Request, obj: Obj) -> None:
    """Upstream's one denial for every failed policy whose failurePolicy is Fail: 403,
    the first error's reason and message, all of them as causes."""
    failed = [e for e in errors if e.fail]
    if not failed:
        return
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    details: Obj = {"name": name}
    if req.group:
        details["group"] = req.group
    details["kind"] = req.resource
    details["causes"] = [{"message": e.text()} for e in failed]
    error = forbidden_error(failed[0].text(), details)
    if failed[0].reason:
        error.reason = failed[0].reason
    raise error
