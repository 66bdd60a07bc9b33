"""`draemu allocate` with an inventory it does not have to be given object by object: the
shipped example, a preset, a live cluster (issue 36, point 5: nothing in examples/ held
a DeviceClass or a ResourceSlice, and a preset file was skipped)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from draemu.client import Client
from draemu.cmd.cli import main
from draemu.cmd.explain.offline import preset_objects
from draemu.cmd.testing.readme import REPOSITORY

pytestmark = pytest.mark.unit

EXAMPLES = REPOSITORY / "examples" / "allocate"
CLAIM = str(EXAMPLES / "claim.yaml")


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["allocate", *args, "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_shipped_example_inventory_places_scenario_one_on_every_node_that_fits(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "-f", str(EXAMPLES / "inventory.yaml"), "-f", CLAIM]) == 0
    out = capsys.readouterr().out
    assert "❌ gpu.nvidia.com/gpu-node-03/gpu-0: memory 16Gi, too small (needs >= 80Gi)" in out
    assert out.rstrip().endswith("The claims fit on: gpu-node-01, gpu-node-02")


def test_the_shipped_inventory_is_the_seed_presets_gpus() -> None:
    import yaml

    shipped = [d for d in yaml.safe_load_all((EXAMPLES / "inventory.yaml").read_text()) if d]
    seed = [o for o in preset_objects("seed") if o["kind"] != "DeviceClass"
            or o["metadata"]["name"] == "gpu.nvidia.com"]
    seed = [o for o in seed if o["kind"] != "ResourceSlice"
            or o["spec"]["driver"] == "gpu.nvidia.com"]
    assert shipped == seed


def test_a_preset_is_an_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _json(capsys, "--preset", "seed", "-f", CLAIM)
    assert code == 0
    assert [n["node"] for n in out["nodes"]] == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert out["fits"] == ["gpu-node-01", "gpu-node-02"]
    code, out = _json(capsys, "--preset", "seed", "-f", CLAIM, "--node", "gpu-node-03")
    assert (code, out["outcome"]) == (1, "Unsatisfiable")


def test_a_preset_file_given_with_f_is_read_not_skipped(
        capsys: pytest.CaptureFixture[str]) -> None:
    preset = REPOSITORY / "drivers" / "presets" / "seed.yaml"
    assert main(["allocate", "-f", str(preset), "-f", CLAIM, "--node", "gpu-node-02"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err
    assert "✅ node gpu-node-02: Allocated" in captured.out


def test_without_devices_or_claims_it_says_what_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate"]) == 2
    assert "nothing to allocate from" in capsys.readouterr().err
    assert main(["allocate", "--preset", "seed"]) == 2
    assert "no ResourceClaim to allocate" in capsys.readouterr().err
    assert main(["allocate", "--preset", "nonesuch", "-f", CLAIM]) == 2
    assert capsys.readouterr().err.startswith("error: preset: ")


async def test_a_live_cluster_is_an_inventory_read_only(
        apiserver: Any, capsys: pytest.CaptureFixture[str]) -> None:
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        for obj in preset_objects("seed"):
            group = "v1" if obj["kind"] == "Node" else "resource.k8s.io/v1"
            resource = {"Node": "nodes", "DeviceClass": "deviceclasses",
                        "ResourceSlice": "resourceslices"}[obj["kind"]]
            await client.create(group, resource, obj)
        # An H100 of gpu-node-02 is taken by a claim allocated there.
        taken = await client.create("resource.k8s.io/v1", "resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "taken"}, "spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}},
            namespace="default")
        taken["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "gpu-node-02",
             "device": "gpu-0"}]}}}
        await client.update("resource.k8s.io/v1", "resourceclaims", taken,
                            namespace="default", subresource="status")
        before = await client.list("resource.k8s.io/v1", "resourceclaims", "default")
    code = await asyncio.to_thread(main, [
        "allocate", "--kubeconfig", str(apiserver.kubeconfig_path), "-f", CLAIM,
        "--node", "gpu-node-02"])
    out = capsys.readouterr().out
    assert code == 0
    assert "❌ gpu.nvidia.com/gpu-node-02/gpu-0: in use by claim default/taken" in out
    assert "✅ gpu.nvidia.com/gpu-node-02/gpu-1: chosen" in out
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as client:
        after = await client.list("resource.k8s.io/v1", "resourceclaims", "default")
    # Nothing written: no claim created, the one there untouched (the list's own
    # resourceVersion is the store's, which the apiserver's own writes move).
    assert [(c["metadata"]["name"], c["metadata"]["resourceVersion"]) for c in after["items"]] \
        == [(c["metadata"]["name"], c["metadata"]["resourceVersion"]) for c in before["items"]]
