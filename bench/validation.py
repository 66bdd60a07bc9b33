"""CPU per request body of the apiserver's schema checks (`fieldvalidation.check`).

    .venv/bin/python bench/validation.py [--iterations 1000]

The bodies are those of bench/scheduler.py's pod lifecycle: the pod as created, the
claim the resource-claim controller makes from the template, the scheduler's claim
update (finalizer) and status update (allocation, reservedFor), the claim controller's
pod status patch (as the patched pod), the scheduler's event. Each is checked as the
server checks it (with the stored revision for updates and patches) and, for
comparison, by the four walks the check made before it was one pass (type errors,
null struct fields, timestamps, unknown fields). CPU time (process_time), not wall time.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from typing import Any

from draemu.api.types import Obj
from draemu.apiserver.endpoints import fieldvalidation
from draemu.apiserver.registry import discover
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.wire import timestamps
from draemu.features import FeatureGates
from draemu.identity import UserInfo
from draemu.openapi import schemas

NS = "bench"
STAMP = "2026-11-29T10:58:42Z"
POD_UID = "5fd48751-9c30-4f17-88ce-388fc92cb3a9"
CLAIMS = ("resource.k8s.io", "v1", "resourceclaims")
PODS = ("", "v1", "pods")


def managed(manager: str, api_version: str, fields: Obj) -> Obj:
    return {"manager": manager, "operation": "Update", "apiVersion": api_version,
            "time": STAMP, "fieldsType": "FieldsV1", "fieldsV1": fields}


def pod() -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "pod-00000", "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}}


def stored_pod() -> Obj:
    obj = pod()
    obj["metadata"].update({
        "uid": POD_UID, "creationTimestamp": STAMP, "generation": 1, "resourceVersion": "28",
        "managedFields": [managed("draemu-bench", "v1", {"f:spec": {
            "f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}}},
            "f:resourceClaims": {".": {}, 'k:{"name":"gpu"}': {".": {}, "f:name": {}}}}})]})
    obj["spec"]["containers"][0].update({
        "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"})
    obj["spec"].update({
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "securityContext": {},
        "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler",
        "enableServiceLinks": True, "serviceAccountName": "default",
        "serviceAccount": "default", "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [{"key": f"node.kubernetes.io/{taint}", "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300}
                        for taint in ("not-ready", "unreachable")]})
    obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    return obj


def patched_pod() -> Obj:
    obj = stored_pod()
    obj["status"]["resourceClaimStatuses"] = [{"name": "gpu",
                                               "resourceClaimName": "pod-00000-gpu-mtktp"}]
    return obj


def claim() -> Obj:
    """As the resource-claim controller makes it from bench/scheduler.py's template."""
    expression = ('device.attributes["gpu.example.com"].model == "A100" || '
                  'device.attributes["gpu.example.com"].model == "H100"')
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"generateName": "pod-00000-gpu-", "namespace": NS,
                         "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                                              "name": "pod-00000", "uid": POD_UID,
                                              "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": expression}}],
                "allocationMode": "ExactCount", "count": 1}}]}}}


def stored_claim() -> Obj:
    obj = claim()
    obj["metadata"].update({
        "uid": "72429b04-478e-4f79-9a06-35ba159933de", "creationTimestamp": STAMP,
        "name": "pod-00000-gpu-mtktp", "resourceVersion": "48",
        "managedFields": [managed("draemu-bench-controllers", "resource.k8s.io/v1", {
            "f:metadata": {"f:annotations": {".": {}, "f:resource.kubernetes.io/pod-claim-name":
                                             {}},
                           "f:generateName": {},
                           "f:ownerReferences": {".": {}, f'k:{{"uid":"{POD_UID}"}}': {}}},
            "f:spec": {"f:devices": {"f:requests": {}}}})]})
    return obj


def claim_with_finalizer() -> Obj:
    obj = stored_claim()
    obj["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    return obj


def allocated_claim() -> Obj:
    obj = claim_with_finalizer()
    obj["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                     "pool": "node-00003", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
                "key": "metadata.name", "operator": "In", "values": ["node-00003"]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "pod-00000", "uid": POD_UID}]}
    return obj


def event() -> Obj:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "pod-00000.18ec7ef0625c5d06", "namespace": NS},
            "eventTime": "2026-11-29T10:58:42.321463Z", "reportingController":
                "default-scheduler", "reportingInstance": "default-scheduler-vm",
            "action": "Binding", "reason": "Scheduled",
            "note": "Successfully assigned bench/pod-00000 to node-00003", "type": "Normal",
            "regarding": {"kind": "Pod", "namespace": NS, "name": "pod-00000", "uid": POD_UID,
                          "apiVersion": "v1", "resourceVersion": "56"}}


# (label, group/version/resource, body, stored revision the server compares with)
CASES: list[tuple[str, tuple[str, str, str], Obj, Obj | None]] = [
    ("create pod", PODS, pod(), None),
    ("create claim", CLAIMS, claim(), None),
    ("update claim", CLAIMS, claim_with_finalizer(), stored_claim()),
    ("update claim status", CLAIMS, allocated_claim(), claim_with_finalizer()),
    ("patch pod status", PODS, patched_pod(), stored_pod()),
    ("create event", ("events.k8s.io", "v1", "events"), event(), None),
]


def four_walks(scope: RequestContext, obj: Obj) -> None:
    """What `fieldvalidation.check` did before it was one pass."""
    group, version, kind = scope.resource.group, scope.version, scope.resource.kind
    scope.strategy.obsolete_field_errors(obj, version)
    if schemas.has_kind(group, version, kind) and \
            not schemas.type_error(group, version, kind, obj):
        schemas.drop_nulls(group, version, kind, obj)
        timestamps.normalize(group, version, kind, obj)
        schemas.unknown_fields(group, version, kind, obj)


def cpu_per_body(fn: Callable[[Obj], Any], body: Obj, iterations: int) -> float:
    """Microseconds of CPU per call, on fresh copies (check changes its input)."""
    text = json.dumps(body)
    fn(json.loads(text))  # plans and caches are built once per process
    copies = [json.loads(text) for _ in range(iterations)]
    start = time.process_time()
    for obj in copies:
        fn(obj)
    return (time.process_time() - start) / iterations * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    gates = FeatureGates()
    table = ResourceTable(discover(), gates)
    total_before = total_after = 0.0
    for label, (group, version, resource), body, old in CASES:
        found = table.lookup(group, version, resource)
        assert found is not None, resource
        scope = RequestContext(found, version, NS, UserInfo("bench"), verb="update")
        stored = copy.deepcopy(old)
        before = cpu_per_body(lambda obj, s=scope: four_walks(s, obj), body, args.iterations)
        after = cpu_per_body(lambda obj, s=scope, o=stored: fieldvalidation.check(s, obj, "Strict",
                                                                                   o),
                             body, args.iterations)
        total_before += before
        total_after += after
        print(f"{label:22s} four walks {before:7.1f} us   check {after:6.1f} us   "
              f"{before / after:5.1f}x", flush=True)
    print(f"{'per pod (these 6)':22s} four walks {total_before:7.1f} us   check "
          f"{total_after:6.1f} us   {total_before / total_after:5.1f}x")


if __name__ == "__main__":
    main()
