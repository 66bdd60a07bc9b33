"""The same DRA scenario with every kubectl on the machine against one cluster with the
example preset: get, create, apply (client-side and server-side), patch, wait, events,
logs, delete --wait, explain and auth can-i."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from matrix_support import VERSIONS, eventually, write

from draemu.cmd.testing.apiserver import Kubectl

At = Callable[[str], Kubectl]
Namespaced = Callable[[str], str]

TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-template
  labels: {labels}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: gpu-pod
spec:
  containers:
  - name: ctr
    image: registry.example.com/cuda-sample:latest
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
"""
CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
  labels:
    owner: {owner}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""
LABEL_ONLY = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {name}
  labels:
    owner: {owner}
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  level: "{level}"
"""

pytestmark = [pytest.mark.e2e, pytest.mark.parametrize("version", VERSIONS)]


def test_get_shows_the_example_cluster(version: str, kubectl_at: At) -> None:
    k = kubectl_at(version)
    nodes = k("get", "nodes")
    assert re.search(r"^node-1\s+Ready\s", nodes, re.M), nodes
    assert re.search(r"^node-2\s+Ready\s", nodes, re.M), nodes
    # Printer columns: NAME NODE DRIVER POOL AGE.
    slices = k("get", "resourceslices")
    assert re.search(r"\snode-1\s+gpu\.example\.com\s+node-1\s", slices), slices
    assert k("get", "deviceclasses", "-o", "name").split() == [
        "deviceclass.resource.k8s.io/gpu.example.com"]


def test_create_namespace_and_configmap(version: str, kubectl_at: At,
                                        namespace_of: Namespaced) -> None:
    # From 1.32 on both requests carry protobuf bodies.
    k, ns = kubectl_at(version), namespace_of(version)
    assert k("get", "namespace", ns, "-o", "jsonpath={.status.phase}") == "Active"
    k("create", "configmap", "generated", "-n", ns, "--from-literal=a=b")
    assert k("get", "configmap", "generated", "-n", ns, "-o", "jsonpath={.data.a}") == "b"


def test_client_side_apply_creates_then_configures(version: str, kubectl_at: At,
                                                   namespace_of: Namespaced,
                                                   tmp_path: Path) -> None:
    k, ns = kubectl_at(version), namespace_of(version)
    path = write(tmp_path, "template.yaml", TEMPLATE.format(labels="{stage: one}"))
    assert k("apply", "-n", ns, "-f", path).strip() == \
        "resourceclaimtemplate.resource.k8s.io/gpu-template created"
    write(tmp_path, "template.yaml", TEMPLATE.format(labels="{stage: two}"))
    assert k("apply", "-n", ns, "-f", path).strip() == \
        "resourceclaimtemplate.resource.k8s.io/gpu-template configured"
    assert k("get", "resourceclaimtemplate", "gpu-template", "-n", ns,
             "-o", "jsonpath={.metadata.labels.stage}") == "two"


def test_server_side_apply_conflicts_until_forced(version: str, kubectl_at: At,
                                                  namespace_of: Namespaced,
                                                  tmp_path: Path) -> None:
    k, ns = kubectl_at(version), namespace_of(version)
    mine = write(tmp_path, "mine.yaml", CLAIM.format(name="ssa-claim", owner="me"))
    assert k("apply", "--server-side", "-n", ns, "-f", mine).strip() == \
        "resourceclaim.resource.k8s.io/ssa-claim serverside-applied"
    # Another manager that only cares about the label (`requests` is an atomic list: an
    # identical copy of it would conflict too, through the defaults the server added).
    theirs = write(tmp_path, "theirs.yaml", LABEL_ONLY.format(name="ssa-claim", owner="them"))
    refused = k.run("apply", "--server-side", "--field-manager=them", "-n", ns, "-f", theirs,
                    check=False)
    assert refused.returncode != 0
    assert 'conflict with "kubectl": .metadata.labels.owner' in refused.stderr
    k("apply", "--server-side", "--field-manager=them", "--force-conflicts", "-n", ns,
      "-f", theirs)
    claim = json.loads(k("get", "resourceclaim", "ssa-claim", "-n", ns, "-o", "json",
                         "--show-managed-fields"))
    assert claim["metadata"]["labels"] == {"owner": "them"}
    managers = {m["manager"]: m["operation"] for m in claim["metadata"]["managedFields"]}
    assert managers == {"kubectl": "Apply", "them": "Apply"}


def test_server_side_apply_takes_over_from_client_side_apply(
        version: str, kubectl_at: At, namespace_of: Namespaced, tmp_path: Path) -> None:
    # kubectl moves the client-side apply manager's fields to "kubectl" (a JSON patch of
    # managedFields) and applies again: the data it still applies must stay.
    k, ns = kubectl_at(version), namespace_of(version)
    path = write(tmp_path, "cm.yaml", CONFIGMAP.format(level=1))
    k("apply", "-n", ns, "-f", path)
    write(tmp_path, "cm.yaml", CONFIGMAP.format(level=2))
    applied = k.run("apply", "--server-side", "-n", ns, "-f", path)
    assert "failed to re-apply" not in applied.stderr
    assert k("get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data}") == \
        '{"level":"2"}'


def test_server_side_apply_takes_over_a_pod_from_client_side_apply(
        version: str, kubectl_at: At, namespace_of: Namespaced, tmp_path: Path) -> None:
    # What admission and the first status add to a new pod (service account, priority,
    # tolerations, phase) is nobody's: re-applying after the takeover must not drop it.
    k, ns = kubectl_at(version), namespace_of(version)
    pod = write(tmp_path, "pod.yaml", POD.replace("gpu-pod", "ssa-pod").replace(
        "resourceClaimTemplateName: gpu-template", "resourceClaimName: no-such-claim"))
    k("apply", "-n", ns, "-f", pod)
    applied = k.run("apply", "--server-side", "-n", ns, "-f", pod)
    assert "failed to re-apply" not in applied.stderr
    spec = json.loads(k("get", "pod", "ssa-pod", "-n", ns, "-o", "jsonpath={.spec}"))
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimName": "no-such-claim"}]
    assert spec["serviceAccountName"] == "default"
    k("delete", "pod", "ssa-pod", "-n", ns, "--wait=false")


def test_patch_merge_json_and_strategic(version: str, kubectl_at: At,
                                        namespace_of: Namespaced, tmp_path: Path) -> None:
    k, ns = kubectl_at(version), namespace_of(version)
    k("create", "-n", ns, "-f", write(tmp_path, "c.yaml",
                                      CLAIM.format(name="patched", owner="me")))
    target = ("resourceclaim", "patched", "-n", ns)
    k("patch", *target, "--type=merge", "-p", '{"metadata":{"labels":{"merge":"yes"}}}')
    k("patch", *target, "--type=json", "-p",
      '[{"op":"remove","path":"/metadata/labels/owner"}]')
    k("patch", *target, "-p", '{"metadata":{"labels":{"strategic":"yes"}}}')
    labels = json.loads(k("get", *target, "-o", "jsonpath={.metadata.labels}"))
    assert labels == {"merge": "yes", "strategic": "yes"}


def test_pod_with_a_claim_waits_logs_and_deletes(version: str, kubectl_at: At,
                                                 namespace_of: Namespaced,
                                                 tmp_path: Path) -> None:
    k, ns = kubectl_at(version), namespace_of(version)
    k("apply", "-n", ns, "-f", write(tmp_path, "t.yaml", TEMPLATE.format(labels="{}")),
      "-f", write(tmp_path, "pod.yaml", POD))
    k("wait", "-n", ns, "--for=condition=Ready", "pod/gpu-pod", "--timeout=60s")
    claim = k("get", "pod", "gpu-pod", "-n", ns,
              "-o", "jsonpath={.status.resourceClaimStatuses[0].resourceClaimName}")
    assert claim.startswith("gpu-pod-gpu-")
    k("wait", "-n", ns, "--for=jsonpath={.status.reservedFor[0].name}=gpu-pod",
      f"resourceclaim/{claim}", "--timeout=30s")
    state = k("get", "resourceclaim", claim, "-n", ns, "--no-headers")
    assert "allocated,reserved" in state
    # Components record events on their own time: poll (kubectl cannot wait for one).
    assert eventually(lambda: re.search(r"Normal\s+Scheduled\s+Pod/gpu-pod\s", k(
        "events", "-n", ns, "--for", "pod/gpu-pod"))), "no Scheduled event"
    # The fake runtime logs the environment the driver's CDI spec gave the container.
    logs = k("logs", "-n", ns, "gpu-pod")
    assert 'DRA_RESOURCE_DRIVER_NAME="gpu.example.com"' in logs
    assert re.search(r'GPU_DEVICE_0="gpu-\d+"', logs), logs
    assert "deleted" in k("delete", "pod", "gpu-pod", "-n", ns, "--wait=true")
    # The claim made from the template goes with its pod.
    k("wait", "-n", ns, "--for=delete", f"resourceclaim/{claim}", "--timeout=60s")


def test_explain_resource_claim_fields(version: str, kubectl_at: At) -> None:
    out = kubectl_at(version)("explain", "resourceclaims.spec.devices.requests")
    assert re.search(r"^KIND:\s+ResourceClaim$", out, re.M), out
    assert re.search(r"^\s+exactly\s+<ExactDeviceRequest>", out, re.M), out


def test_auth_can_i(version: str, kubectl_at: At, namespace_of: Namespaced) -> None:
    # From 1.32 on the SelfSubjectAccessReview is a protobuf body.
    k = kubectl_at(version)
    assert k("auth", "can-i", "create", "resourceclaims", "-n", namespace_of(version)
             ).strip() == "yes"
    assert k("auth", "can-i", "delete", "resourceslices.resource.k8s.io").strip() == "yes"
