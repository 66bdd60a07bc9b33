"""KEP-5304 device metadata files as the SDK writes them for a prepared claim (upstream's
kubeletplugin EnableDeviceMetadata): the JSON stream, the CDI spec that mounts it, the
CDI device added to the request's first device, and clean-up on unprepare."""

from __future__ import annotations

import json

import grpc
import pytest
from kubelet_fakes import ClaimsAPI, claim

from draemu.drivers.sdk import (
    DeviceMetadata,
    KubeletPlugin,
    PreparedDevice,
    PrepareResult,
    container_file_path,
)
from draemu.kubeletapi import dra, rpc

pytestmark = pytest.mark.unit

ATTRS = {"model": {"string": "A100"}, "resource.kubernetes.io/numaNode": {"int": 1}}


class AttributeDriver:
    async def prepare_resource_claims(self, claims):
        return {c["metadata"]["uid"]: PrepareResult(devices=[
            PreparedDevice(r["pool"], r["device"], [r["request"]], ["vendor.com/gpu=x"],
                           metadata=DeviceMetadata(attributes=ATTRS))
            for r in c["status"]["allocation"]["devices"]["results"]]) for c in claims}

    async def unprepare_resource_claims(self, claims):
        return {c.uid: None for c in claims}


@pytest.fixture
async def plugin(tmp_path):
    template_claim = claim("pod-gpu-x7", "uid-t", devices=("gpu-0", "gpu-1"))
    template_claim["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    api = ClaimsAPI([claim("a", "uid-a"), template_claim])
    p = KubeletPlugin(AttributeDriver(), driver_name="gpu.example.com", node_name="node-1",
                      client=api, registrar_dir=tmp_path / "reg",
                      plugin_data_dir=tmp_path / "gpu", device_metadata=True,
                      cdi_dir=tmp_path / "cdi")
    await p.start()
    yield p, tmp_path
    await p.stop()


async def call(p, method, name, uid):
    v = dra.V1
    async with grpc.aio.insecure_channel(rpc.unix_target(str(p.dra_socket))) as ch:
        client = rpc.DRAClient(ch, v)
        refs = [v.Claim(namespace="default", name=name, uid=uid)]
        if method == "prepare":
            return await client.node_prepare_resources(
                v.NodePrepareResourcesRequest(claims=refs), timeout=5)
        return await client.node_unprepare_resources(
            v.NodeUnprepareResourcesRequest(claims=refs), timeout=5)


def stream(text: str) -> list[dict]:
    decoder, docs, i = json.JSONDecoder(), [], 0
    while i < len(text):
        doc, i = decoder.raw_decode(text, i)
        docs.append(doc)
        while i < len(text) and text[i].isspace():
            i += 1
    return docs


async def test_prepare_writes_the_metadata_file_of_each_request(plugin):
    p, tmp = plugin
    await call(p, "prepare", "a", "uid-a")
    path = tmp / "gpu" / "dra-device-metadata" / "default_a" / "gpu" / "metadata.json"
    [doc] = stream(path.read_text())
    assert doc == {
        "kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1beta1",
        "metadata": {"name": "a", "namespace": "default", "uid": "uid-a", "generation": 1},
        "requests": [{"name": "gpu", "devices": [
            {"driver": "gpu.example.com", "pool": "node-1", "name": "gpu-0",
             "attributes": ATTRS}]}]}


async def test_a_cdi_spec_mounts_the_file_read_only_into_containers(plugin):
    p, tmp = plugin
    resp = await call(p, "prepare", "a", "uid-a")
    [device] = resp.claims["uid-a"].devices
    assert list(device.cdi_device_ids) == ["vendor.com/gpu=x",
                                           "gpu.example.com/metadata=uid-a_gpu"]
    spec = json.loads((tmp / "cdi" / "gpu.example.com_metadata_uid-a_gpu.json").read_text())
    assert spec["kind"] == "gpu.example.com/metadata"
    [mount] = spec["devices"][0]["containerEdits"]["mounts"]
    assert mount == {
        "hostPath": str(tmp / "gpu" / "dra-device-metadata" / "default_a" / "gpu"
                        / "metadata.json"),
        "containerPath": "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/a/gpu/"
                         "gpu.example.com-metadata.json",
        "options": ["ro", "bind"]}


async def test_template_claims_are_found_by_their_pod_claim_name(plugin):
    p, tmp = plugin
    resp = await call(p, "prepare", "pod-gpu-x7", "uid-t")
    first, second = resp.claims["uid-t"].devices
    assert "gpu.example.com/metadata=uid-t_gpu" in first.cdi_device_ids
    assert "gpu.example.com/metadata=uid-t_gpu" not in second.cdi_device_ids  # once per request
    spec = json.loads((tmp / "cdi" / "gpu.example.com_metadata_uid-t_gpu.json").read_text())
    assert spec["devices"][0]["containerEdits"]["mounts"][0]["containerPath"] == \
        container_file_path("gpu.example.com", "pod-gpu-x7", "gpu", "gpu") == \
        "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpu/gpu/" \
        "gpu.example.com-metadata.json"
    [doc] = stream((tmp / "gpu" / "dra-device-metadata" / "default_pod-gpu-x7" / "gpu"
                    / "metadata.json").read_text())
    assert doc["podClaimName"] == "gpu"
    assert [d["name"] for d in doc["requests"][0]["devices"]] == ["gpu-0", "gpu-1"]


async def test_update_bumps_the_generation(plugin):
    p, tmp = plugin
    await call(p, "prepare", "a", "uid-a")
    await p.update_request_metadata("default", "a", "uid-a", "gpu", [PreparedDevice(
        "node-1", "gpu-0", ["gpu"], metadata=DeviceMetadata(network_data={
            "interfaceName": "eth1"}))])
    [doc] = stream((tmp / "gpu" / "dra-device-metadata" / "default_a" / "gpu"
                    / "metadata.json").read_text())
    assert doc["metadata"]["generation"] == 2
    assert doc["requests"][0]["devices"][0]["networkData"] == {"interfaceName": "eth1"}


async def test_unprepare_removes_the_files(plugin):
    p, tmp = plugin
    await call(p, "prepare", "a", "uid-a")
    await call(p, "unprepare", "a", "uid-a")
    assert not (tmp / "gpu" / "dra-device-metadata" / "default_a").exists()
    assert list((tmp / "cdi").glob("*metadata*")) == []
