"""CDI resolution: YAML and JSON specs, priorities, version rules, edit order."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from draemu.drivers.sdk import CDIWriter
from draemu.kubelet.cdi import CDIError, CDIRegistry

pytestmark = pytest.mark.unit


def write(path, spec, as_json=False):
    path.write_text(json.dumps(spec) if as_json else yaml.safe_dump(spec))


def spec(kind="vendor.com/gpu", devices=None, edits=None, version="0.6.0"):
    s = {"cdiVersion": version, "kind": kind,
         "devices": devices or [{"name": "g0", "containerEdits": {"env": ["G=0"]}}]}
    if edits:
        s["containerEdits"] = edits
    return s


def test_spec_written_by_the_sdk_resolves_to_its_edits(tmp_path):
    writer = CDIWriter(tmp_path, "k8s.gpu.example.com/gpu")
    writer.write("claim-1", {"claim-1-gpu-0": {"env": ["GPU_DEVICE_0=gpu-0"],
                                              "deviceNodes": [{"path": "/dev/gpu0"}]}},
                 container_edits={"env": ["DRA=1"]})
    edits = CDIRegistry([tmp_path]).resolve(["k8s.gpu.example.com/gpu=claim-1-gpu-0"])
    assert edits.env == ["DRA=1", "GPU_DEVICE_0=gpu-0"]
    assert edits.device_nodes == [{"path": "/dev/gpu0"}]


def test_json_and_yaml_specs_are_both_read(tmp_path):
    write(tmp_path / "a.yaml", spec(kind="a.com/x"))
    write(tmp_path / "b.json", spec(kind="b.com/x"), as_json=True)
    (tmp_path / "spec.123.tmp").write_text("garbage")
    edits = CDIRegistry([tmp_path]).resolve(["a.com/x=g0", "b.com/x=g0"])
    assert edits.env == ["G=0", "G=0"]


def test_later_directory_overrides_earlier(tmp_path):
    static, dynamic = tmp_path / "etc", tmp_path / "run"
    static.mkdir()
    dynamic.mkdir()
    write(static / "s.yaml", spec(devices=[{"name": "g0", "containerEdits": {"env": ["W=etc"]}}]))
    write(dynamic / "s.yaml", spec(devices=[{"name": "g0", "containerEdits": {"env": ["W=run"]}}]))
    assert CDIRegistry([static, dynamic]).resolve(["vendor.com/gpu=g0"]).env == ["W=run"]


def test_spec_level_edits_are_applied_once_per_spec(tmp_path):
    write(tmp_path / "s.yaml", spec(edits={"env": ["COMMON=1"]}, devices=[
        {"name": "g0", "containerEdits": {"env": ["G=0"]}},
        {"name": "g1", "containerEdits": {"env": ["G1=1"]}}]))
    edits = CDIRegistry([tmp_path]).resolve(["vendor.com/gpu=g0", "vendor.com/gpu=g1"])
    assert edits.env == ["COMMON=1", "G=0", "G1=1"]


def test_spec_declaring_too_old_a_version_is_skipped_with_the_reason(tmp_path):
    write(tmp_path / "s.yaml", spec(version="0.5.0", devices=[
        {"name": "g0", "containerEdits": {"env": ["G=0"], "additionalGids": [5]}}]))
    with pytest.raises(CDIError, match="needs version 0.7.0"):
        CDIRegistry([tmp_path]).resolve(["vendor.com/gpu=g0"])


def test_unknown_fields_and_empty_edits_are_rejected(tmp_path):
    write(tmp_path / "a.yaml", {**spec(kind="a.com/x"), "bogus": 1})
    write(tmp_path / "b.yaml", spec(kind="b.com/x", devices=[{"name": "g0",
                                                              "containerEdits": {}}]))
    registry = CDIRegistry([tmp_path])
    with pytest.raises(CDIError, match="unknown field"):
        registry.resolve(["a.com/x=g0"])
    with pytest.raises(CDIError, match="empty device edits"):
        registry.resolve(["b.com/x=g0"])


def test_unknown_device_is_unresolvable(tmp_path):
    with pytest.raises(CDIError, match="unresolvable CDI devices vendor.com/gpu=nope"):
        CDIRegistry([tmp_path]).resolve(["vendor.com/gpu=nope"])


def test_changed_spec_file_is_reread(tmp_path):
    registry = CDIRegistry([tmp_path])
    write(tmp_path / "s.yaml", spec())
    assert registry.resolve(["vendor.com/gpu=g0"]).env == ["G=0"]
    write(tmp_path / "s.yaml", spec(devices=[{"name": "g0", "containerEdits": {"env": ["G=9"]}}]))
    os.utime(tmp_path / "s.yaml", ns=(1, 10**18))
    assert registry.resolve(["vendor.com/gpu=g0"]).env == ["G=9"]
