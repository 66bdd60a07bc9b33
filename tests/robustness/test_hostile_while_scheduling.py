"""Issue 15, end to end: while a pod with a claim is being scheduled by `draemu up`, a
YAML alias bomb, a ReDoS device selector and a 5,000-digit number are sent; /readyz
answers within 1 s throughout, the hostile requests get 4xx Status answers and the pod
is scheduled."""

from __future__ import annotations

import base64
import ssl
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from draemu.cmd.testing.process import draemu_up

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ALIAS_BOMB = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n"
              b"a: &a [x,x,x,x,x,x,x,x,x]\n"
              + b"".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n".encode()
                         for p, n in zip("abcdef", "bcdefg", strict=True)))
REDOS = '"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".matches("^(a+)+$")'
RESOURCE = "/apis/resource.k8s.io/v1"


def _client(kubeconfig: Path, folder: Path) -> httpx.Client:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    cert, key = folder / "admin.crt", folder / "admin.key"
    cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
    key.write_bytes(base64.b64decode(user["client-key-data"]))
    ctx.load_cert_chain(cert, key)
    return httpx.Client(base_url=cluster["server"], verify=ctx, timeout=30)


def _claim(name: str, device_class: str, selector: str | None = None) -> dict:
    request: dict = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    if selector:
        request["exactly"]["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name}, "spec": {"devices": {"requests": [request]}}}


def _pod(name: str, claim: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}}


def test_hostile_requests_do_not_stall_readiness_or_scheduling(tmp_path: Path) -> None:
    with draemu_up(tmp_path, "--no-ui") as running:
        client = _client(running.kubeconfig, tmp_path)
        slowest = [0.0]
        stop = threading.Event()

        def watch_readiness() -> None:
            with _client(running.kubeconfig, tmp_path) as probe:
                while not stop.is_set():
                    started = time.perf_counter()
                    assert probe.get("/readyz", timeout=10).status_code == 200
                    slowest[0] = max(slowest[0], time.perf_counter() - started)
                    time.sleep(0.05)

        prober = threading.Thread(target=watch_readiness, daemon=True)
        prober.start()
        try:
            namespaced = f"{RESOURCE}/namespaces/default"
            # A claim whose selector backtracks catastrophically under Python's re: the
            # scheduler evaluates it against every device of the cluster.
            assert client.post(f"{namespaced}/resourceclaims",
                               json=_claim("redos", "gpu.nvidia.com", REDOS)).status_code == 201
            assert client.post("/api/v1/namespaces/default/pods",
                               json=_pod("redos", "redos")).status_code == 201
            assert client.post(f"{namespaced}/resourceclaims",
                               json=_claim("gpu", "gpu.nvidia.com")).status_code == 201
            assert client.post("/api/v1/namespaces/default/pods",
                               json=_pod("wanted", "gpu")).status_code == 201
            for content_type in ("application/yaml", "application/json"):
                reply = client.post("/api/v1/namespaces/default/configmaps", content=ALIAS_BOMB,
                                    headers={"Content-Type": content_type})
                assert reply.status_code == 400, reply.text
            reply = client.post("/api/v1/namespaces/default/configmaps",
                                content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":'
                                        b'{"name":"n","generation":' + b"9" * 5000 + b"}}",
                                headers={"Content-Type": "application/json"})
            assert reply.status_code == 400, reply.text
            deadline = time.monotonic() + 60
            while not client.get("/api/v1/namespaces/default/pods/wanted").json()["spec"] \
                    .get("nodeName"):
                assert time.monotonic() < deadline, "the pod was not scheduled"
                time.sleep(0.2)
            redos = client.get("/api/v1/namespaces/default/pods/redos").json()
            assert not redos["spec"].get("nodeName")  # no device matches the selector
        finally:
            stop.set()
            prober.join(15)
            client.close()
        assert not prober.is_alive()
        assert slowest[0] < 1.0, f"/readyz took {slowest[0]:.2f} s"
