"""The DRA introduction, end to end: `draemu up --preset seed` in a child process, its
three scenarios applied with real kubectl, outcomes checked exactly."""

import json
import time
from pathlib import Path

import pytest

from draemu.cmd.testing.process import RunningDraemu, draemu_up

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).parents[3] / "examples" / "seed"
NUMA = "resource.kubernetes.io/numaNode"


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> RunningDraemu:
    with draemu_up(tmp_path_factory.mktemp("seed"), "--preset", "seed") as running:
        yield running


def get(seed: RunningDraemu, *args: str):
    return json.loads(seed.kubectl("get", *args, "-o", "json").stdout)


def wait_ready(seed: RunningDraemu, *pods: str) -> None:
    if "-l" in pods:  # the controller creates the pods: wait until one exists first
        deadline = time.monotonic() + 30
        while not seed.kubectl("get", *pods, "-o", "name").stdout.strip():
            assert time.monotonic() < deadline, f"no pods for {pods}"
            time.sleep(0.1)
    seed.kubectl("wait", "--for=condition=Ready", *pods, "--timeout=60s")


def device_info(seed: RunningDraemu) -> dict[tuple[str, str, str], dict]:
    """(driver, pool, device) -> attributes, from the published slices."""
    out = {}
    for s in get(seed, "resourceslices")["items"]:
        for dev in s["spec"].get("devices") or []:
            out[(s["spec"]["driver"], s["spec"]["pool"]["name"], dev["name"])] = {
                k.rsplit("/", 1)[-1] if k.startswith(s["spec"]["driver"]) else k:
                next(iter(v.values())) for k, v in (dev.get("attributes") or {}).items()}
    return out


def results(claim: dict) -> list[dict]:
    return claim["status"]["allocation"]["devices"]["results"]


def test_seed_cluster_has_three_gpu_nodes_with_published_devices(seed):
    nodes = {n["metadata"]["name"] for n in get(seed, "nodes")["items"]}
    assert nodes == {"gpu-node-01", "gpu-node-02", "gpu-node-03"}
    models = sorted((pool, attrs["model"]) for (driver, pool, _), attrs in
                    device_info(seed).items() if driver == "gpu.nvidia.com")
    assert models.count(("gpu-node-01", "A100-SXM4-80GB")) == 2
    assert models.count(("gpu-node-01", "A100-PCIE-40GB")) == 2
    assert models.count(("gpu-node-02", "H100-SXM5-80GB")) == 3
    assert models.count(("gpu-node-03", "Tesla-T4")) == 4


def test_scenario_1_training_gets_an_80gb_gpu_never_a_t4_or_40gb(seed):
    f = str(EXAMPLES / "1-large-model-training.yaml")
    seed.kubectl("apply", "-f", f)
    try:
        wait_ready(seed, "pod", "-l", "job-name=llm-training-80gb")
        [res] = results(get(seed, "resourceclaim", "large-model-gpu-claim"))
        attrs = device_info(seed)[(res["driver"], res["pool"], res["device"])]
        assert (res["pool"], attrs["model"]) in {("gpu-node-01", "A100-SXM4-80GB"),
                                                 ("gpu-node-02", "H100-SXM5-80GB")}
        pod = get(seed, "pods", "-l", "job-name=llm-training-80gb")["items"][0]
        assert pod["spec"]["nodeName"] == res["pool"]
        logs = seed.kubectl("logs", "job/llm-training-80gb").stdout
        assert f'declare -x GPU_DEVICE_{res["device"].split("-")[1]}="{res["device"]}"' in logs
        why = seed.kubectl("get", "events", "--field-selector",
                           f"involvedObject.name={pod['metadata']['name']}").stdout
        assert "Scheduled" in why
    finally:
        seed.kubectl("delete", "-f", f, "--wait=true")


def test_scenario_2a_two_pods_share_one_claimed_gpu(seed):
    f = str(EXAMPLES / "2a-shared-gpu-claim.yaml")
    seed.kubectl("apply", "-f", f)
    try:
        wait_ready(seed, "pod/inference-pod-a", "pod/inference-pod-b")
        claim = get(seed, "resourceclaim", "shared-gpu-claim")
        assert sorted(r["name"] for r in claim["status"]["reservedFor"]) == [
            "inference-pod-a", "inference-pod-b"]
        [res] = results(claim)
        a, b = (get(seed, "pod", p) for p in ("inference-pod-a", "inference-pod-b"))
        assert a["spec"]["nodeName"] == b["spec"]["nodeName"] == res["pool"]
        # the GPU the introduction shares: an A100 80GB, on the node that has them
        assert (res["pool"], res["device"]) in {("gpu-node-01", "gpu-0"), ("gpu-node-01",
                                                                           "gpu-1")}
        for pod in ("inference-pod-a", "inference-pod-b"):
            assert f'="{res["device"]}"' in seed.kubectl("logs", pod).stdout
    finally:
        seed.kubectl("delete", "-f", f, "--wait=true")


def test_scenario_2b_consumable_capacity_shares_one_gpu_with_distinct_share_ids(seed):
    f = str(EXAMPLES / "2b-consumable-capacity.yaml")
    seed.kubectl("apply", "-f", f)
    try:
        wait_ready(seed, "pod/inference-share-a", "pod/inference-share-b")
        claims = [c for c in get(seed, "resourceclaims")["items"]
                  if c["metadata"]["name"].startswith("inference-share-")]
        assert len(claims) == 2
        (ra,), (rb,) = (results(c) for c in claims)
        assert (ra["pool"], ra["device"]) == (rb["pool"], rb["device"])
        assert ra["shareID"] and rb["shareID"] and ra["shareID"] != rb["shareID"]
        assert ra["consumedCapacity"]["memory"] == rb["consumedCapacity"]["memory"] == "10Gi"
        from draemu.cmd.explain.devices import build
        rows = build(get(seed, "resourceslices")["items"], claims)
        [row] = [r for r in rows if (r.pool, r.device) == (ra["pool"], ra["device"])]
        assert row.free() == "memory=60Gi"
    finally:
        seed.kubectl("delete", "-f", f, "--wait=true")


def test_scenario_3_gpu_and_nic_share_a_numa_node(seed):
    f = str(EXAMPLES / "3-gpu-plus-nic.yaml")
    seed.kubectl("apply", "-f", f)
    try:
        wait_ready(seed, "pod/distributed-training-pod")
        info = device_info(seed)
        by_request = {r["request"]: info[(r["driver"], r["pool"], r["device"])] for r in
                      results(get(seed, "resourceclaim", "gpu-plus-nic-claim"))}
        gpu, nic = by_request["training-gpu"], by_request["fast-nic"]
        assert gpu["memory"] >= 85899345920
        assert nic["speed"] >= 400 and nic["rdmaCapable"] is True
        assert gpu[NUMA] == nic[NUMA]
    finally:
        seed.kubectl("delete", "-f", f, "--wait=true")


def test_scenario_3_without_the_constraint_pairs_across_numa_nodes(seed):
    f = str(EXAMPLES / "3b-gpu-plus-nic-unaligned.yaml")
    seed.kubectl("apply", "-f", f)
    try:
        wait_ready(seed, "pod/unaligned-training-pod")
        info = device_info(seed)
        by_request = {r["request"]: info[(r["driver"], r["pool"], r["device"])] for r in
                      results(get(seed, "resourceclaim", "gpu-plus-nic-unaligned"))}
        assert by_request["training-gpu"][NUMA] != by_request["fast-nic"][NUMA]
    finally:
        seed.kubectl("delete", "-f", f, "--wait=true")


def test_as_published_claims_in_v1alpha3_apply_unchanged(seed):
    published = EXAMPLES / "as-published"
    try:
        for name in ("1-large-model-gpu-claim.yaml", "2-shared-gpu-claim.yaml"):
            out = seed.kubectl("apply", "-f", str(published / name))
            assert "created" in out.stdout
        claim = get(seed, "resourceclaim", "large-model-gpu-claim")
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == \
            "gpu.nvidia.com"
    finally:
        seed.kubectl("delete", "resourceclaim", "large-model-gpu-claim", "shared-gpu-claim",
                     "--ignore-not-found", "--wait=true")


def test_as_published_source_field_gets_an_error_naming_the_fix(seed):
    out = seed.kubectl("create", "-f",
                       str(EXAMPLES / "as-published" / "2-inference-pod-a.yaml"), check=False)
    assert out.returncode != 0
    assert "resourceClaimName" in out.stderr and "source" in out.stderr
    assert "spec.resourceClaims[0]" in out.stderr


def test_as_published_numa_node_constraint_gets_an_error_naming_the_fix(seed):
    out = seed.kubectl("create", "-f",
                       str(EXAMPLES / "as-published" / "3-gpu-plus-nic-claim.yaml"),
                       check=False)
    assert out.returncode != 0
    assert "spec.devices.constraints[0].matchAttribute" in out.stderr
    assert "fully qualified name" in out.stderr
    # The message names the attribute that works: the drivers publish the standard one.
    assert "'resource.kubernetes.io/numaNode'" in out.stderr


def test_scenarios_leave_nothing_behind(seed):
    # Generated claims go when the resource claim controller sees their pods gone.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pods, claims = get(seed, "pods")["items"], get(seed, "resourceclaims")["items"]
        if not pods and not claims:
            return
        time.sleep(0.2)
    assert [p["metadata"]["name"] for p in pods] == []
    assert [c["metadata"]["name"] for c in claims] == []
