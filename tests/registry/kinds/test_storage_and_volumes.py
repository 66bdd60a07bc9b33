"""PersistentVolume, PersistentVolumeClaim and the storage.k8s.io kinds: defaults,
validation with upstream's messages, what may change after creation, columns."""

from __future__ import annotations

import copy

import pytest
from kind_helpers import created, ctx, messages, updated

from draemu.apiserver.registry.core.persistentvolume import (
    PVC_SPEC_IMMUTABLE,
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
)
from draemu.apiserver.registry.storage.volumes import (
    CSIDriverStrategy,
    CSINodeStrategy,
    StorageClassStrategy,
    VolumeAttachmentStrategy,
)
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit
PV, PVC = PersistentVolumeStrategy(), PersistentVolumeClaimStrategy()
SC, DRIVER, CSINODE, VA = (StorageClassStrategy(), CSIDriverStrategy(), CSINodeStrategy(),
                           VolumeAttachmentStrategy())


def volume(**spec: object) -> dict:
    base: dict = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                  "hostPath": {"path": "/data"}}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
            "spec": base}


def claim(**spec: object) -> dict:
    base: dict = {"accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "1Gi"}}}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"}, "spec": base}


def test_volume_defaults_and_pending_phase() -> None:
    obj = created(PV, volume())
    assert (obj["spec"]["persistentVolumeReclaimPolicy"], obj["spec"]["volumeMode"]) == (
        "Retain", "Filesystem")
    assert obj["status"]["phase"] == "Pending" and "lastPhaseTransitionTime" in obj["status"]
    assert PV.validate(obj, ctx()) == []


def test_volume_needs_exactly_one_source_and_storage_capacity() -> None:
    obj = created(PV, volume(hostPath=None, capacity={"cpu": "1"}, accessModes=[]))
    del obj["spec"]["hostPath"]
    assert messages(PV.validate(obj, ctx())) == [
        "spec.accessModes: Required value",
        'spec.capacity: Unsupported value: {"cpu":"1"}: supported values: "storage"',
        "spec: Required value: must specify a volume type"]
    two = created(PV, volume(nfs={"server": "s", "path": "/"}))
    assert messages(PV.validate(two, ctx())) == [
        "spec.nfs: Forbidden: may not specify more than 1 volume type"]


def test_volume_source_is_immutable() -> None:
    old = created(PV, volume())
    new = copy.deepcopy(old)
    new["spec"]["hostPath"] = {"path": "/other"}
    assert messages(PV.validate_update(updated(PV, new, old), old, ctx())) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable "
        "after creation"]


def test_volume_columns() -> None:
    obj = created(PV, volume(accessModes=["ReadWriteMany", "ReadWriteOnce"],
                             storageClassName="standard",
                             claimRef={"namespace": "default", "name": "data"}))
    assert PV.table_row(obj) == ["pv1", "10Gi", "RWO,RWX", "Retain", "Pending", "default/data",
                                 "standard", "<unset>", "", AGE, "Filesystem"]


def test_claim_defaults_and_validation() -> None:
    obj = created(PVC, claim())
    assert obj["spec"]["volumeMode"] == "Filesystem" and obj["status"] == {"phase": "Pending"}
    assert PVC.validate(obj, ctx()) == []
    bad = created(PVC, claim(accessModes=[], resources={}))
    assert messages(PVC.validate(bad, ctx())) == [
        "spec.accessModes: Required value: at least 1 access mode is required",
        "spec.resources[storage]: Required value"]


def test_claim_may_be_bound_once_and_only_grow_when_bound() -> None:
    old = created(PVC, claim())
    bound = copy.deepcopy(old)
    bound["spec"]["volumeName"] = "pv1"
    assert PVC.validate_update(updated(PVC, bound, old), old, ctx()) == []
    changed = copy.deepcopy(old)
    changed["spec"]["accessModes"] = ["ReadOnlyMany"]
    assert messages(PVC.validate_update(updated(PVC, changed, old), old, ctx())) == [
        f"spec: Forbidden: {PVC_SPEC_IMMUTABLE}"]
    bound["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    grown = copy.deepcopy(bound)
    grown["spec"]["resources"]["requests"]["storage"] = "2Gi"
    assert PVC.validate_update(grown, bound, ctx()) == []
    shrunk = copy.deepcopy(bound)
    shrunk["spec"]["resources"]["requests"]["storage"] = "500Mi"
    assert messages(PVC.validate_update(shrunk, bound, ctx())) == [
        "spec.resources.requests.storage: Forbidden: field can not be less than "
        "status.capacity"]


def test_claim_columns() -> None:
    obj = created(PVC, claim(storageClassName="standard"))
    assert PVC.table_row(obj) == ["data", "Pending", "", "", "", "standard", "<unset>", AGE,
                                  "Filesystem"]


def test_storage_class_defaults_validation_and_immutability() -> None:
    obj = created(SC, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                       "metadata": {"name": "standard", "annotations": {
                           "storageclass.kubernetes.io/is-default-class": "true"}},
                       "provisioner": "example.com/disk"})
    assert (obj["reclaimPolicy"], obj["volumeBindingMode"]) == ("Delete", "Immediate")
    assert SC.validate(obj, ctx()) == []
    assert SC.table_row(obj) == ["standard (default)", "example.com/disk", "Delete",
                                 "Immediate", False, AGE]
    new = copy.deepcopy(obj)
    new["provisioner"] = "example.com/other"
    assert messages(SC.validate_update(new, obj, ctx())) == [
        'provisioner: Invalid value: "example.com/other": field is immutable']


def test_csi_driver_defaults_and_columns() -> None:
    obj = created(DRIVER, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                           "metadata": {"name": "disk.example.com"}, "spec": {}})
    assert obj["spec"] == {"attachRequired": True, "podInfoOnMount": False,
                           "storageCapacity": False, "fsGroupPolicy": "ReadWriteOnceWithFSType",
                           "requiresRepublish": False, "seLinuxMount": False,
                           "volumeLifecycleModes": ["Persistent"]}
    assert DRIVER.validate(obj, ctx()) == []
    assert DRIVER.table_row(obj) == ["disk.example.com", True, False, False, "<unset>", False,
                                     "Persistent", AGE]


def test_csinode_drivers_are_validated_and_their_node_id_fixed() -> None:
    node = created(CSINODE, {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                             "metadata": {"name": "n1"},
                             "spec": {"drivers": [{"name": "disk.example.com", "nodeID": "a"},
                                                  {"name": "disk.example.com"}]}})
    assert messages(CSINODE.validate(node, ctx())) == [
        'spec.drivers[1].name: Invalid value: "disk.example.com": duplicate value',
        "spec.drivers[1].nodeID: Required value"]
    node["spec"]["drivers"] = node["spec"]["drivers"][:1]
    moved = copy.deepcopy(node)
    moved["spec"]["drivers"][0]["nodeID"] = "b"
    assert messages(CSINODE.validate_update(moved, node, ctx())) == [
        'spec.drivers[0].nodeID: Invalid value: "b": field is immutable']
    assert CSINODE.table_row(node) == ["n1", 1, AGE]


def test_volume_attachment_spec_is_immutable() -> None:
    obj = created(VA, {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                       "metadata": {"name": "va"},
                       "spec": {"attacher": "disk.example.com", "nodeName": "n1",
                                "source": {"persistentVolumeName": "pv1"}}})
    assert VA.validate(obj, ctx()) == []
    new = copy.deepcopy(obj)
    new["spec"]["nodeName"] = "n2"
    assert messages(VA.validate_update(updated(VA, new, obj), obj, ctx()))[0].endswith(
        "field is immutable")
    assert VA.table_row(obj) == ["va", "disk.example.com", "pv1", "n1", False, AGE]


def test_volume_sources_need_their_required_fields() -> None:
    obj = created(PV, volume(hostPath=None, csi={"driver": "Bad_Driver"}))
    del obj["spec"]["hostPath"]
    first, second = messages(PV.validate(obj, ctx()))
    assert first.startswith('spec.csi.driver: Invalid value: "Bad_Driver": a lowercase RFC '
                            "1123 subdomain must consist of")
    assert second == "spec.csi.volumeHandle: Required value"
    nfs = created(PV, volume(hostPath=None, nfs={"server": "s", "path": "data"}))
    del nfs["spec"]["hostPath"]
    assert messages(PV.validate(nfs, ctx())) == [
        'spec.nfs.path: Invalid value: "data": must be an absolute path']
    local = created(PV, volume(hostPath=None, local={"path": "/a/../b"}))
    del local["spec"]["hostPath"]
    assert messages(PV.validate(local, ctx())) == [
        "spec.local.path: Invalid value: \"/a/../b\": must not contain '..'",
        "spec.nodeAffinity: Required value: Local volume requires node affinity"]
