"""The kinds around DRA through the newest kubectl: `cluster-info`, `get` of every kind
the real components list, and a typical Deployment + Service + StatefulSet manifest
applied, printed and validated as on a real cluster."""

from __future__ import annotations

import json

import pytest

from draemu.cmd.testing.apiserver import Kubectl

pytestmark = pytest.mark.e2e
KINDS = ("svc,ep,pv,pvc,sc,csinodes,pdb,ds,sts,cronjobs,rc,quota,limits,hpa,endpointslices,"
         "priorityclasses,csidrivers,volumeattachments")
MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres:17}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: db}}}
"""


def test_cluster_info_names_the_control_plane(k: Kubectl) -> None:
    out = k("cluster-info")
    assert "Kubernetes control plane is running at https://" in out


def test_get_every_kind_the_components_list(k: Kubectl) -> None:
    out = k("get", KINDS, "-A")
    assert "service/kubernetes" in out and "ClusterIP" in out and "10.96.0.1" in out
    assert "priorityclass.scheduling.k8s.io/system-node-critical" in out


def test_manifest_applies_and_prints_as_upstream(k: Kubectl) -> None:
    k("apply", "-f", "-", input=MANIFEST)
    lines = k("get", "svc", "web", "db", "--no-headers").splitlines()
    web, db = (line.split() for line in lines)
    assert web[1] == "ClusterIP" and web[2].startswith("10.") and web[4] == "80/TCP"
    assert db[1:5] == ["ClusterIP", "None", "<none>", "5432/TCP"]
    sts = json.loads(k("get", "sts", "db", "-o", "json"))
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "partition": 0, "maxUnavailable": 1}}
    assert k("get", "pdb", "db", "--no-headers").split()[1:4] == ["N/A", "1", "0"]
    # A second apply changes nothing: the allocated clusterIP is kept.
    assert "unchanged" in k("apply", "-f", "-", input=MANIFEST)


def test_immutable_cluster_ip_and_selector_errors(k: Kubectl) -> None:
    k("apply", "-f", "-", input=MANIFEST)
    reply = k.run("patch", "svc", "web", "-p", '{"spec":{"clusterIP":"10.96.0.99",'
                  '"clusterIPs":["10.96.0.99"]}}', check=False)
    assert reply.returncode != 0
    assert "spec.clusterIPs[0]: Invalid value: " in reply.stderr
    assert "may not change once set" in reply.stderr
    bad = k.run("create", "-f", "-", check=False, input="""
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: bad}
spec:
  selector: {matchLabels: {app: one}}
  template:
    metadata: {labels: {app: two}}
    spec: {containers: [{name: c, image: busybox}]}
""")
    assert bad.returncode != 0
    assert "spec.template.metadata.labels: Invalid value: " in bad.stderr
    assert "`selector` does not match template `labels`" in bad.stderr


def test_explain_knows_the_new_kinds(k: Kubectl) -> None:
    assert "volumeClaimTemplates" in k("explain", "statefulset.spec")
    assert "concurrencyPolicy" in k("explain", "cronjob.spec")


def test_certificate_approve_and_deny(k: Kubectl) -> None:
    import base64

    pem = b"-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"
    for name in ("one", "two"):
        k("create", "-f", "-", input=json.dumps({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem).decode(),
                     "signerName": "example.com/signer", "usages": ["client auth"]}}))
    k("certificate", "approve", "one")
    k("certificate", "deny", "two")
    rows = dict(line.split()[0::5][:2] for line in
                k("get", "csr", "--no-headers").splitlines())
    assert rows == {"one": "Approved", "two": "Denied"}
    condition = json.loads(k("get", "csr", "one", "-o", "json"))["status"]["conditions"][0]
    assert condition["type"] == "Approved" and condition["lastUpdateTime"]


def test_get_flow_schemas_and_priority_levels_as_upstream(k: Kubectl) -> None:
    out = k("get", "flowschemas,prioritylevelconfigurations")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE",
                                "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]
    schemas = [line.split()[0] for line in lines[1:12]]
    assert schemas[:3] == ["flowschema.flowcontrol.apiserver.k8s.io/exempt",
                           "flowschema.flowcontrol.apiserver.k8s.io/probes",
                           "flowschema.flowcontrol.apiserver.k8s.io/system-leader-election"]
    assert schemas[-1] == "flowschema.flowcontrol.apiserver.k8s.io/catch-all"
    levels = {line.split()[0].rsplit("/", 1)[1]: line.split()[1:6]
              for line in lines if line.startswith("prioritylevelconfiguration")}
    assert levels["global-default"] == ["Limited", "20", "128", "6", "50"]
    assert levels["exempt"] == ["Exempt", "<none>", "<none>", "<none>", "<none>"]
    assert "spec.limited.limitResponse.queuing.handSize" in k.run(
        "create", "-f", "-", check=False, input=json.dumps({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": "bad"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {
                "type": "Queue", "queuing": {"queues": 2, "handSize": 3}}}}})).stderr
