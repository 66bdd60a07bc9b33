"""The example preset through real kubectl: a claim template and a pod → the claim is
allocated and prepared, the pod runs, `kubectl logs` shows the injected environment;
deleting the pod unprepares and frees the claim."""

from __future__ import annotations

import asyncio
import json

import pytest

from draemu.cmd.cluster import Cluster, ClusterOptions

pytestmark = pytest.mark.e2e

MANIFEST = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: single-gpu
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: v1
kind: Pod
metadata:
  name: pod0
  namespace: default
spec:
  containers:
  - name: ctr0
    image: ubuntu:22.04
    command: ["bash", "-c"]
    args: ["export; trap 'exit 0' TERM; sleep 9999 & wait"]
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
"""


@pytest.fixture
async def cluster(tmp_path):
    c = Cluster(ClusterOptions(data_dir=tmp_path / "draemu", port=0,
                               store_url="sqlite://:memory:", preset="example", nodes=1))
    await c.start()
    yield c
    await c.stop()


async def kubectl_async(kubectl, *args, input=None):
    return await asyncio.to_thread(kubectl, *args, input=input)


async def test_claim_template_pod_runs_and_logs_show_the_gpu(cluster, kubectl_factory):
    kubectl = kubectl_factory(cluster.kubeconfig_path)
    await kubectl_async(kubectl, "apply", "-f", "-", input=MANIFEST)
    await kubectl_async(kubectl, "wait", "--for=condition=Ready", "pod/pod0", "--timeout=60s")
    logs = await kubectl_async(kubectl, "logs", "pod0")
    assert "declare -x GPU_DEVICE_" in logs
    assert 'declare -x KUBERNETES_NODE_NAME="node-1"' in logs
    claims = json.loads(await kubectl_async(kubectl, "get", "resourceclaims", "-o", "json"))
    (claim,) = claims["items"]
    assert claim["status"]["reservedFor"][0]["name"] == "pod0"
    node = cluster.nodes.nodes["node-1"]
    assert node.kubelet.cache.claims[f"default/{claim['metadata']['name']}"].prepared

    await kubectl_async(kubectl, "delete", "pod", "pod0", "--wait=true", "--timeout=60s")
    assert node.kubelet.cache.claims == {}
    assert not list(node.cdi_dir.glob(f"*_{claim['metadata']['uid']}.yaml"))
