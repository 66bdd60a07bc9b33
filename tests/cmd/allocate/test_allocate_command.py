"""`draemu allocate` as users run it: files and stdin, versions, validation, outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draemu.cmd.cli import main

pytestmark = pytest.mark.unit

GPU_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"""

SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: T4}}
    capacity: {memory: {value: 16Gi}}
  - name: gpu-1
    attributes: {model: {string: A100}}
    capacity: {memory: {value: 80Gi}}
"""

CLAIM = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: big-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel:
            expression: >-
              device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0
"""

V1BETA1 = """
apiVersion: resource.k8s.io/v1beta1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes: {model: {string: A100}}
      capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: one-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
"""


def write(tmp_path: Path, name: str, *docs: str) -> str:
    path = tmp_path / name
    path.write_text("\n---\n".join(docs))
    return str(path)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["allocate", *args, "-o", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_allocates_the_device_that_matches_the_selector(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, CLAIM)
    code, report = run_json(capsys, "-f", f, "--node", "node-1")
    assert code == 0
    assert report["outcome"] == "Allocated"
    [claim] = report["claims"]
    assert (claim["namespace"], claim["name"]) == ("default", "big-gpu")
    assert claim["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-1"}]
    assert claim["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0][
        "values"] == ["node-1"]


def test_unsatisfiable_explains_which_selector_rejected_which_device(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allocated = yaml.safe_load(CLAIM)
    allocated["metadata"]["name"] = "holder"
    allocated["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-1"}]}}}
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, yaml.safe_dump(allocated), CLAIM)
    code, report = run_json(capsys, "-f", f, "--node", "node-1")
    assert code == 1  # scripts can tell: 0 allocated, 1 not, 2 bad input
    assert report["outcome"] == "Unsatisfiable"
    devices = {d["device"]: d for d in report["explanation"]["requests"][0]["devices"]}
    t4 = devices["gpu.example.com/node-1/gpu-0"]
    assert not t4["ok"] and "selector #0 is false" in t4["reason"]
    assert t4["seen"] == "memory=16Gi"
    assert devices["gpu.example.com/node-1/gpu-1"]["reason"] == "in use by claim default/holder"
    assert report["explanation"]["summary"].startswith(
        "cannot allocate all claims: claim default/big-gpu, request gpu: 0 of 2 devices fit")


def test_text_output_marks_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, CLAIM)
    assert main(["allocate", "-f", f, "--node", "node-1"]) == 0
    out = capsys.readouterr().out
    assert "✅ node node-1: Allocated" in out
    # The part of the selector that is false, in words, then the selector it is from.
    assert ('❌ gpu.example.com/node-1/gpu-0: memory 16Gi, too small (needs >= 40Gi) — '
            'request gpu selector #0 is false: device.capacity["gpu.example.com"].memory'
            '.compareTo(quantity("40Gi")) >= 0') in out
    assert "✅ gpu.example.com/node-1/gpu-1: chosen [memory=80Gi]" in out


def test_older_api_versions_are_converted(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "in.yaml", V1BETA1)
    code, report = run_json(capsys, "-f", f, "--node", "node-1")
    assert (code, report["outcome"]) == (0, "Allocated")
    assert report["claims"][0]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


def test_kind_list_and_json_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = [yaml.safe_load(d) for d in (GPU_CLASS, SLICE, CLAIM)]
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    code, report = run_json(capsys, "-f", str(path), "--node", "node-1")
    assert (code, report["outcome"]) == (0, "Allocated")


def test_node_labels_select_network_attached_devices(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    shared = yaml.safe_load(SLICE)
    del shared["spec"]["nodeName"]
    shared["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    f = write(tmp_path, "in.yaml", GPU_CLASS, yaml.safe_dump(shared), CLAIM)
    code, report = run_json(capsys, "-f", f, "--node", "node-7", "--node-label", "rack=r1")
    assert report["outcome"] == "Allocated"
    assert report["claims"][0]["allocation"]["nodeSelector"] == shared["spec"]["nodeSelector"]
    code, report = run_json(capsys, "-f", f, "--node", "node-7", "--node-label", "rack=r2")
    assert report["outcome"] == "Unsatisfiable"


def test_error_outcome_for_unknown_class(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "in.yaml", SLICE, CLAIM)
    code, report = run_json(capsys, "-f", f, "--node", "node-1", "--no-validate")
    assert code == 1
    assert report["outcome"] == "Error"
    assert report["error"] == ("claim default/big-gpu, request gpu: could not retrieve device "
                               'class gpu.example.com: deviceclass.resource.k8s.io '
                               '"gpu.example.com" not found')


def test_invalid_objects_are_unusable_input(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = yaml.safe_load(CLAIM)
    bad["spec"]["devices"]["requests"][0]["exactly"]["count"] = -1
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, yaml.safe_dump(bad))
    assert main(["allocate", "-f", f, "--node", "node-1"]) == 2
    err = capsys.readouterr().err
    assert 'ResourceClaim.resource.k8s.io "big-gpu" is invalid' in err
    assert "spec.devices.requests[0].exactly.count" in err


def test_unparsable_file_is_unusable_input(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: [unclosed")
    assert main(["allocate", "-f", str(path), "--node", "n"]) == 2
    assert "not valid YAML or JSON" in capsys.readouterr().err


@pytest.mark.e2e  # a real process
def test_stdin_through_a_real_process() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "draemu", "allocate", "-f", "-", "--node", "node-1", "-o",
         "yaml"], input="\n---\n".join((GPU_CLASS, SLICE, CLAIM)), capture_output=True, text=True,
        timeout=60)
    assert proc.returncode == 0, proc.stderr
    report = yaml.safe_load(proc.stdout)
    assert report["outcome"] == "Allocated"
    assert report["claims"][0]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"


def test_feature_gates_flag_turns_features_off(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    claim = yaml.safe_load(CLAIM)
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
        "requests": {"memory": "1Gi"}}
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, yaml.safe_dump(claim))
    code, report = run_json(capsys, "-f", f, "--node", "node-1", "--no-validate",
                            "--feature-gates", "DRAConsumableCapacity=false")
    assert report["outcome"] == "Error"
    assert "has capacity requests, but the DRAConsumableCapacity feature is disabled" in \
        report["error"]


def test_validation_drops_fields_of_disabled_gates_as_the_apiserver_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claim = yaml.safe_load(CLAIM)
    claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
        "requests": {"memory": "1Gi"}}
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, yaml.safe_dump(claim))
    code, report = run_json(capsys, "-f", f, "--node", "node-1",
                            "--feature-gates", "DRAConsumableCapacity=false")
    assert (code, report["outcome"]) == (0, "Allocated")


def test_node_manifest_supplies_labels(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    shared = yaml.safe_load(SLICE)
    del shared["spec"]["nodeName"]
    shared["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: node-7, labels: {rack: r1}}\n"
    f = write(tmp_path, "in.yaml", GPU_CLASS, yaml.safe_dump(shared), CLAIM, node)
    code, report = run_json(capsys, "-f", f, "--node", "node-7")
    assert (code, report["outcome"]) == (0, "Allocated")


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # `draemu allocate ... | head -1`: the reader is gone before draemu writes.
    f = write(tmp_path, "in.yaml", GPU_CLASS, SLICE, CLAIM)
    read, write_end = os.pipe()
    os.close(read)
    with os.fdopen(write_end, "w") as pipe:
        monkeypatch.setattr(sys, "stdout", pipe)
        code = main(["allocate", "-f", f, "--node", "node-1"])
    assert code == 141
