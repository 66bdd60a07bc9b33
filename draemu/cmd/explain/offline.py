"""What-if allocation from manifests, without a cluster (`draemu allocate`).

Objects come as YAML or JSON documents (or `kind: List`) in any served
resource.k8s.io version; they are defaulted, converted to v1 and validated with the
apiserver's own strategies, then fed to the same allocator the scheduler uses.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
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


def run_on_nodes(objects: list[dict[str, Any]], node_names: list[str] | None,
                 node_labels: dict[str, str], gates: FeatureGates, *, validate: bool = True
                 ) -> tuple[list[AllocationOutcome], list[dict[str, Any]], Inputs]:
    """`run` on each named node, or (None) on every node the input knows: its Node
    objects' and the ResourceSlices' `nodeName`s."""
    inputs = classify(objects, gates, validate)
    try:
        inv, pending = build_inventory(inputs, gates)
    except MALFORMED as e:
        raise InputError(f"malformed input: {type(e).__name__}: {e}") from None
    if inv.rejected:
        raise InputError("\n".join(f"{what}: {why}" for what, why in inv.rejected.items()))
    if not pending:
        raise InputError("no ResourceClaim to allocate in the input (one without "
                         "status.allocation; pass it with -f)")
    names = node_names or known_nodes(inputs)
    if not names:
        raise InputError("no node to allocate on: pass --node NAME, or give Node objects or "
                         "ResourceSlices with a nodeName")
    allocator = Allocator(inv)
    outcomes = []
    for name in names:
        try:
            node = node_object(inputs, name, node_labels)
        except (TypeError, ValueError) as e:
            raise InputError(f"Node {name}: malformed labels: {e}") from None
        outcomes.append(allocator.allocate(node, pending))
    return outcomes, pending, inputs


def known_nodes(inputs: Inputs) -> list[str]:
    names = {str((n.get("metadata") or {}).get("name", "")) for n in inputs.nodes}
    names |= {str((s.get("spec") or {}).get("nodeName")) for s in inputs.slices
              if (s.get("spec") or {}).get("nodeName")}
    return sorted(n for n in names if n)


def preset_objects(name_or_path: str, nodes: int | None = None) -> list[dict[str, Any]]:
    """What a preset's cluster holds for the allocator, without starting it: its
    DeviceClasses, its Nodes (with their labels) and the ResourceSlices its built-in
    drivers publish on each node. PresetError for a preset that cannot be read."""
    from draemu.drivers.builtin import make_driver
    from draemu.drivers.presets import device_class_object, load_preset
    from draemu.drivers.sdk.slices import split_pool

    preset = load_preset(name_or_path, nodes)
    objects = [device_class_object(c) for c in preset.device_classes]
    for node in preset.nodes:
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node.name, "labels": {"kubernetes.io/hostname": node.name, **node.labels}}})
        for spec in node.drivers:
            # No file is written: the CDI folder is only where prepare would write.
            driver = make_driver(spec, node.name, Path("/nonexistent"))
            for pool_name, pool in driver.resources().pools.items():
                parts = split_pool(pool)
                for index, part in enumerate(parts):
                    objects.append({
                        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": f"{node.name}-{spec.name}-{index}"},
                        "spec": {"driver": spec.name, "nodeName": node.name,
                                 "pool": {"name": pool_name, "generation": 1,
                                          "resourceSliceCount": len(parts)}, **part}})
    return objects


async def cluster_objects(client: Any) -> list[dict[str, Any]]:
    """What a live cluster holds for the allocator, read through the API: DeviceClasses,
    ResourceSlices, DeviceTaintRules, allocated ResourceClaims and Nodes (its pending
    claims are not this command's to allocate)."""
    from draemu.client import ApiError

    objects: list[dict[str, Any]] = []
    for api_version, resource, kind in (
            ("resource.k8s.io/v1", "deviceclasses", "DeviceClass"),
            ("resource.k8s.io/v1", "resourceslices", "ResourceSlice"),
            ("resource.k8s.io/v1", "devicetaintrules", "DeviceTaintRule"),
            ("resource.k8s.io/v1", "resourceclaims", "ResourceClaim"),
            ("v1", "nodes", "Node")):
        try:
            items = (await client.list_all(api_version, resource)).get("items") or []
        except ApiError as e:
            if e.code == 404 and kind == "DeviceTaintRule":
                continue  # not served by every release
            raise
        for item in items:
            if kind == "ResourceClaim" and not (item.get("status") or {}).get("allocation"):
                continue
            objects.append({"apiVersion": api_version, "kind": kind, **item})
    return objects


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
