"""core/v1 Namespace and Node strategies."""

from __future__ import annotations

import copy

import pytest
from core_helpers import created, ctx, rendered

from draemu.api.errors import Path
from draemu.apiserver.registry.core.namespace import NamespaceStrategy
from draemu.apiserver.registry.core.node import NodeStrategy
from draemu.apiserver.registry.meta import validate_object_meta
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit

NS = NamespaceStrategy()
NODE = NodeStrategy()


def namespace(name: str = "team-a") -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def node(**spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "spec": dict(spec),
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                       "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "draemu",
                                    "kernelVersion": "6.1", "containerRuntimeVersion":
                                    "fake://1.0"}}}


# Namespace --------------------------------------------------------------------------

def test_new_namespace_is_active_with_the_kubernetes_finalizer_and_name_label() -> None:
    obj = created(NS, namespace())
    assert obj["status"] == {"phase": "Active"}
    assert obj["spec"] == {"finalizers": ["kubernetes"]}
    assert obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}


def test_namespace_names_are_dns_labels() -> None:
    errs = validate_object_meta({"name": "a.b"}, False, Path("metadata"), NS.validate_name)
    assert rendered(errs) == ['metadata.name: Invalid value: "a.b": must not contain dots']


def test_main_update_cannot_change_finalizers() -> None:
    old = created(NS, namespace())
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = []
    NS.prepare_for_update(new, old, ctx())
    assert new["spec"]["finalizers"] == ["kubernetes"]


def test_finalize_changes_only_the_finalizers() -> None:
    old = created(NS, namespace())
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = []
    new["status"] = {"phase": "Terminating"}
    NS.prepare_for_subresource_update("finalize", new, old, ctx())
    assert new["spec"]["finalizers"] == [] and new["status"] == {"phase": "Active"}
    assert NS.validate_subresource_update("finalize", new, old, ctx()) == []


def test_finalize_rejects_an_unqualified_finalizer() -> None:
    old = created(NS, namespace())
    new = copy.deepcopy(old)
    new["spec"]["finalizers"] = ["mine"]
    assert rendered(NS.validate_subresource_update("finalize", new, old, ctx())) == [
        'spec.finalizers[0]: Invalid value: "mine": name is neither a standard finalizer name '
        "nor is it fully qualified"]


@pytest.mark.parametrize(("deleting", "phase", "expected"), [
    (False, "Active", []),
    (False, "Terminating", ['status.Phase: Invalid value: "Terminating": may only be '
                            "'Active' if `deletionTimestamp` is empty"]),
    (True, "Active", ['status.Phase: Invalid value: "Active": may only be \'Terminating\' if '
                      "`deletionTimestamp` is not empty"]),
])
def test_status_phase_follows_the_deletion_timestamp(deleting: bool, phase: str,
                                                     expected: list[str]) -> None:
    old = created(NS, namespace())
    new = copy.deepcopy(old)
    if deleting:
        new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new["status"]["phase"] = phase
    assert rendered(NS.validate_status_update(new, old, ctx())) == expected


def test_namespace_table_row() -> None:
    assert NS.table_row(created(NS, namespace())) == ["team-a", "Active", AGE]


def test_namespace_field_selectors_include_the_legacy_name_field() -> None:
    assert NS.selectable_fields(created(NS, namespace())) == {"status.phase": "Active",
                                                              "name": "team-a"}


# Node -------------------------------------------------------------------------------

def test_node_keeps_the_status_its_kubelet_registers() -> None:
    assert created(NODE, node())["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.0"


@pytest.mark.parametrize(("taints", "expected"), [
    ([{"key": "example.com/gpu", "effect": "NoSchedule"}], []),
    ([{"key": "k", "effect": "Sometimes"}],
     ['metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: '
      '"NoSchedule", "PreferNoSchedule", "NoExecute"']),
    ([{"key": "k"}], ["metadata.taints[0].effect: Required value"]),
    ([{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule", "value": "x"}],
     ['metadata.taints[1]: Duplicate value: {"effect":"NoSchedule","key":"k","value":"x"}: '
      "taints must be unique by key and effect pair"]),
])
def test_taints_are_validated_at_upstreams_metadata_path(taints: list,
                                                         expected: list[str]) -> None:
    assert rendered(NODE.validate(created(NODE, node(taints=taints)), ctx())) == expected


def test_pod_cidr_may_only_be_set_once() -> None:
    old = created(NODE, node(podCIDRs=["10.244.0.0/24"]))
    new = copy.deepcopy(old)
    new["spec"]["podCIDRs"] = ["10.244.1.0/24"]
    assert rendered(NODE.validate_update(new, old, ctx())) == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to '
        "valid"]


def test_pod_cidrs_must_be_cidrs() -> None:
    obj = created(NODE, node(podCIDRs=["10.244.0.0/33"]))
    assert rendered(NODE.validate(obj, ctx())) == [
        'spec.podCIDRs[0]: Invalid value: "10.244.0.0/33": must be a valid CIDR value, (e.g. '
        "10.9.8.0/24 or 2001:db8::/64)"]


def test_node_update_keeps_the_stored_status() -> None:
    old = created(NODE, node())
    new = copy.deepcopy(old)
    new["spec"]["unschedulable"] = True
    new["status"] = {}
    NODE.prepare_for_update(new, old, ctx())
    assert new["status"] == old["status"] and new["spec"]["unschedulable"] is True


def test_node_status_update_keeps_the_stored_spec() -> None:
    old = created(NODE, node())
    new = copy.deepcopy(old)
    new["spec"]["unschedulable"] = True
    new["status"]["nodeInfo"]["kubeletVersion"] = "v1.37.1"
    NODE.prepare_for_status_update(new, old, ctx())
    assert new["spec"] == old["spec"]
    assert new["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.1"


def test_node_table_row() -> None:
    obj = created(NODE, node(unschedulable=True))
    obj["metadata"]["labels"] = {"node-role.kubernetes.io/control-plane": ""}
    assert NODE.table_row(obj) == ["n1", "Ready,SchedulingDisabled", "control-plane", AGE,
                                   "v1.37.0", "10.0.0.1", "<none>", "draemu", "6.1",
                                   "fake://1.0"]
    assert [c.name for c in NODE.table_columns() if c.priority == 0] == [
        "Name", "Status", "Roles", "Age", "Version"]


def test_node_without_ready_condition_is_unknown() -> None:
    obj = created(NODE, node())
    obj["status"]["conditions"] = []
    assert NODE.table_row(obj)[1:3] == ["Unknown", "<none>"]


def test_node_field_selector_unschedulable() -> None:
    assert NODE.selectable_fields(created(NODE, node())) == {"spec.unschedulable": "false"}
