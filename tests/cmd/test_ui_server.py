"""The web view's server against a real in-process apiserver: the token, the snapshot,
the what-if panel's answers and refusals (the browser test drives the page itself)."""

from __future__ import annotations

from pathlib import Path

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
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
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
    view = UIServer(model.client, model, token="secret-token")
    client = TestClient(TestServer(view.app))
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
