"""admissionregistration.k8s.io/v1 MutatingAdmissionPolicy and
MutatingAdmissionPolicyBinding (GA in 1.36, gate MutatingAdmissionPolicy): stored,
defaulted and validated here with upstream's rules and messages (mutations compiled in
the policies' environment with its `Object` and `JSONPatch` types);
`draemu.apiserver.admission.mutating` applies them."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import FieldError, Path, invalid, not_supported, required
from draemu.api.names import is_dns1123_subdomain
from draemu.api.types import Obj
from draemu.apiserver.registry.admissionregistration.common import (
    FAILURE_POLICIES,
    GROUP,
    POLICY_VARIABLES,
    authorize_binding,
    authorize_param_kind,
    default_match_resources,
    param_ref_cell,
    static_suffix_warnings,
    validate_expression,
    validate_match_conditions,
    validate_match_resources,
    validate_param_kind,
    validate_param_ref,
    validate_static_suffix,
    validate_variables,
)
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

POLICIES = "mutatingadmissionpolicies"
BINDINGS = "mutatingadmissionpolicybindings"
PATCH_TYPES = ["ApplyConfiguration", "JSONPatch"]
REINVOCATION = ["IfNeeded", "Never"]
# A mutating policy never sees DELETE.
OPERATIONS = ["*", "CONNECT", "CREATE", "UPDATE"]
# What a mutation's expression must evaluate to, by patch type.
RESULT_TYPES = {"ApplyConfiguration": "Object", "JSONPatch": "list(JSONPatch)"}
_FIELDS = {"ApplyConfiguration": "applyConfiguration", "JSONPatch": "jsonPatch"}


class MutatingAdmissionPolicyStrategy(Strategy):
    group = GROUP
    kind = "MutatingAdmissionPolicy"
    resource = POLICIES
    singular = "mutatingadmissionpolicy"
    categories = ("api-extensions",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    version_releases = {"v1": ("1.36", None)}
    feature_gate = "MutatingAdmissionPolicy"

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("failurePolicy", "Fail")
        default_match_resources(spec.get("matchConstraints"))

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        spec = obj.get("spec") or {}
        errs = validate_mutating_policy_spec(spec, Path("spec"))
        errs += validate_static_suffix(obj["metadata"].get("name") or "")
        return errs or authorize_param_kind(spec.get("paramKind"), ctx,
                                            Path("spec").child("paramKind"))

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec = new.get("spec") or {}
        errs = validate_mutating_policy_spec(spec, Path("spec"))
        kind = spec.get("paramKind")
        if errs or kind is None or kind == (old.get("spec") or {}).get("paramKind"):
            return errs
        return authorize_param_kind(kind, ctx, Path("spec").child("paramKind"))

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        return static_suffix_warnings(obj, ctx)

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, Column("Mutations", type="integer", description="Mutation "
                              "indicates the number of mutations rules defined in this "
                              "configuration"),
                Column("ParamKind", description="ParamKind specifies the kind of resources "
                       "used to parameterize this policy"), AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        kind = spec.get("paramKind")
        param = f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"
        return [obj["metadata"].get("name", ""), len(spec.get("mutations") or []), param, AGE]


def validate_mutating_policy_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(required(path.child("failurePolicy")))
    elif failure not in FAILURE_POLICIES:
        errs.append(not_supported(path.child("failurePolicy"), failure, FAILURE_POLICIES))
    if spec.get("paramKind") is not None:
        errs += validate_param_kind(spec["paramKind"], path.child("paramKind"))
    match = spec.get("matchConstraints")
    if match is None:
        errs.append(required(path.child("matchConstraints")))
    else:
        errs += validate_match_resources(match, path.child("matchConstraints"))
        if not match.get("resourceRules"):
            errs.append(required(path.child("matchConstraints", "resourceRules")))
        errs += mutating_operations(match, path.child("matchConstraints", "resourceRules",
                                                      "operations"))
    errs += validate_match_conditions(spec.get("matchConditions") or [], POLICY_VARIABLES,
                                      path.child("matchConditions"))
    errs += validate_variables(spec.get("variables") or [], path.child("variables"))
    mutations = spec.get("mutations") or []
    if not mutations:
        errs.append(required(path.child("mutations"), "mutations must contain at least one "
                             "item"))
    for i, mutation in enumerate(mutations):
        mpath = path.child("mutations").index(i)
        if not isinstance(mutation, dict):
            errs.append(required(mpath))
            continue
        errs += _validate_mutation(mutation, mpath)
    reinvocation = spec.get("reinvocationPolicy")
    if not reinvocation:
        errs.append(required(path.child("reinvocationPolicy")))
    elif reinvocation not in REINVOCATION:
        errs.append(not_supported(path.child("reinvocationPolicy"), reinvocation,
                                  REINVOCATION))
    return errs


def mutating_operations(match: Obj, path: Path) -> list[FieldError]:
    """Only CREATE, UPDATE and CONNECT can be mutated (upstream names no index)."""
    return [not_supported(path, op, OPERATIONS)
            for rule in match.get("resourceRules") or [] if isinstance(rule, dict)
            for op in rule.get("operations") or [] if op not in OPERATIONS]


def _validate_mutation(mutation: Obj, path: Path) -> list[FieldError]:
    patch_type = mutation.get("patchType")
    if not patch_type:
        return [required(path.child("patchType"))]
    if patch_type not in PATCH_TYPES:
        return [not_supported(path.child("patchType"), patch_type, PATCH_TYPES)]
    errs: list[FieldError] = []
    own = _FIELDS[patch_type]
    other = _FIELDS[next(t for t in PATCH_TYPES if t != patch_type)]
    body = mutation.get(own)
    if body is None:
        errs.append(required(path.child(own), f"must be specified when patchType is "
                             f"{patch_type}"))
    else:
        expression = ((body or {}).get("expression") or "").strip()
        if not expression:
            errs.append(required(path.child(own, "expression")))
        else:
            errs += validate_expression(expression, POLICY_VARIABLES,
                                        path.child(own, "expression"),
                                        want=RESULT_TYPES[patch_type], patch_types=True)
    if mutation.get(other) is not None:
        errs.append(invalid(path.child(other), "{" + other + "}",
                            f"must not be specified when patchType is {patch_type}"))
    return errs


class MutatingAdmissionPolicyBindingStrategy(Strategy):
    group = GROUP
    kind = "MutatingAdmissionPolicyBinding"
    resource = BINDINGS
    singular = "mutatingadmissionpolicybinding"
    categories = ("api-extensions",)
    namespaced = False
    versions = ("v1",)
    storage_version = "v1"
    version_releases = {"v1": ("1.36", None)}
    feature_gate = "MutatingAdmissionPolicy"

    def default(self, obj: Obj, version: str) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_match_resources(spec.get("matchResources"))

    def validate_spec(self, obj: Obj) -> list[FieldError]:
        spec = obj.get("spec") or {}
        path = Path("spec")
        errs: list[FieldError] = []
        policy = spec.get("policyName") or ""
        if not policy:
            errs.append(required(path.child("policyName")))
        else:
            errs += [invalid(path.child("policyName"), policy, m)
                     for m in is_dns1123_subdomain(policy)]
        if spec.get("paramRef") is not None:
            errs += validate_param_ref(spec["paramRef"], path.child("paramRef"))
        match = spec.get("matchResources")
        errs += validate_match_resources(match, path.child("matchResources"))
        if isinstance(match, dict):
            errs += mutating_operations(match, path.child("matchResources", "resourceRules",
                                                          "operations"))
        return errs

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs = self.validate_spec(obj) + validate_static_suffix(
            obj["metadata"].get("name") or "")
        return errs or authorize_binding(obj, ctx, POLICIES)

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        errs = self.validate_spec(new)
        if errs or spec.get("paramRef") is None or (
                spec.get("paramRef") == old_spec.get("paramRef")
                and spec.get("policyName") == old_spec.get("policyName")):
            return errs
        return authorize_binding(new, ctx, POLICIES)

    def warnings(self, obj: Obj, ctx: Context) -> list[str]:
        return static_suffix_warnings(obj, ctx)

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN, Column("PolicyName", description="PolicyName indicates the policy "
                              "definition which the policy binding binded to"),
                Column("ParamRef", description="ParamRef indicates the param resource "
                       "which sets the configuration param"), AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        spec = obj.get("spec") or {}
        return [obj["metadata"].get("name", ""), spec.get("policyName", ""),
                param_ref_cell(spec.get("paramRef")), AGE]


STRATEGIES = [MutatingAdmissionPolicyStrategy(), MutatingAdmissionPolicyBindingStrategy()]
