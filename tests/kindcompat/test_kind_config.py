import pytest
import yaml

from draemu.kindcompat.cli import KindError, parse_duration
from draemu.kindcompat.config import ConfigError, parse
from draemu.kindcompat.nodes import node_labels, preset, supported_gates

pytestmark = pytest.mark.unit

DRA_CONFIG = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
name: dra
featureGates:
  DynamicResourceAllocation: true
  DRAConsumableCapacity: true
  SomethingDraemuLacks: true
runtimeConfig:
  "resource.k8s.io/v1beta1": "true"
containerdConfigPatches:
- |-
  [plugins."io.containerd.grpc.v1.cri"]
    enable_cdi = true
nodes:
- role: control-plane
- role: worker
  labels:
    gpu: "true"
- role: worker
"""


def test_nodes_are_named_as_kind_names_them():
    cluster = parse(DRA_CONFIG)
    assert [n.name for n in cluster.nodes()] == ["dra-control-plane", "dra-worker",
                                                 "dra-worker2"]


def test_name_flag_overrides_the_config_name():
    assert parse(DRA_CONFIG, "other").nodes()[0].name == "other-control-plane"


def test_control_plane_is_tainted_only_when_there_are_workers():
    entries = {name: (labels, taints) for name, _, labels, taints in
               node_labels(parse(DRA_CONFIG))}
    labels, taints = entries["dra-control-plane"]
    assert "node-role.kubernetes.io/control-plane" in labels
    assert taints == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert entries["dra-worker"][0]["gpu"] == "true"
    single = parse("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")
    assert node_labels(single)[0][3] == []


def test_cdi_containerd_patch_is_honoured_silently():
    assert parse(DRA_CONFIG).ignored == []


def test_unknown_feature_gates_are_reported_not_passed_on():
    flag, unknown = supported_gates(parse(DRA_CONFIG).feature_gates)
    assert "DRAConsumableCapacity=true" in flag
    assert "SomethingDraemuLacks" not in flag
    assert unknown == ["SomethingDraemuLacks"]


def test_drivers_go_on_workers():
    doc = preset(parse(DRA_CONFIG), "gpu")
    by_name = {n["name"]: n for n in doc["nodes"]}
    assert "drivers" not in by_name["dra-control-plane"]
    assert by_name["dra-worker"]["drivers"][0]["name"] == "gpu.example.com"
    assert doc["deviceClasses"] == [{"name": "gpu.example.com", "driver": "gpu.example.com"}]


def test_preset_loads_as_a_draemu_preset(tmp_path):
    from draemu.drivers.presets import load_preset

    path = tmp_path / "preset.yaml"
    path.write_text(yaml.safe_dump(preset(parse(DRA_CONFIG), "gpu")))
    loaded = load_preset(path)
    assert [n.name for n in loaded.nodes] == ["dra-control-plane", "dra-worker", "dra-worker2"]
    assert loaded.nodes[0].taints[0]["key"] == "node-role.kubernetes.io/control-plane"


def test_unknown_field_gives_kinds_strict_decoding_error():
    with pytest.raises(ConfigError) as e:
        parse("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: worker\n"
              "  bogus: 1\n")
    assert str(e.value) == ("unable to decode config: yaml: unmarshal errors:\n"
                            "  line 5: field bogus not found in type v1alpha4.Node")


def test_unknown_api_version_is_rejected():
    with pytest.raises(ConfigError, match="unknown apiVersion: kind.x-k8s.io/v1"):
        parse("kind: Cluster\napiVersion: kind.x-k8s.io/v1\n")


def test_a_cluster_needs_a_control_plane_and_valid_roles():
    with pytest.raises(ConfigError) as e:
        parse("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: boss\n")
    assert '"boss" is not a valid node role' in str(e.value)
    assert "must have at least one control-plane node" in str(e.value)


def test_invalid_cluster_name_is_rejected():
    with pytest.raises(ConfigError, match="is not a valid cluster name"):
        parse("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nname: Bad_Name\n")


def test_go_durations():
    assert parse_duration("60s") == 60
    assert parse_duration("1m30s") == 90
    assert parse_duration("0") == 0
    with pytest.raises(KindError, match="invalid duration"):
        parse_duration("soon")
