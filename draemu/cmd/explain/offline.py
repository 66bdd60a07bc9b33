"""What-if allocation from manifests, without a cluster (`draemu allocate`).

Objects come as YAML or JSON documents (or `kind: List`) in any served
resource.k8s.io version; they are defaulted, converted to v1 and validated with the
apiserver's own strategies, then fed to the same allocator the scheduler uses.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from draemu.api import yamlload
from draemu.api.yamlerror import one_line
from draemu.apiserver.registry import discover
from draemu.features import FeatureGates
from draemu.scheduler.dra.allocator import AllocationOutcome, Allocator
from draemu.scheduler.dra.features import Features
from draemu.scheduler.dra.inventory import MALFORMED, Inventory

_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "DeviceTaintRule")


class InputError(Exception):
    """The input cannot be used (exit status 2)."""


@dataclass
class Inputs:
    classes: list[dict[str, Any]] = field(default_factory=list)
    slices: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    taint_rules: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def parse_documents(text: str, source: str) -> list[dict[str, Any]]:
    """YAML (several documents) or JSON; `kind: List` is flattened."""
    try:
        docs = [d for d in yamlload.load_file_documents(text) if d is not None]
    except yaml.YAMLError as e:
        try:
            docs = [json.loads(text)]
        except ValueError:
            raise InputError(f"{source}: not valid YAML or JSON: {one_line(e)}") from None
    out: list[dict[str, Any]] = []
    _flatten(docs, source, out)
    return out


def _flatten(docs: list[Any], source: str, out: list[dict[str, Any]]) -> None:
    for doc in docs:
        if not isinstance(doc, dict):
            raise InputError(f"{source}: expected an object, got {type(doc).__name__}")
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            _flatten(doc["items"], source, out)
        else:
            out.append(doc)


@functools.cache
def _strategies() -> dict[str, Any]:
    return {s.kind: s for s in discover() if s.group == "resource.k8s.io"}


def classify(objects: list[dict[str, Any]], gates: FeatureGates, validate: bool) -> Inputs:
    strategies = _strategies()
    inputs = Inputs()
    problems: list[str] = []
    for i, obj in enumerate(objects):
        try:
            _classify_one(obj, inputs, strategies, gates, validate, problems)
        except MALFORMED as e:
            problems.append(f"object #{i + 1}: malformed: {type(e).__name__}: {e}")
    if problems:
        raise InputError("\n".join(problems))
    return inputs


def _classify_one(obj: dict[str, Any], inputs: Inputs, strategies: dict[str, Any],
                  gates: FeatureGates, validate: bool, problems: list[str]) -> None:
    kind = str(obj.get("kind", ""))
    api_version = str(obj.get("apiVersion", ""))
    name = str((obj.get("metadata") or {}).get("name", ""))
    if kind == "Node" and api_version == "v1":
        inputs.nodes.append(obj)
        return
    group, _, version = api_version.rpartition("/")
    if kind not in _KINDS or group != "resource.k8s.io":
        inputs.skipped.append(f"{api_version} {kind} {name}".strip())
        return
    v1 = _to_v1(obj, kind, version, strategies.get(kind), problems)
    if v1 is None:
        return
    if validate:
        _drop_disabled_fields(v1, kind, gates)
        problems.extend(_validate(v1, kind, strategies.get(kind), gates))
    {"DeviceClass": inputs.classes, "ResourceSlice": inputs.slices,
     "ResourceClaim": inputs.claims, "DeviceTaintRule": inputs.taint_rules}[kind].append(v1)


def _to_v1(obj: dict[str, Any], kind: str, version: str, strategy: Any,
           problems: list[str]) -> dict[str, Any] | None:
    name = (obj.get("metadata") or {}).get("name", "")
    if strategy is None:
        if version != "v1":
            problems.append(f"{kind} {name}: resource.k8s.io/{version} cannot be converted "
                            "here; use resource.k8s.io/v1")
            return None
        return obj
    if version not in strategy.versions:
        problems.append(f"{kind} {name}: resource.k8s.io/{version} is not a served version "
                        f"(served: {', '.join(strategy.versions)})")
        return None
    converted = json.loads(json.dumps(obj))
    strategy.default(converted, version)
    converted = strategy.to_storage(converted, version)
    converted["apiVersion"] = "resource.k8s.io/v1"
    return converted


def _drop_disabled_fields(obj: dict[str, Any], kind: str, gates: FeatureGates) -> None:
    """What the apiserver stores: fields of disabled feature gates are dropped on create."""
    from draemu.apiserver.registry.resource import gates as gated

    spec, status = obj.get("spec"), obj.get("status")
    if kind == "ResourceClaim":
        gated.claim_spec(spec, None, gates)
        gated.claim_status(status, None, gates)
    elif kind == "ResourceSlice":
        gated.slice_spec(spec, None, gates)
    elif kind == "DeviceClass":
        gated.class_spec(spec, None, gates)


def _validate(obj: dict[str, Any], kind: str, strategy: Any, gates: FeatureGates) -> list[str]:
    if strategy is None:
        return []
    from draemu.api.errors import invalid_object
    from draemu.apiserver.registry.strategy import Context

    errors = strategy.validate(obj, Context(gates=gates))
    if not errors:
        return []
    name = (obj.get("metadata") or {}).get("name", "")
    return [str(invalid_object(kind, "resource.k8s.io", name, errors))]


def build_inventory(inputs: Inputs, gates: FeatureGates, features: Features | None = None
                    ) -> tuple[Inventory, list[dict[str, Any]]]:
    """The inventory, and the claims to allocate (those without an allocation)."""
    inv = Inventory(gates)
    if features is not None:
        inv.features = features
    for obj in inputs.classes:
        inv.set_class(obj)
    for obj in inputs.slices:
        inv.set_slice(obj)
    for obj in inputs.taint_rules:
        inv.set_taint_rule(obj)
    pending: list[dict[str, Any]] = []
    for obj in inputs.claims:
        if (obj.get("status") or {}).get("allocation"):
            inv.set_claim(obj)
        else:
            pending.append(obj)
    return inv, pending


def node_object(inputs: Inputs, name: str, labels: dict[str, str]) -> dict[str, Any]:
    merged: dict[str, str] = {}
    declared: list[str] = []
    for n in inputs.nodes:
        if (n.get("metadata") or {}).get("name") == name:
            merged.update((n.get("metadata") or {}).get("labels") or {})
            declared = list((n.get("status") or {}).get("declaredFeatures") or declared)
    merged.update(labels)
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": merged}}
    if declared:  # what the allocator checks of a node's status (DRAOptionalNodeOperations)
        node["status"] = {"declaredFeatures": declared}
    return node


def run(objects: list[dict[str, Any]], node_name: str, node_labels: dict[str, str],
        gates: FeatureGates, *, validate: bool = True, features: Features | None = None
        ) -> tuple[AllocationOutcome, list[dict[str, Any]], Inputs]:
    inputs = classify(objects, gates, validate)
    try:
        inv, pending = build_inventory(inputs, gates, features)
    except MALFORMED as e:
        raise InputError(f"malformed input: {type(e).__name__}: {e}") from None
    if inv.rejected:
        raise InputError("\n".join(f"{what}: {why}" for what, why in inv.rejected.items()))
    try:
        node = node_object(inputs, node_name, node_labels)
    except (TypeError, ValueError) as e:
        raise InputError(f"Node {node_name}: malformed labels: {e}") from None
    return Allocator(inv).allocate(node, pending), pending, inputs


def report(outcome: AllocationOutcome, claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The `-o json` object."""
    out: dict[str, Any] = {"node": outcome.node, "outcome": outcome.status}
    if outcome.error:
        out["error"] = outcome.error
    allocated = []
    if outcome.results is not None:
        for claim, allocation in zip(claims, outcome.results, strict=True):
            meta = claim.get("metadata") or {}
            entry = {"name": meta.get("name", ""), "allocation": allocation}
            if meta.get("namespace"):
                entry = {"namespace": meta["namespace"], **entry}
            allocated.append(entry)
    out["claims"] = allocated
    out["explanation"] = outcome.explanation.to_dict()
    return out
