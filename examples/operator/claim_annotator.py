"""A small kopf operator for ResourceClaims: it annotates every claim with the device
classes it asks for, and, once the scheduler has allocated it, with the devices it got.

    KUBECONFIG=~/.local/share/draemu/kubeconfig kopf run --standalone -A \
        examples/operator/claim_annotator.py

Tools that only read metadata (`kubectl get resourceclaims -L ...`, PartialObjectMetadata
informers) then see what a claim asked for and where it landed without decoding specs.
"""

from __future__ import annotations

from typing import Any

import kopf

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceclaims"
CLASSES = "dra.example.com/device-classes"
DEVICES = "dra.example.com/allocated-devices"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # A ResourceClaim's status is a built-in schema: the server drops kopf's own status
    # fields, so kopf keeps its progress in annotations instead.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix="dra.example.com")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="dra.example.com")
    # Ask the server to end watches now and then, so a lost connection is noticed.
    settings.watching.server_timeout = 60
    # Start each watch with the current objects streamed by the server (sendInitialEvents,
    # Kubernetes 1.34+) instead of a list followed by a watch.
    settings.watching.initial_streaming = True


def requested_classes(spec: kopf.Spec) -> list[str]:
    """Every device class named by a request, directly or through its alternatives."""
    classes: set[str] = set()
    for request in spec.get("devices", {}).get("requests", []):
        for alternative in [request.get("exactly"), *request.get("firstAvailable", [])]:
            if alternative and alternative.get("deviceClassName"):
                classes.add(alternative["deviceClassName"])
    return sorted(classes)


@kopf.on.create(GROUP, VERSION, PLURAL)
def annotate_classes(body: kopf.Body, spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
    # Nothing is returned: kopf would store a result in the claim's status, which the
    # server drops (see configure).
    classes = ",".join(requested_classes(spec))
    patch.metadata.annotations[CLASSES] = classes
    # An Event on the claim, for `kubectl describe` and `kubectl events`.
    kopf.info(body, reason="DeviceClasses", message=f"requests devices of {classes}")


@kopf.on.field(GROUP, VERSION, PLURAL, field="status.allocation")
def annotate_allocation(new: dict[str, Any] | None, patch: kopf.Patch, **_: Any) -> None:
    results = (new or {}).get("devices", {}).get("results", [])
    # `None` removes the annotation when the claim is deallocated.
    patch.metadata.annotations[DEVICES] = ",".join(
        f"{r['driver']}/{r['pool']}/{r['device']}" for r in results) or None
