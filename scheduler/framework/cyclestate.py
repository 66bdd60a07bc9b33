"""Per-pod, per-attempt data the plugins keep between extension points, and the part of a
pod's spec that Filter and Score read (what kept answers are shared by)."""

from __future__ import annotations

import json
from typing import Any

# Volume sources that no scheduling plugin reads, upstream's included (its volume plugins
# look at claims, persistent and in-tree disks): pods that differ only in these are one
# spec. Every pod has one of them: the service account token's `kube-api-access-<5>`
# volume, named at random by admission.
_LOCAL_VOLUMES = frozenset({"projected", "configMap", "secret", "emptyDir", "downwardAPI"})
# What Filter and Score plugins read of a container: its name (DRA-backed extended
# resources name it), requests and limits, host ports, and a sidecar's restartPolicy.
_CONTAINER_FIELDS = ("name", "resources", "ports", "restartPolicy")


def scheduling_view(spec: dict) -> dict:
    """The pod's spec without what no Filter or Score plugin reads: the claim names
    (`resourceClaims`: only DynamicResources reads them, and its token stands for the
    claims' specs), volumes of the sources above, and each container's image, command,
    environment, mounts, probes and the rest. A plugin that comes to read more of the
    spec must keep it here: kept verdicts and scores are shared by pods of one view."""
    view = {k: v for k, v in spec.items()
            if k not in ("resourceClaims", "volumes", "containers", "initContainers",
                         "ephemeralContainers")}
    volumes = [v for v in spec.get("volumes") or ()
               if not isinstance(v, dict) or not _LOCAL_VOLUMES.intersection(v)]
    if volumes:
        view["volumes"] = volumes
    for key in ("containers", "initContainers", "ephemeralContainers"):
        containers = spec.get(key)
        if containers:
            view[key] = [{f: c[f] for f in _CONTAINER_FIELDS if f in c}
                         if isinstance(c, dict) else c for c in containers]
    return view


class CycleState(dict):
    """Per-pod, per-attempt data; each plugin reads and writes its own key. A dict (its
    `read` and `write` are the dict's own get and set: Filter reads it for every node)."""

    def __init__(self) -> None:
        super().__init__()
        self.skip_filter: set[str] = set()  # plugins that have nothing to check (PreFilter)
        # The FilterPlugins to run (Framework.run_pre_filter; the framework's own use).
        self.filters: list[Any] = []
        self.restricted_by: set[str] = set()  # PreFilter plugins that narrowed the nodes
        # Some nodes passed Filter on an answer kept from an earlier cycle, without this
        # cycle's Filter state for them: the chosen node is filtered again before Reserve.
        self.reused_verdicts = False
        self._spec_key: str | None = None

    def spec_key(self, pod: dict) -> str:
        """What the plugins that look at the pod's spec and one node read of the spec,
        canonical: pods with the same key get the same answers from them (`scheduling_view`).
        """
        if self._spec_key is None:
            self._spec_key = json.dumps(scheduling_view(pod.get("spec") or {}),
                                        sort_keys=True, separators=(",", ":"), default=str)
        return self._spec_key

    write = dict.__setitem__
    read = dict.get
