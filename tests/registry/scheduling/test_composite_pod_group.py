"""scheduling.k8s.io CompositePodGroup: v1alpha3 from 1.37, v1beta1 from 1.38, behind the
CompositePodGroup gate (alpha in 1.37, beta and off in 1.38); its declarative rules with
upstream's messages, /status."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from draemu.apiserver.registry import discover
from draemu.apiserver.registry.resources import ResourceTable
from draemu.apiserver.registry.scheduling.compositepodgroup import CompositePodGroupStrategy
from draemu.apiserver.registry.strategy import Context
from draemu.client import ApiError
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True,
         "CompositePodGroup": True}
CTX = Context(gates=FeatureGates(GATES, emulated_version="1.38"))
API = "scheduling.k8s.io/v1beta1"
CPG: dict[str, Any] = {
    "apiVersion": API, "kind": "CompositePodGroup",
    "metadata": {"name": "training", "namespace": "default"},
    "spec": {"workloadRef": {"workloadName": "training", "templateName": "replicas"},
             "schedulingPolicy": {"gang": {"minGroupCount": 2}}}}


def fresh() -> dict[str, Any]:
    return copy.deepcopy(CPG)


def errors(o: dict[str, Any]) -> list[str]:
    return [str(e) for e in CompositePodGroupStrategy().validate(o, CTX)]


def served(release: str, gates: dict[str, bool]) -> dict[str, bool]:
    table = ResourceTable(discover(), FeatureGates(gates, emulated_version=release))
    return {v: any(r.name == "compositepodgroups"
                   for r in table.in_group_version("scheduling.k8s.io", v))
            for v in ("v1beta1", "v1alpha3")}


def test_served_by_release_and_gate() -> None:
    assert served("1.38", GATES) == {"v1beta1": True, "v1alpha3": True}
    assert served("1.37", GATES) == {"v1beta1": False, "v1alpha3": True}
    assert served("1.38", {"GenericWorkload": True}) == {"v1beta1": False, "v1alpha3": False}


def test_rules_of_the_spec() -> None:
    assert errors(fresh()) == []
    o = fresh()
    del o["spec"]["workloadRef"]
    o["spec"]["schedulingPolicy"] = {"gang": {"minGroupCount": 0}}
    o["spec"]["disruptionMode"] = {"all": {}}
    o["spec"]["schedulingConstraints"] = {"topology": [{"key": "zone"}, {"key": "rack"}]}
    assert errors(o) == [
        "spec.workloadRef: Required value",
        "spec.schedulingPolicy.gang.minGroupCount: Invalid value: 0: must be greater than or "
        "equal to 1",
        "spec.schedulingConstraints.topology: Too many: 2: must have at most 1 items"]
    o = fresh()
    o["spec"]["schedulingPolicy"] = {"basic": {}}
    o["spec"]["disruptionMode"] = {"all": {}}
    assert errors(o) == ['spec.disruptionMode: Invalid value: null: cannot have "all" '
                         'disruption mode when scheduling policy is other than "gang"']


def test_updates_keep_the_spec_but_min_group_count() -> None:
    old = fresh()
    new = fresh()
    new["spec"]["schedulingPolicy"]["gang"]["minGroupCount"] = 3
    assert CompositePodGroupStrategy().validate_update(new, old, CTX) == []
    new["spec"]["workloadRef"]["templateName"] = "other"
    new["spec"]["schedulingPolicy"] = {"basic": {}}
    found = [str(e) for e in CompositePodGroupStrategy().validate_update(new, old, CTX)]
    assert "spec.workloadRef: Invalid value: null: field is immutable" in found
    assert "spec.schedulingPolicy.gang: Invalid value: null: field cannot be cleared once " \
        "set" in found


async def test_composite_pod_groups_end_to_end(tmp_path: Path) -> None:
    server = await start_apiserver(tmp_path, feature_gates=CTX.gates)
    client = server.loopback_client("test")
    try:
        created = await client.create(API, "compositepodgroups", fresh())
        assert created["spec"]["disruptionMode"] == {"single": {}}
        alpha = await client.get("scheduling.k8s.io/v1alpha3", "compositepodgroups",
                                 "training", "default")
        assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
        created["status"] = {"conditions": [{
            "type": "CompositePodGroupInitiallyScheduled", "status": "True",
            "reason": "Scheduled", "message": "", "lastTransitionTime": "2026-12-07T15:00:00Z"}]}
        updated = await client.update(API, "compositepodgroups", created, subresource="status")
        assert updated["status"]["conditions"][0]["reason"] == "Scheduled"
        updated["spec"]["priority"] = 7
        with pytest.raises(ApiError) as info:
            await client.update(API, "compositepodgroups", updated)
        assert info.value.code == 422
        assert "spec.priority: Invalid value: null: field is immutable" in info.value.message
    finally:
        await server.stop()
