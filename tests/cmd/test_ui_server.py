"""The web view's server against a real in-process apiserver: the token, the snapshot,
the what-if panel's answers and refusals (the browser test drives the page itself)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from draemu.client import Client
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.cmd.ui.model import LiveModel
from draemu.cmd.ui.server import UIServer

pytestmark = pytest.mark.unit

CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "gpu.example.com"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}
SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
         "metadata": {"name": "n1-gpus"},
         "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "T4"}},
                               "capacity": {"memory": {"value": "16Gi"}}}]}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: probe}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""


@pytest.fixture
async def ui(tmp_path: Path):
    server = await start_apiserver(tmp_path / "apiserver")
    admin = Client.from_kubeconfig(server.kubeconfig_path)
    for api, resource, obj in (("v1", "nodes", NODE),
                               ("resource.k8s.io/v1", "deviceclasses", CLASS),
                               ("resource.k8s.io/v1", "resourceslices", SLICE)):
        await admin.create(api, resource, obj)
    model = LiveModel(Client.from_kubeconfig(server.kubeconfig_path))
    await model.start()
    view = UIServer(model.client, model, token="secret-token",
                    kubeconfig=str(server.kubeconfig_path))
    client = TestClient(TestServer(view.app))
    client.admin = admin  # type: ignore[attr-defined]  # for tests that write
    client.view = view  # type: ignore[attr-defined]  # for tests that set it up
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()
        await model.stop()
        await model.client.close()
        await admin.close()
        await server.stop()


async def test_without_the_token_nothing_is_served(ui):
    assert (await ui.get("/api/state")).status == 401
    assert (await ui.get("/")).status == 401
    assert (await ui.get("/api/state", headers={"Authorization": "Bearer nope"})).status == 401


async def test_the_token_url_sets_a_cookie_and_the_snapshot_lists_the_devices(ui):
    page = await ui.get("/?token=secret-token")  # redirected to / with the cookie
    assert page.status == 200 and "<title>draemu" in await page.text()
    state = await (await ui.get("/api/state")).json()
    [node] = state["nodes"]
    [device] = node["devices"]
    assert (node["name"], device["id"], device["model"]) == (
        "n1", "gpu.example.com/n1/gpu-0", "T4")
    assert device["capacity"]["memory"] == {"total": "16Gi", "used": "0", "left": "16Gi",
                                            "fraction": 0.0}
    assert state["demo"] is None


async def test_what_if_says_where_a_claim_lands_and_writes_nothing(ui):
    auth = {"Authorization": "Bearer secret-token"}
    answer = await (await ui.post("/api/whatif", json={"manifest": CLAIM},
                                  headers=auth)).json()
    assert [(n["node"], n["outcome"], n["devices"]) for n in answer["nodes"]] == [
        ("n1", "Allocated", ["gpu.example.com/n1/gpu-0"])]
    state = await (await ui.get("/api/state", headers=auth)).json()
    assert state["claims"] == []


@pytest.mark.parametrize("body, status, message", [
    ({"manifest": "kind: Pod\nmetadata: {name: p}"}, 400,
     "paste one ResourceClaim or ResourceClaimTemplate, not 'Pod'"),
    ({"manifest": "a: [unclosed"}, 400, "not YAML"),
    ({"nothing": 1}, 400, 'send {"manifest": "<YAML of a ResourceClaim>"}'),
    ({"manifest": "x" * (300 * 1024)}, 413, "larger than 256 KiB"),
])
async def test_what_if_refuses_bad_input_with_a_reason(ui, body, status, message):
    response = await ui.post("/api/whatif", json=body,
                             headers={"Authorization": "Bearer secret-token"})
    assert response.status == status
    assert message in (await response.json())["error"]


async def test_the_demo_steps_only_where_enabled(ui):
    response = await ui.post("/api/demo/step", headers={"Authorization": "Bearer secret-token"})
    assert response.status == 403


async def cookie_of(ui) -> dict[str, str]:
    response = await ui.get("/?token=secret-token", allow_redirects=False)
    assert response.status == 302
    return {"Cookie": f"draemu-ui={response.cookies['draemu-ui'].value}"}


async def csrf_of(ui, cookie: dict[str, str]) -> str:
    page = await (await ui.get("/", headers=cookie)).text()
    return page.split('name="csrf-token" content="')[1].split('"')[0]


async def test_a_foreign_page_cannot_write_with_the_cookie(ui):
    """A text/plain POST from a page on another loopback port, with the cookie the browser
    adds: refused before it reaches the demo or the what-if (issue 35, defect 7)."""
    cookie = await cookie_of(ui)
    here = f"http://{ui.server.host}:{ui.server.port}"
    for headers in ({"Origin": "http://127.0.0.1:9999", "Content-Type": "text/plain"},
                    {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
                    {"Origin": here, "Content-Type": "text/plain"}):  # no CSRF token
        for path in ("/api/demo/step", "/api/whatif"):
            response = await ui.post(path, data='{"manifest": "x"}',
                                     headers={**cookie, **headers})
            assert response.status == 403, (path, headers)
            assert (await response.json())["error"].startswith("forbidden: ")


async def test_the_page_writes_with_its_csrf_token(ui):
    cookie = await cookie_of(ui)
    token = await csrf_of(ui, cookie)
    here = f"http://{ui.server.host}:{ui.server.port}"
    response = await ui.post("/api/whatif", json={"manifest": CLAIM},
                             headers={**cookie, "Origin": here, "X-CSRF-Token": token,
                                      "Sec-Fetch-Site": "same-origin"})
    assert response.status == 200
    wrong = await ui.post("/api/whatif", json={"manifest": CLAIM},
                          headers={**cookie, "X-CSRF-Token": token[:-1] + "0"})
    assert wrong.status == 403


async def test_requests_naming_another_host_are_refused(tmp_path):
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends Host: evil.example."""
    server = await start_apiserver(tmp_path / "apiserver")
    model = LiveModel(Client.from_kubeconfig(server.kubeconfig_path))
    view = UIServer(model.client, model, token="secret-token",
                    kubeconfig=str(server.kubeconfig_path))
    try:
        url = await view.start("127.0.0.1", 0)
        port = int(url.split(":")[2].split("/")[0])
        async with aiohttp.ClientSession() as session:
            for host, status in ((f"evil.example:{port}", 403), (f"localhost:{port}", 200),
                                 (f"127.0.0.1:{port}", 200)):
                async with session.get(f"http://127.0.0.1:{port}/api/demo",
                                       headers={"Host": host,
                                                "Authorization": "Bearer secret-token"}) as r:
                    assert r.status == status, host
    finally:
        await view.stop()
        await model.client.close()
        await server.stop()


def alias_bomb(levels: int = 8) -> str:
    """~500 bytes of YAML that expand to 10**levels nodes when walked."""
    lines = ["apiVersion: resource.k8s.io/v1", "kind: ResourceClaim",
             "metadata: {name: bomb}", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    lines.append(f"spec: {{devices: {{requests: *a{levels}}}}}")
    return "\n".join(lines) + "\n"


async def test_what_if_refuses_an_alias_bomb_at_once(ui):
    """518 bytes expanding to 10^8 nodes took 39 s and stalled the apiserver (issue 35,
    defect 4): decoded under the API's YAML limits, in the worker, it is refused at once."""
    bomb = alias_bomb()
    assert len(bomb) < 600
    started = time.monotonic()
    response = await ui.post("/api/whatif", json={"manifest": bomb},
                             headers={"Authorization": "Bearer secret-token"})
    assert response.status == 400
    assert "excessive aliasing" in (await response.json())["error"]
    assert time.monotonic() - started < 5


async def test_a_what_if_past_its_deadline_is_stopped_and_the_next_one_runs():
    from draemu.cmd.ui.worker import Worker

    cluster = {"classes": [CLASS], "slices": [SLICE], "rules": [], "claims": [],
               "nodes": [NODE]}
    gates = {"overrides": {}, "version": "1.37"}
    worker = Worker(deadline=0.001)  # shorter than the worker's start-up
    try:
        answer = await worker.what_if(CLAIM, cluster, gates)
        assert "took longer than 0.001 s and was stopped" in answer["error"]
        worker.deadline = 30
        answer = await worker.what_if(CLAIM, cluster, gates)
        assert [n["outcome"] for n in answer["nodes"]] == ["Allocated"]
    finally:
        await worker.stop()


BIG = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
WAITING = [
    ("resource.k8s.io/v1", "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "big"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com",
            "selectors": [{"cel": {"expression": BIG}}]}}]}}}),
    ("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiting"},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "resources": {"claims": [{"name": "gpu"}]}}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": "big"}]}})]


async def _create_waiting_pod(ui) -> None:
    auth = {"Authorization": "Bearer secret-token"}
    admin = ui.admin
    for api, resource, obj in WAITING:
        await admin.create(api, resource, obj, namespace="default")
    deadline = time.monotonic() + 10
    while "default/waiting" not in await (await ui.get("/api/state", headers=auth)).text():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_the_page_is_complete_without_javascript(ui):
    await _create_waiting_pod(ui)
    page = await (await ui.get("/", headers={"Authorization": "Bearer secret-token"})).text()
    assert 'data-id="device:gpu.example.com/n1/gpu-0"' in page  # the devices, rendered here
    assert "16Gi left of 16Gi" in page
    assert 'href="/explain?namespace=default&amp;name=waiting"' in page  # the pod, a link
    assert "static: reload to update" in page  # no "live" badge without the script
    assert "{{" not in page


async def test_a_pods_decision_is_explained_node_by_node_and_device_by_device(ui):
    await _create_waiting_pod(ui)
    auth = {"Authorization": "Bearer secret-token"}
    fragment = await (await ui.get("/explain?namespace=default&name=waiting&fragment=1",
                                   headers=auth)).text()
    assert fragment.startswith('<div class="decision" data-pod="default/waiting">')
    assert '<section class="node-verdict bad" data-node="n1">' in fragment
    assert "memory 16Gi, too small (needs &gt;= 40Gi)" in fragment
    assert "No node fits" in fragment
    decision = (await (await ui.get("/api/why?namespace=default&name=waiting",
                                    headers=auth)).json())["decision"]
    [node] = decision["nodes"]
    assert (node["name"], node["feasible"], node["plugin"]) == ("n1", False, "DynamicResources")
    [device] = node["requests"][0]["devices"]
    assert device["words"] == "memory 16Gi, too small (needs >= 40Gi)"
    missing = await ui.get("/explain?namespace=default&name=nope&fragment=1", headers=auth)
    assert missing.status == 404 and "not found" in await missing.text()


async def test_a_claims_timeline_shows_what_happened_to_it(ui):
    await _create_waiting_pod(ui)
    auth = {"Authorization": "Bearer secret-token"}
    fragment = await (await ui.get("/claim?namespace=default&name=big&fragment=1",
                                   headers=auth)).text()
    assert '<li class="step created">' in fragment


def test_claim_transitions_become_timeline_steps():
    from draemu.cmd.ui.model import transitions

    claim = {"metadata": {"name": "c", "namespace": "ns", "creationTimestamp": "T0",
                          "managedFields": [{"manager": "kubectl", "time": "T0"}]}}
    allocated = {**claim, "status": {
        "allocation": {"devices": {"results": [
            {"driver": "d", "pool": "p", "device": "gpu-0", "request": "r"}]}},
        "reservedFor": [{"resource": "pods", "name": "a", "uid": "1"}]}}
    allocated["metadata"] = {**claim["metadata"], "managedFields": [
        {"manager": "kubectl", "time": "T0"},
        {"manager": "draemu-scheduler", "time": "T1", "subresource": "status"}]}
    assert [(s["time"], s["step"], s["detail"]) for s in transitions(None, claim, "T9")] == [
        ("T0", "created", "by kubectl")]
    assert [(s["time"], s["step"], s["detail"]) for s in transitions(claim, allocated, "T2")] == [
        ("T2", "allocated", "d/p/gpu-0 by draemu-scheduler"), ("T2", "reserved", "for pod ns/a")]
    # first seen already allocated: the times it records
    assert [s["time"] for s in transitions(None, allocated, "T9")] == ["T0", "T1", "T1"]
    released = {**allocated, "status": {}}
    assert [s["step"] for s in transitions(allocated, released, "T3")] == [
        "released", "deallocated"]
    assert [s["step"] for s in transitions(released, None, "T4")] == ["released"]


async def test_explanations_replay_the_schedulers_configuration(ui):
    await _create_waiting_pod(ui)
    ui.view.scheduler_config = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins: {multiPoint: {disabled: [{name: DynamicResources}]}}\n")
    decision = (await (await ui.get("/api/why?namespace=default&name=waiting",
                                    headers={"Authorization": "Bearer secret-token"})
                       ).json())["decision"]
    assert [(n["name"], n["feasible"]) for n in decision["nodes"]] == [("n1", True)]


async def test_an_update_is_made_once_per_version_for_every_open_page(ui):
    first = ui.view.update()
    assert ui.view.update() is first  # a second page gets the same bytes, not a new render
    await _create_waiting_pod(ui)  # the cluster changes
    assert ui.view.update() is not first
    assert b"default/waiting" in ui.view.update()
