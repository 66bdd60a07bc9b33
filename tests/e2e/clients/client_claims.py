"""ResourceClaims as plain JSON, shared by the Python client tests: each client builds
its own typed objects from these where it has typed models."""

from __future__ import annotations

from typing import Any

DEVICE_CLASS = "gpu.example.com"
GROUP_VERSION = "resource.k8s.io/v1"


def claim(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A claim for one device of DEVICE_CLASS (the class need not exist to create it)."""
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]}},
    }


def allocation(node: str = "node-1") -> dict[str, Any]:
    """A status.allocation as the scheduler writes it: one device of one node's pool."""
    return {"devices": {"results": [
        {"request": "gpu", "driver": DEVICE_CLASS, "pool": node, "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


CONFLICT_MESSAGE = ("Operation cannot be fulfilled on resourceclaims.resource.k8s.io \"{name}\": "
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again")
