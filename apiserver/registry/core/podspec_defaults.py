"""Defaults of a pod spec, as the v1 defaulting functions apply them when a Pod or a
pod template (Deployment, ReplicaSet, Job) is decoded. Clients rely on them: kubectl
diffs, `describe` and the kubelet read the defaulted values back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import check_quantities

DEFAULT_MODE = 0o644  # 420: secret, configMap, projected and downwardAPI volumes
_VOLUME_SOURCES_WITH_MODE = ("secret", "configMap", "projected", "downwardAPI")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def image_tag(image: str) -> str:
    """The tag of an image reference: "" when pinned by digest only, `latest` when
    neither tag nor digest is given (as the image-name parser reports it)."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def default_container(ctr: Obj, *, is_pod: bool, host_network: bool) -> None:
    if not ctr.get("imagePullPolicy"):
        tag = image_tag(ctr.get("image") or "")
        ctr["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    ctr.setdefault("resources", {})  # a struct: a Go server always writes it
    ctr.setdefault("terminationMessagePath", "/dev/termination-log")
    ctr.setdefault("terminationMessagePolicy", "File")
    for port in ctr.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if is_pod and host_network and not port.get("hostPort") and port.get("containerPort"):
            port["hostPort"] = port["containerPort"]
    for env in ctr.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if field_ref is not None:
            field_ref.setdefault("apiVersion", "v1")
    for name in _PROBES:
        if ctr.get(name):
            _default_probe(ctr[name])
    resources = ctr.get("resources")
    if is_pod and resources and resources.get("limits"):
        # A pod's (not a template's) requests default to its limits, resource by resource.
        requests = resources.setdefault("requests", {})
        for res, qty in resources["limits"].items():
            requests.setdefault(res, qty)


def _default_probe(probe: Obj) -> None:
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http_get = probe.get("httpGet")
    if http_get is not None:
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def default_volume(volume: Obj) -> None:
    if not any(k for k in volume if k != "name"):
        volume["emptyDir"] = {}
    for source in _VOLUME_SOURCES_WITH_MODE:
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", DEFAULT_MODE)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")


def default_pod_spec(spec: Obj, *, is_pod: bool) -> None:
    """SetDefaults_PodSpec and friends; `is_pod` adds what only pods get (not templates)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    # The deprecated field mirrors serviceAccountName, both ways, as conversion does.
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if is_pod:
        spec.setdefault("enableServiceLinks", True)
    host_network = bool(spec.get("hostNetwork"))
    for key in ("initContainers", "containers"):
        for ctr in spec.get(key) or []:
            if isinstance(ctr, dict):
                default_container(ctr, is_pod=is_pod, host_network=host_network)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            default_volume(volume)


def quantities(spec: Obj) -> Iterator[Any]:
    """Every quantity of a pod spec: container and pod-level resources, overhead and
    emptyDir size limits."""
    resources = [(c.get("resources") or {}) for key in
                 ("containers", "initContainers", "ephemeralContainers")
                 for c in spec.get(key) or [] if isinstance(c, dict)]
    resources.append(spec.get("resources") or {})
    for entry in resources:
        for name in ("limits", "requests"):
            yield from (entry.get(name) or {}).values()
    yield from (spec.get("overhead") or {}).values()
    for volume in spec.get("volumes") or []:
        limit = ((volume or {}).get("emptyDir") or {}).get("sizeLimit")
        if limit is not None:
            yield limit


def default_pod_template(template: Obj | None, kind: str, version: str) -> None:
    """Defaults of `spec.template` of a `kind` object decoded from `version`."""
    if isinstance(template, dict):
        spec = template.setdefault("spec", {})
        if isinstance(spec, dict):
            check_quantities(quantities(spec), kind, version)
            default_pod_spec(spec, is_pod=False)
