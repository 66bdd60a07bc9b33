"""Builders for the plain JSON objects the scheduler works on."""

from __future__ import annotations

import itertools
from typing import Any

_uids = itertools.count(1)


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
         labels: dict[str, str] | None = None, taints: list[dict] | None = None,
         unschedulable: bool = False, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods,
                                   **(extra or {})}},
    }


def pod(name: str, *, namespace: str = "default", cpu: str | None = None,
        memory: str | None = None, claims: list[dict] | None = None,
        spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
        extra: dict[str, str] | None = None) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    requests.update(extra or {})
    container: dict[str, Any] = {"name": "c", "image": "pause"}
    if requests:
        container["resources"] = {"requests": requests}
    body: dict[str, Any] = {"containers": [container]}
    if claims:
        body["resourceClaims"] = claims
    body.update(spec or {})
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{next(_uids)}"},
        "spec": body, "status": status or {"phase": "Pending"},
    }
