"""The scheduling decision for a pod's claims as a short table a person can read: node by
node, devices grouped by model, each ✅ or ❌ with the reason — the DRA introduction's
"❌ gpu-node-03: T4 16GB — too small / ✅ gpu-node-01 GPU 0/1: A100 80GB" as real output.

The decision is replayed: the pod's own claims are taken as not yet allocated, so the
table shows what the allocator weighed when it placed them, against everything else
that is allocated now.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

from draemu.cmd.explain.snapshot import Cluster
from draemu.scheduler.dra.allocator import Allocator

_MODEL_KEYS = ("model", "productName", "type")


def _unallocated(claim: dict[str, Any]) -> dict[str, Any]:
    claim = copy.deepcopy(claim)
    claim.pop("status", None)
    return claim


def _describe(attributes: dict[str, Any]) -> str:
    for key in _MODEL_KEYS:
        for name, value in attributes.items():
            if name.rsplit("/", 1)[-1] == key and isinstance(value, dict):
                return str(next(iter(value.values())))
    return ""


def _short_reason(reason: str, seen: str) -> str:
    if "selector" in reason and "is false" in reason:
        return f"selector false ({seen})" if seen else "selector false"
    return reason


def decision_table(c: Cluster) -> str:
    """The table for a loaded pod (`draemu.cmd.explain.snapshot.load`)."""
    attributes: dict[str, dict[str, Any]] = {}
    for obj in c.slices:
        spec = obj.get("spec") or {}
        for dev in spec.get("devices") or []:
            key = f"{spec.get('driver')}/{(spec.get('pool') or {}).get('name')}/{dev['name']}"
            attributes[key] = dev.get("attributes") or {}
    pod, claims, nodes, inv = c.pod, c.pod_claims.claims, c.nodes, c.inventory
    placed = (pod.get("spec") or {}).get("nodeName")
    allocator = Allocator(inv)
    pending = [_unallocated(c) for c in claims]
    lines = []
    for node in nodes:
        name = node["metadata"]["name"]
        outcome = allocator.allocate(node, pending)
        expl = outcome.explanation
        verdict = "✅" if expl.outcome == "Allocated" else "❌"
        where = "  ← scheduled here" if name == placed else ""
        lines.append(f"{verdict} {name}: {expl.outcome.lower()}{where}")
        for req in expl.requests:
            groups: OrderedDict[tuple[bool, str, str], list[str]] = OrderedDict()
            for d in req.devices:
                if "class" in d.reason and "selector" in d.reason and "is false" in d.reason:
                    continue  # another driver's device: not a candidate at all
                model = _describe(attributes.get(d.device, {}))
                reason = "matches" if d.ok else _short_reason(d.reason, d.seen)
                groups.setdefault((d.ok, model, reason), []).append(d.device.rsplit("/", 1)[-1])
            for (ok, model, reason), devices in groups.items():
                mark = "✅" if ok else "❌"
                label = f" ({model})" if model else ""
                lines.append(f"     {mark} {req.request}: {', '.join(devices)}{label} — {reason}")
    return "\n".join(lines)
