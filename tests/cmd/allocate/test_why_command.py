"""`draemu why` against a real apiserver: the DRA introduction's three GPU nodes."""

from __future__ import annotations

from typing import Any

import pytest

from draemu.client import Client
from draemu.cmd.cli import main
from draemu.cmd.explain.why import explain_pod

pytestmark = pytest.mark.unit

V1 = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def gpu_slice(node: str, *gpus: tuple[str, str, str]) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": name, "attributes": {"model": {"string": model}},
                                  "capacity": {"memory": {"value": memory}}}
                                 for name, model, memory in gpus]}}


BIG = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'


async def seed(client: Client) -> None:
    await client.create(V1, "deviceclasses", {
        "apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for node, gpus in (("gpu-node-01", [("gpu-0", "A100", "80Gi"), ("gpu-1", "A100", "80Gi")]),
                       ("gpu-node-02", [("gpu-0", "A100", "80Gi")]),
                       ("gpu-node-03", [("gpu-0", "T4", "16Gi")])):
        await client.create("v1", "nodes", {"apiVersion": "v1", "kind": "Node",
                                            "metadata": {"name": node}})
        await client.create(V1, "resourceslices", gpu_slice(node, *gpus))
    big = BIG
    await client.create(V1, "resourceclaims", {
        "apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": "big-gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": DRIVER, "selectors": [{"cel": {"expression": big}}]}}]}}},
        namespace="default")
    taken = {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": "taken"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": DRIVER}}]}}}
    taken = await client.create(V1, "resourceclaims", taken, namespace="default")
    taken["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": DRIVER, "pool": "gpu-node-02", "device": "gpu-0"}]}}}
    await client.update(V1, "resourceclaims", taken, namespace="default", subresource="status")
    await client.create("v1", "pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer"},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "resources": {"claims": [{"name": "gpu"}]}}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": "big-gpu"}]}},
        namespace="default")


async def test_report_marks_each_node_and_device(apiserver: Any) -> None:
    client = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    try:
        await seed(client)
        report = await explain_pod(client, "default", "trainer")
    finally:
        await client.close()
    lines = report.splitlines()
    assert lines[0] == "Pod default/trainer: Pending"
    assert "  claim default/big-gpu: not allocated" in lines
    assert any(line.startswith("✅ node gpu-node-01: Allocated") for line in lines)
    assert "    ✅ gpu.example.com/gpu-node-01/gpu-0: chosen [memory=80Gi]" in lines
    assert "    ❌ gpu.example.com/gpu-node-02/gpu-0: in use by claim default/taken" in lines
    assert any(line.startswith("❌ node gpu-node-03: Unsatisfiable — cannot allocate all claims")
               for line in lines)
    assert "    ❌ gpu.example.com/gpu-node-03/gpu-0: memory 16Gi, too small (needs >= 40Gi) — " \
        "request gpu selector #0 is false: " + BIG in lines


async def test_command_reads_kubeconfig_and_reports_missing_pod(
        apiserver: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    code = await asyncio.to_thread(main, ["why", "pod/nope", "--kubeconfig",
                                          str(apiserver.kubeconfig_path)])
    assert code == 1
    assert "not found" in capsys.readouterr().err


async def test_claim_from_template_not_yet_created_is_reported(apiserver: Any) -> None:
    client = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    try:
        await client.create("v1", "pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiting"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "resourceClaims": [{"name": "gpu",
                                         "resourceClaimTemplateName": "one-gpu"}]}},
            namespace="default")
        report = await explain_pod(client, "default", "waiting")
    finally:
        await client.close()
    assert "  claim gpu: the claim from template one-gpu does not exist yet (the resource " \
        "claim controller creates it)" in report.splitlines()
    assert "The pod waits until all its claims exist." in report
