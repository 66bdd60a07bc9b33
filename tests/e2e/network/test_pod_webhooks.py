"""Admission webhooks served by pods on the process runtime's pod network: agnhost's
`webhook` behind a Service, called by the apiserver (which runs outside the pod network
and dials it through its cluster namespace), admits and denies as written; the same
webhook by `url:` at its Service's ClusterIP (kube-proxy on the nodes answers it).

Needs root and tests/e2e/realk8s/build.sh's kube-proxy, coredns and agnhost."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator

import pytest

from draemu import pki
from draemu.cmd.addons import build_cache
from draemu.cmd.testing.process import RunningDraemu, draemu_up

BIN = build_cache()
PROGRAMS = ("kube-proxy", "coredns", "agnhost")
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.56"
CLUSTER_IP = "10.96.100.100"  # the webhook Service's, which its certificate names too

pytestmark = [
    pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(400),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(not all((BIN / p).exists() for p in PROGRAMS),
                       reason=f"needs {', '.join(PROGRAMS)} in {BIN} "
                              "(tests/e2e/realk8s/build.sh network agnhost)")]


def _apply(up: RunningDraemu, *objects: dict) -> None:
    up.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                     "items": list(objects)}))


def _server_objects(ca: pki.KeyPair) -> list[dict]:
    serving = pki.make_kubelet_serving_cert(ca, "webhook", ["webhook.default.svc",
                                                             CLUSTER_IP])
    labels = {"app": "webhook"}
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "webhook-tls"},
         "type": "kubernetes.io/tls",
         "data": {"tls.crt": base64.b64encode(serving.cert_pem).decode(),
                  "tls.key": base64.b64encode(serving.key_pem).decode()}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "webhook"},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {"containers": [{
                 "name": "webhook", "image": AGNHOST,
                 "args": ["webhook", "--tls-cert-file=/certs/tls.crt",
                          "--tls-private-key-file=/certs/tls.key", "--port=8443"],
                 "volumeMounts": [{"name": "certs", "mountPath": "/certs"}],
                 "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8443,
                                                "scheme": "HTTPS"}}}],
                 "volumes": [{"name": "certs", "secret": {"secretName": "webhook-tls"}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook"},
         "spec": {"selector": labels, "clusterIP": CLUSTER_IP,
                  "ports": [{"port": 443, "targetPort": 8443}]}},
    ]


def _configuration(name: str, client_config: dict, ca: pki.KeyPair) -> dict:
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name},
            "webhooks": [{
                "name": f"{name}.example.com",
                "clientConfig": {**client_config,
                                 "caBundle": base64.b64encode(ca.cert_pem).decode()},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                           "operations": ["CREATE"], "resources": ["configmaps"]}],
                "namespaceSelector": {"matchLabels": {"webhook-test": name}},
                "failurePolicy": "Fail", "sideEffects": "None",
                "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningDraemu,
                                                                         pki.KeyPair]]:
    folder = tmp_path_factory.mktemp("webhooks")
    ca = pki.make_ca("webhook-test-ca")
    with draemu_up(folder, "--runtime", "process", "--preset", "example", "--nodes", "2",
                   "--no-ui", "--image-map",
                   f"registry.k8s.io/e2e-test-images/agnhost={BIN / 'agnhost'}",
                   timeout=180) as up:
        up.kubectl("-n", "kube-system", "rollout", "status", "daemonset/kube-proxy",
                   "--timeout=120s", timeout=150)
        _apply(up, *_server_objects(ca))
        up.kubectl("rollout", "status", "deployment/webhook", "--timeout=120s", timeout=150)
        yield up, ca


def _configmap(name: str, namespace: str, data: dict[str, str]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": name, "namespace": namespace}, "data": data})


def _admits_and_denies(up: RunningDraemu, namespace: str, name: str) -> None:
    up.kubectl("create", "namespace", namespace)
    up.kubectl("label", "namespace", namespace, f"webhook-test={name}")
    # Until the configuration is in the apiserver's cache, a create is not checked; until
    # kube-proxy has written the Service's rules (its sync runs at most once a second), a
    # call at the ClusterIP is refused, as it would be on a new cluster.
    deadline = time.monotonic() + 30
    while True:
        denied = up.kubectl("create", "-f", "-", check=False, input=_configmap(
            f"probe-{int(time.monotonic() * 1000)}", namespace,
            {"webhook-e2e-test": "webhook-disallow"}))
        settled = denied.returncode != 0 and "connection refused" not in denied.stderr
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert denied.returncode != 0
    assert (f'admission webhook "{name}.example.com" denied the request: the configmap '
            "contains unwanted key and value") in denied.stderr
    up.kubectl("create", "-f", "-", input=_configmap("fine", namespace, {"a": "b"}))


def test_a_webhook_served_by_a_pod_behind_a_service_admits_and_denies(cluster) -> None:
    up, ca = cluster
    _apply(up, _configuration("by-service", {"service": {
        "name": "webhook", "namespace": "default", "path": "/configmaps", "port": 443}}, ca))
    _admits_and_denies(up, "checked-by-service", "by-service")


def test_a_webhook_by_url_at_a_cluster_ip_admits_and_denies(cluster) -> None:
    up, ca = cluster
    _apply(up, _configuration("by-url", {"url": f"https://{CLUSTER_IP}:443/configmaps"}, ca))
    _admits_and_denies(up, "checked-by-url", "by-url")
