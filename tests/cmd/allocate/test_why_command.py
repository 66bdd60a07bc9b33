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
        await client.create("v1", "nodes", {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
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
    assert "✅ gpu-node-01: fits" in lines
    assert "     ✅ gpu: gpu-0, gpu-1 (A100) — matches" in lines
    assert any(line.startswith("❌ gpu-node-02: DynamicResources: cannot allocate all claims")
               for line in lines)
    assert "     ❌ gpu: gpu-0 (A100) — in use by claim default/taken" in lines
    assert "     ❌ gpu: gpu-0 (T4) — memory 16Gi, too small (needs >= 40Gi)" in lines
    assert lines[-1] == "gpu-node-01 is the only node that fits: the scheduler will place it there."


async def test_nodes_turned_down_by_other_plugins_say_which_and_why(apiserver: Any) -> None:
    client = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    try:
        await seed(client)
        node = await client.get("v1", "nodes", "gpu-node-01")
        node.setdefault("spec", {})["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
        await client.update("v1", "nodes", node)
        report = await explain_pod(client, "default", "trainer")
    finally:
        await client.close()
    lines = report.splitlines()
    assert "❌ gpu-node-01: TaintToleration: node(s) had untolerated taint(s)" \
        in lines
    assert lines[-1] == "No node fits: each of the 3 nodes turns the pod down (above)."


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


async def test_the_schedulers_configuration_is_replayed_when_given(
        apiserver: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    client = Client.from_kubeconfig(str(apiserver.kubeconfig_path))
    try:
        await seed(client)
        node = await client.get("v1", "nodes", "gpu-node-01")
        node.setdefault("spec", {})["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
        await client.update("v1", "nodes", node)
    finally:
        await client.close()
    config = tmp_path / "scheduler.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                      "kind: KubeSchedulerConfiguration\nprofiles:\n"
                      "- plugins: {filter: {disabled: [{name: TaintToleration}]}}\n")
    code = await asyncio.to_thread(main, ["why", "pod/trainer", "--kubeconfig",
                                          str(apiserver.kubeconfig_path),
                                          "--scheduler-config", str(config)])
    assert code == 0
    assert "✅ gpu-node-01: fits" in capsys.readouterr().out.splitlines()
    config.write_text("kind: Nonsense\n")
    code = await asyncio.to_thread(main, ["why", "pod/trainer", "--scheduler-config",
                                          str(config)])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: --scheduler-config: no kind")
