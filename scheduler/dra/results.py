"""AllocationResult objects (resource.k8s.io/v1) from the devices the search chose:
results, class and claim configuration, and the node selector."""

from __future__ import annotations

from typing import Any

from draemu.scheduler.dra.capacity import consumed_quantities
from draemu.scheduler.dra.features import QUALIFIED_CAPACITY_REQUESTS, Features
from draemu.scheduler.dra.requests import AllocError, ClaimState


def build_result(claim: ClaimState, node_name: str, features: Features) -> dict[str, Any]:
    results = []
    for chosen in claim.chosen:
        spec, device = chosen.spec, chosen.device
        r: dict[str, Any] = {"request": spec.name, "driver": device.id[0],
                             "pool": device.id[1], "device": device.id[2]}
        if spec.admin:
            r["adminAccess"] = True
        if spec.tolerations:
            r["tolerations"] = spec.tolerations
        if device.slice.skip_node_operations:
            r["skipNodeOperations"] = list(device.slice.skip_node_operations)
        if device.binding_conditions:
            r["bindingConditions"] = list(device.binding_conditions)
            r["bindingFailureConditions"] = list(device.binding_failure_conditions)
        if chosen.share_id is not None:
            r["shareID"] = chosen.share_id
            if chosen.consumed:
                r["consumedCapacity"] = consumed_quantities(
                    device, spec.capacity, spec.capacity_formats,
                    features.fractional_capacity_range,
                    features.since(QUALIFIED_CAPACITY_REQUESTS))
        results.append(r)
    allocation: dict[str, Any] = {"devices": {"results": results}}
    config = _config(claim)
    if config:
        allocation["devices"]["config"] = config
    selector = _node_selector(claim, node_name)
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation


def _config(claim: ClaimState) -> list[dict[str, Any]]:
    config: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    selected = [slot.options[slot.selected] for slot in claim.slots]
    for spec in selected:
        entries = by_class.get(spec.class_name)
        if entries is not None:
            for entry in entries:
                entry["requests"].append(spec.name)
            continue
        entries = []
        for c in (spec.device_class.get("spec") or {}).get("config") or []:
            entry = {"source": "FromClass", "requests": [spec.name],
                     **{k: v for k, v in c.items() if k != "requests"}}
            entries.append(entry)
        by_class[spec.class_name] = entries
        config.extend(entries)
    names = {s.request for s in selected} | {s.name for s in selected}
    for c in ((claim.obj.get("spec") or {}).get("devices") or {}).get("config") or []:
        wanted = c.get("requests") or []
        if wanted and not any(r in names for r in wanted):
            continue
        entry = {"source": "FromClaim", **{k: v for k, v in c.items() if k != "requests"}}
        if wanted:
            entry["requests"] = list(wanted)
        config.append(entry)
    # A config that covers every request of the claim (by its name or by its selected
    # subrequest's) drops its list: empty means all, as upstream writes it.
    for entry in config:
        wanted = entry.get("requests")
        if wanted and all(s.request in wanted or s.name in wanted for s in selected):
            del entry["requests"]
    # Keep the conventional key order: source, requests, then the configuration.
    return [{"source": e["source"], **({"requests": e["requests"]} if "requests" in e else {}),
             **{k: v for k, v in e.items() if k not in ("source", "requests")}}
            for e in config]


def _node_selector(claim: ClaimState, node_name: str) -> dict[str, Any] | None:
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for chosen in claim.chosen:
        device = chosen.device
        source = device.raw if device.slice.per_device else {
            "nodeName": device.slice.node_name, "nodeSelector": device.slice.node_selector,
            "allNodes": device.slice.all_nodes}
        if source.get("nodeName") or device.binds_to_node:
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
        selector = source.get("nodeSelector")
        if selector is None or source.get("allNodes"):
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise AllocError(f"create NodeSelector for claim {claim.name.split('/')[-1]}: "
                             f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        for term in terms:
            for target, reqs in ((fields, term.get("matchFields") or []),
                                 (expressions, term.get("matchExpressions") or [])):
                for req in reqs:
                    if not any(_same(req, have) for have in target):
                        target.append(req)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
            and sorted(a.get("values") or []) == sorted(b.get("values") or []))
