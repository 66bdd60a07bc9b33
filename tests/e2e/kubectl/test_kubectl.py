"""The newest kubectl on the machine against one draemu apiserver: the commands people
use on namespaces, nodes, pods, configmaps and deployments."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from kubectl_helpers import write

from draemu.apiserver.endpoints.subresources import LogOptions
from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import Kubectl

pytestmark = pytest.mark.e2e

CM = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  labels: {{app: {app}}}
data:
  key: "{value}"
"""

POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: demo}}
spec:
  containers:
  - name: main
    image: busybox
"""

DEPLOYMENT = """apiVersion: apps/v1
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
        image: nginx
"""


def test_api_resources_lists_core_and_group_kinds(k: Kubectl) -> None:
    out = k("api-resources")
    for line in ("pods ", "configmaps ", "namespaces ", "deployments "):
        assert line in out


def test_get_namespaces_prints_status_column(k: Kubectl) -> None:
    out = k("get", "namespaces")
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    assert any(line.split()[:2] == ["kube-system", "Active"] for line in out.splitlines())


def test_create_get_yaml_json_and_selectors(k: Kubectl, tmp_path: Path) -> None:
    k("create", "-f", write(tmp_path, "a.yaml", CM.format(name="sel-a", app="a", value="1")))
    k("create", "-f", write(tmp_path, "b.yaml", CM.format(name="sel-b", app="b", value="2")))
    as_yaml = yaml.safe_load(k("get", "configmap", "sel-a", "-o", "yaml"))
    assert as_yaml["data"] == {"key": "1"}
    as_json = json.loads(k("get", "configmap", "sel-b", "-o", "json"))
    assert as_json["metadata"]["labels"] == {"app": "b"}
    assert k("get", "cm", "-l", "app=a", "-o", "name").split() == ["configmap/sel-a"]
    assert k("get", "cm", "--field-selector", "metadata.name=sel-b", "-o",
             "name").split() == ["configmap/sel-b"]
    everywhere = k("get", "cm", "-A", "-l", "app in (a,b)")
    assert everywhere.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert len(everywhere.splitlines()) == 3


def test_get_missing_object_prints_upstream_error(k: Kubectl) -> None:
    result = k.run("get", "configmap", "nope", check=False)
    assert result.returncode == 1
    assert 'Error from server (NotFound): configmaps "nope" not found' in result.stderr


def test_create_twice_is_already_exists(k: Kubectl, tmp_path: Path) -> None:
    path = write(tmp_path, "dup.yaml", CM.format(name="dup", app="d", value="1"))
    k("create", "-f", path)
    result = k.run("create", "-f", path, check=False)
    assert 'Error from server (AlreadyExists): error when creating' in result.stderr


def test_strict_validation_rejects_unknown_fields(k: Kubectl, tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", CM.format(name="bad", app="x", value="1")
                 + "bogus: true\n")
    result = k.run("create", "-f", path, check=False)
    assert result.returncode != 0
    assert 'unknown field "bogus"' in result.stderr


def test_client_side_apply_then_change_then_unchanged(k: Kubectl, tmp_path: Path) -> None:
    path = write(tmp_path, "ap.yaml", CM.format(name="ap", app="x", value="1"))
    assert "configmap/ap created" in k("apply", "-f", path)
    write(tmp_path, "ap.yaml", CM.format(name="ap", app="x", value="2"))
    assert "configmap/ap configured" in k("apply", "-f", path)
    assert "configmap/ap unchanged" in k("apply", "-f", path)
    assert k("get", "cm", "ap", "-o", "jsonpath={.data.key}") == "2"


def test_server_side_apply_conflict_and_force(k: Kubectl, tmp_path: Path) -> None:
    path = write(tmp_path, "ssa.yaml", CM.format(name="ssa", app="x", value="1"))
    assert "serverside-applied" in k("apply", "--server-side", "-f", path)
    write(tmp_path, "ssa.yaml", CM.format(name="ssa", app="x", value="2"))
    clash = k.run("apply", "--server-side", "--field-manager=other", "-f", path, check=False)
    assert clash.returncode != 0
    assert "conflict" in clash.stderr
    k("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", path)
    assert k("get", "cm", "ssa", "-o", "jsonpath={.data.key}") == "2"


@pytest.mark.parametrize(("kind", "patch", "expected"), [
    ("merge", '{"data":{"key":"merged"}}', "merged"),
    ("json", '[{"op":"replace","path":"/data/key","value":"jsonpatched"}]', "jsonpatched"),
    ("strategic", '{"data":{"key":"strategic"}}', "strategic"),
])
def test_patch_types(k: Kubectl, tmp_path: Path, kind: str, patch: str, expected: str) -> None:
    name = f"patch-{kind}"
    k("create", "-f", write(tmp_path, "p.yaml", CM.format(name=name, app="p", value="0")))
    k("patch", "configmap", name, "--type", kind, "-p", patch)
    assert k("get", "cm", name, "-o", "jsonpath={.data.key}") == expected


def test_replace_with_stale_resource_version_is_a_conflict(k: Kubectl, tmp_path: Path) -> None:
    k("create", "-f", write(tmp_path, "r.yaml", CM.format(name="rep", app="r", value="0")))
    current = yaml.safe_load(k("get", "cm", "rep", "-o", "yaml"))
    current["data"]["key"] = "replaced"
    path = write(tmp_path, "r2.yaml", yaml.safe_dump(current))
    k("replace", "-f", path)
    assert k("get", "cm", "rep", "-o", "jsonpath={.data.key}") == "replaced"
    result = k.run("replace", "-f", path, check=False)
    assert "the object has been modified" in result.stderr


def test_delete_waits_and_wait_for_delete(k: Kubectl, tmp_path: Path) -> None:
    k("create", "-f", write(tmp_path, "d.yaml", CM.format(name="gone", app="g", value="0")))
    assert 'configmap "gone" deleted' in k("delete", "configmap", "gone", "--wait=true")
    k("wait", "--for=delete", "configmap/gone", "--timeout=10s")


def test_wait_for_condition_and_jsonpath_on_a_pod(k: Kubectl, tmp_path: Path) -> None:
    k("create", "-f", write(tmp_path, "pod.yaml", POD.format(name="waiter")))
    status = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    k("patch", "pod", "waiter", "--subresource=status", "--type=merge", "-p",
      json.dumps(status))
    assert "condition met" in k("wait", "--for=condition=Ready", "pod/waiter",
                                "--timeout=10s")
    assert "condition met" in k("wait", "--for=jsonpath={.status.phase}=Running",
                                "pod/waiter", "--timeout=10s")


def test_get_pods_prints_pod_columns_and_wide(k: Kubectl, tmp_path: Path) -> None:
    k("create", "-f", write(tmp_path, "pod.yaml", POD.format(name="cols")))
    header = k("get", "pods", "cols").splitlines()[0].split()
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    wide = k("get", "pods", "cols", "-o", "wide").splitlines()[0]
    assert "NODE" in wide and "NOMINATED NODE" in wide


def test_get_watch_prints_new_objects(k: Kubectl, tmp_path: Path) -> None:
    command = [k.binary, f"--cache-dir={k.cache_dir}", "get", "cm", "-l", "app=watched",
               "-w", "--output-watch-events"]
    env = {**os.environ, "KUBECONFIG": str(k.kubeconfig), "KUBERC": "off"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    # A watch that never prints would block readline: end it after a generous bound.
    deadline = threading.Timer(30, proc.kill)
    deadline.start()
    try:
        assert proc.stdout is not None
        k("create", "-f", write(tmp_path, "w.yaml", CM.format(name="watched", app="watched",
                                                             value="0")))
        lines = []
        while not any("watched" in line for line in lines):
            line = proc.stdout.readline()
            assert line, f"kubectl get -w ended early: {lines}"
            lines.append(line)
        assert any(line.split()[:2] == ["ADDED", "watched"] for line in lines)
    finally:
        deadline.cancel()
        proc.kill()
        proc.wait(timeout=10)


def test_describe_pod_and_events(k: Kubectl, tmp_path: Path) -> None:
    k("create", "-f", write(tmp_path, "pod.yaml", POD.format(name="described")))
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "described.1", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "name": "described", "namespace": "default",
                                "apiVersion": "v1"},
             "reason": "Testing", "message": "hello from the test", "type": "Normal",
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
             "count": 1, "source": {"component": "test"}}
    k("create", "-f", write(tmp_path, "ev.json", json.dumps(event)))
    described = k("describe", "pod", "described")
    assert "Name:" in described and "described" in described
    assert "Image:" in described and "busybox" in described
    assert "hello from the test" in k("events", "--for", "pod/described")
    assert "Testing" in k("get", "events")


def test_explain_walks_the_schema(k: Kubectl) -> None:
    out = k("explain", "pods.spec.containers")
    assert "KIND:" in out and "Pod" in out
    assert "image" in out


def test_deployment_apply_scale_and_get(k: Kubectl, tmp_path: Path) -> None:
    k("apply", "-f", write(tmp_path, "dep.yaml", DEPLOYMENT))
    k("scale", "deployment", "web", "--replicas=4")
    assert k("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "4"
    header = k("get", "deployments").splitlines()[0].split()
    assert header[:2] == ["NAME", "READY"]


def test_nodes_are_cluster_scoped(k: Kubectl, tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1",
                                                             "labels": {"zone": "a"}}}
    k("create", "-f", write(tmp_path, "node.json", json.dumps(node)))
    out = k("get", "nodes", "-l", "zone=a")
    assert out.splitlines()[0].split()[:2] == ["NAME", "STATUS"]
    assert "worker-1" in out


def test_job_apply_get_and_describe(k: Kubectl, tmp_path: Path) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": "busybox"}]}}}}
    assert "job.batch/once created" in k("apply", "-f", write(tmp_path, "job.json",
                                                              json.dumps(job)))
    assert k("get", "jobs").splitlines()[0].split()[:3] == ["NAME", "STATUS", "COMPLETIONS"]
    assert "Backoff Limit:" in k("describe", "job", "once")
    assert "job.batch/once" in k("get", "all")


def test_label_annotate_and_cordon(k: Kubectl, tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-2"}}
    k("create", "-f", write(tmp_path, "node.json", json.dumps(node)))
    k("label", "node", "worker-2", "pool=gpu")
    k("annotate", "node", "worker-2", "example.com/note=hi")
    assert "node/worker-2 cordoned" in k("cordon", "worker-2")
    got = json.loads(k("get", "node", "worker-2", "-o", "json"))
    assert got["metadata"]["labels"]["pool"] == "gpu"
    assert got["metadata"]["annotations"]["example.com/note"] == "hi"
    assert got["spec"]["unschedulable"] is True


def test_diff_uses_server_dry_run_and_changes_nothing(k: Kubectl, tmp_path: Path) -> None:
    path = write(tmp_path, "df.yaml", CM.format(name="diffed", app="d", value="1"))
    k("apply", "-f", path)
    write(tmp_path, "df.yaml", CM.format(name="diffed", app="d", value="2"))
    result = k.run("diff", "-f", path, check=False)
    assert result.returncode == 1  # differences found
    assert '+  key: "2"' in result.stdout
    assert k("get", "cm", "diffed", "-o", "jsonpath={.data.key}") == "1"


def test_logs_come_from_the_nodes_log_provider(k: Kubectl, module_apiserver: APIServer,
                                               tmp_path: Path) -> None:
    class Provider:
        async def pod_log(self, namespace: str, pod: str, uid: str, options: LogOptions
                          ) -> AsyncIterator[bytes]:
            yield f"hello from {pod}/{options.container}\n".encode()

    module_apiserver.register_log_provider("log-node", Provider())
    pod = yaml.safe_load(POD.format(name="talker"))
    pod["spec"]["nodeName"] = "log-node"
    k("create", "-f", write(tmp_path, "pod.json", json.dumps(pod)))
    assert k("logs", "talker") == "hello from talker/main\n"
