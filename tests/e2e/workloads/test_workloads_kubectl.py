"""Workloads end to end on `draemu up --runtime process`: containers really run (as local
processes), so Jobs finish and Deployments roll out as on a real cluster."""

import json
import time

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up

pytestmark = pytest.mark.e2e

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: busybox:1.36
        command: ["sh", "-c", "echo serving; exec sleep 3600"]
"""

JOB_WITH_CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  completions: 2
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: trainer
        image: busybox:1.36
        command: ["sh", "-c", "echo trained on $GPU_DEVICE_0; env | grep -c GPU_DEVICE_"]
        resources:
          claims:
          - name: gpu
      resourceClaims:
      - name: gpu
        resourceClaimTemplateName: one-gpu
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> RunningDraemu:
    with draemu_up(tmp_path_factory.mktemp("workloads"), "--preset", "example", "--nodes", "1",
                   "--runtime", "process") as running:
        yield running


def get(c: RunningDraemu, *args: str):
    return json.loads(c.kubectl("get", *args, "-o", "json").stdout)


def test_deployment_rolls_out_and_rolls_a_new_template_out(cluster):
    cluster.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    out = cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s").stdout
    assert 'deployment "web" successfully rolled out' in out
    cluster.kubectl("set", "image", "deployment/web", "web=busybox:1.37")
    out = cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s").stdout
    assert 'deployment "web" successfully rolled out' in out
    sets = {rs["metadata"]["name"]: rs["spec"]["replicas"]
            for rs in get(cluster, "replicasets", "-l", "app=web")["items"]}
    assert sorted(sets.values()) == [0, 2]
    pods = get(cluster, "pods", "-l", "app=web")["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert {p["spec"]["containers"][0]["image"] for p in live} == {"busybox:1.37"}
    assert "serving" in cluster.kubectl("logs", f"pod/{live[0]['metadata']['name']}").stdout
    cluster.kubectl("delete", "deployment", "web", "--wait=true")
    deadline = time.monotonic() + 30
    while get(cluster, "pods", "-l", "app=web")["items"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert get(cluster, "replicasets", "-l", "app=web")["items"] == []


def test_job_with_a_claim_template_runs_to_completion_and_frees_its_claims(cluster):
    cluster.kubectl("apply", "-f", "-", input=JOB_WITH_CLAIM)
    cluster.kubectl("wait", "--for=condition=Complete", "job/train", "--timeout=90s")
    job = get(cluster, "job", "train")
    assert job["status"]["succeeded"] == 2
    logs = cluster.kubectl("logs", "job/train").stdout
    assert "trained on gpu-" in logs
    # Finished pods release their generated claims, which are then deleted.
    deadline = time.monotonic() + 30
    claims = get(cluster, "resourceclaims")["items"]
    while claims and time.monotonic() < deadline:
        time.sleep(0.2)
        claims = get(cluster, "resourceclaims")["items"]
    assert claims == []
    cluster.kubectl("delete", "-f", "-", "--wait=true", input=JOB_WITH_CLAIM)


def test_fake_runtime_containers_can_end_by_annotation(tmp_path):
    job = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: quick
spec:
  template:
    metadata:
      annotations:
        draemu.io/fake-exit-after: "1s"
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
"""
    with draemu_up(tmp_path, "--preset", "example", "--nodes", "1") as fake:
        fake.kubectl("apply", "-f", "-", input=job)
        fake.kubectl("wait", "--for=condition=Complete", "job/quick", "--timeout=60s")
        assert get(fake, "job", "quick")["status"]["succeeded"] == 1
