"""scheduling.k8s.io Workload and PodGroup as Kubernetes 1.37 serves them: v1beta1 and
v1alpha3 behind GenericWorkload (beta, off), upstream's declarative rules and messages,
PodGroup's /status, DRAWorkloadResourceClaims' resourceClaims."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from draemu.apiserver.registry import discover
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.registry.scheduling.podgroup import PodGroupStrategy
from draemu.apiserver.registry.scheduling.workload import WorkloadStrategy
from draemu.apiserver.registry.strategy import Context
from draemu.client import ApiError
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

ON = Context(gates=FeatureGates({"GenericWorkload": True, "DRAWorkloadResourceClaims": True}))
API = "scheduling.k8s.io/v1beta1"

WORKLOAD: dict[str, Any] = {
    "apiVersion": API, "kind": "Workload",
    "metadata": {"name": "training", "namespace": "default"},
    "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "training"},
             "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {
                 "gang": {"minCount": 4}},
                 "resourceClaims": [{"name": "gpus",
                                     "resourceClaimTemplateName": "gpu-template"}]}]}}
POD_GROUP: dict[str, Any] = {
    "apiVersion": API, "kind": "PodGroup",
    "metadata": {"name": "training-workers", "namespace": "default"},
    "spec": {"workloadRef": {"workloadName": "training", "templateName": "workers"},
             "schedulingPolicy": {"gang": {"minCount": 4}},
             "resourceClaims": [{"name": "gpus", "resourceClaimName": "training-gpus"}]}}


def errors(strategy: Any, o: dict[str, Any], ctx: Context = ON) -> list[str]:
    return [str(e) for e in strategy.validate(o, ctx)]


def fresh(o: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(o)


def test_served_only_with_generic_workload() -> None:
    def served(gates: FeatureGates) -> dict[str, list[str]]:
        table = ResourceTable(discover(), gates)
        return {v: sorted(r.name for r in table.in_group_version("scheduling.k8s.io", v))
                for v in ("v1beta1", "v1alpha3")}

    off = served(FeatureGates())
    assert "workloads" not in off["v1beta1"] and "podgroups" not in off["v1alpha3"]
    on = served(FeatureGates({"GenericWorkload": True}))
    assert {"podgroups", "workloads"} <= set(on["v1beta1"]) & set(on["v1alpha3"])
    assert "v1beta1" not in ResourceTable(discover(), FeatureGates(
        {"GenericWorkload": True}, emulated_version="1.36")).groups().get(
        "scheduling.k8s.io", [])


def test_valid_objects_are_accepted() -> None:
    assert errors(WorkloadStrategy(), fresh(WORKLOAD)) == []
    assert errors(PodGroupStrategy(), fresh(POD_GROUP)) == []


@pytest.mark.parametrize(("change", "expected"), [
    (lambda s: s.pop("podGroupTemplates"),
     ['spec: Invalid value: "": must specify one of: `podGroupTemplates`, '
      "`compositePodGroupTemplates`"]),
    (lambda s: s["podGroupTemplates"][0]["schedulingPolicy"].update(basic={}),
     ['spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "{basic, gang}": must '
      "specify exactly one of: `basic`, `gang`"]),
    (lambda s: s["podGroupTemplates"][0]["schedulingPolicy"]["gang"].update(minCount=0),
     ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: 0: must be "
      "greater than or equal to 1"]),
    (lambda s: s["podGroupTemplates"].append(copy.deepcopy(s["podGroupTemplates"][0])),
     ['spec.podGroupTemplates[1]: Duplicate value: {"name":"workers"}']),
    (lambda s: s["podGroupTemplates"][0]["resourceClaims"][0].update(resourceClaimName="c"),
     ['spec.podGroupTemplates[0].resourceClaims[0]: Invalid value: "{resourceClaimName, '
      'resourceClaimTemplateName}": must specify exactly one of: `resourceClaimName`, '
      "`resourceClaimTemplateName`"]),
    (lambda s: s["controllerRef"].update(name="a/b"),
     ['spec.controllerRef.name: Invalid value: "a/b": may not contain \'/\'']),
    (lambda s: s["podGroupTemplates"][0].update(priority=2_000_000_000),
     ["spec.podGroupTemplates[0].priority: Invalid value: 2000000000: must be less than or "
      "equal to 1000000000"]),
])
def test_workload_rules(change: Any, expected: list[str]) -> None:
    o = fresh(WORKLOAD)
    change(o["spec"])
    assert errors(WorkloadStrategy(), o) == expected


def test_templates_cannot_be_added_or_changed() -> None:
    old = fresh(WORKLOAD)
    new = fresh(old)
    new["spec"]["podGroupTemplates"].append({"name": "ps", "schedulingPolicy": {"basic": {}}})
    new["spec"]["podGroupTemplates"][0]["priority"] = 5
    found = [str(e) for e in WorkloadStrategy().validate_update(new, old, ON)]
    assert "spec.podGroupTemplates[0].priority: Invalid value: null: field is immutable" in found
    assert "spec.podGroupTemplates[1]: Forbidden: item may not be added" in found


def test_resource_claims_are_dropped_without_their_gate() -> None:
    ctx = Context(gates=FeatureGates({"GenericWorkload": True}))
    o = fresh(WORKLOAD)
    WorkloadStrategy().prepare_for_create(o, ctx)
    assert "resourceClaims" not in o["spec"]["podGroupTemplates"][0]
    pg = fresh(POD_GROUP)
    PodGroupStrategy().prepare_for_create(pg, ctx)
    assert "resourceClaims" not in pg["spec"]


def test_pod_group_defaults_and_rules() -> None:
    pg = fresh(POD_GROUP)
    PodGroupStrategy().default(pg, "v1beta1")
    assert pg["spec"]["disruptionMode"] == {"single": {}}
    pg["spec"]["workloadRef"]["templateName"] = "Workers"
    [error] = errors(PodGroupStrategy(), pg)
    assert error.startswith('spec.workloadRef.templateName: Invalid value: "Workers": a '
                            "lowercase RFC 1123 label")


async def test_workloads_and_pod_groups_end_to_end(tmp_path: Path) -> None:
    server = await start_apiserver(tmp_path, feature_gates=FeatureGates(
        {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}))
    client = server.loopback_client("test")
    try:
        await client.create(API, "workloads", fresh(WORKLOAD))
        created = await client.create(API, "podgroups", fresh(POD_GROUP))
        assert created["spec"]["disruptionMode"] == {"single": {}}
        assert "status" not in created or created["status"] == {}
        alpha = await client.get("scheduling.k8s.io/v1alpha3", "workloads", "training",
                                 "default")
        assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
        created["status"] = {"resourceClaimStatuses": [
            {"name": "gpus", "resourceClaimName": "training-gpus"}]}
        updated = await client.update(API, "podgroups", created, subresource="status")
        assert updated["status"]["resourceClaimStatuses"][0]["resourceClaimName"] == \
            "training-gpus"
        updated["status"]["resourceClaimStatuses"][0]["name"] = "other"
        with pytest.raises(ApiError) as info:
            await client.update(API, "podgroups", updated, subresource="status")
        assert info.value.code == 422
        assert "must match the name of an entry in `spec.resourceClaims`" in info.value.message
    finally:
        await server.stop()
