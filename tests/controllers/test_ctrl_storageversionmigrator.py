"""The storage version migrator against a real apiserver: a StorageVersionMigration is
promoted (Running), gets the resource's resourceVersion, has every object written
again, and ends Succeeded and no longer Running; a CustomResourceDefinition's
StorageMigrating condition and storedVersions follow; a resource discovery does not
serve fails it; migrations of one resource run one at a time; the kind's status rules."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from draemu.client import ApiError, Client
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.controllers.manager import ControllerManager

pytestmark = [pytest.mark.unit, pytest.mark.slow]

SVM = ("storagemigration.k8s.io/v1", "storageversionmigrations")
CRDS = ("apiextensions.k8s.io/v1", "customresourcedefinitions")


@pytest_asyncio.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Client]:
    """An apiserver with the migrator (and the garbage collector upstream requires)."""
    server = await start_apiserver(tmp_path / "apiserver")
    manager = ControllerManager(Client.from_kubeconfig(server.kubeconfig_path),
                                enabled=["storage-version-migrator", "garbagecollector"],
                                settings={"svm_discovery_wait": 2.0})
    client = Client.from_kubeconfig(server.kubeconfig_path, user_agent="test")
    try:
        await manager.start()
        yield client
    finally:
        await manager.stop()
        await manager.ctx.client.close()
        await client.close()
        await server.stop()


def migration(name: str, resource: str, group: str = "") -> dict[str, Any]:
    return {"apiVersion": SVM[0], "kind": "StorageVersionMigration",
            "metadata": {"name": name},
            "spec": {"resource": {"group": group, "resource": resource}}}


def conditions(svm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (svm.get("status") or {}).get("conditions") or []}


async def finished(client: Client, name: str, timeout: float = 20.0) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        svm = await client.get(*SVM, name)
        found = conditions(svm)
        done = any(found.get(t, {}).get("status") == "True" for t in ("Succeeded", "Failed"))
        if done and found.get("Running", {}).get("status") == "False" or \
                found.get("Failed", {}).get("status") == "True":
            return svm
        assert asyncio.get_running_loop().time() < deadline, svm
        await asyncio.sleep(0.1)


async def test_a_migration_runs_to_success(cluster: Client) -> None:
    for i in range(3):
        await cluster.create("v1", "configmaps", {"metadata": {"name": f"cm{i}"},
                                                  "data": {"i": str(i)}}, "default")
    created = await cluster.create(*SVM, migration("cms", "configmaps"))
    assert created["status"] == {}
    svm = await finished(cluster, "cms")
    found = conditions(svm)
    assert found["Succeeded"]["status"] == "True"
    assert (found["Succeeded"]["reason"], found["Succeeded"]["message"]) == (
        "StorageVersionMigrationSucceeded", "Migration completed")
    assert (found["Running"]["status"], found["Running"]["reason"],
            found["Running"]["message"]) == ("False", "MigrationCompleted",
                                             "Migration completed")
    assert found["Running"]["observedGeneration"] == 1
    assert svm["status"]["resourceVersion"].isdigit()


async def test_an_unknown_resource_fails_after_waiting_for_discovery(cluster: Client) -> None:
    await cluster.create(*SVM, migration("foos", "foo"))
    svm = await finished(cluster, "foos")
    failed = conditions(svm)["Failed"]
    assert (failed["reason"], failed["message"]) == ("StorageVersionMigrationFailed",
                                                     "resource does not exist in discovery")
    assert "resourceVersion" not in svm["status"]


async def test_migrations_of_one_resource_all_finish(cluster: Client) -> None:
    for name in ("first", "second", "third"):
        await cluster.create(*SVM, migration(name, "secrets"))
    for name in ("first", "second", "third"):
        svm = await finished(cluster, name)
        assert conditions(svm)["Succeeded"]["status"] == "True", name


async def test_a_crd_migration_updates_its_stored_versions(cluster: Client) -> None:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields":
                                  True}}
    crd = {"apiVersion": CRDS[0], "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": schema}]}}
    await cluster.create(*CRDS, crd)
    for _ in range(100):
        try:
            await cluster.create("example.com/v1", "widgets",
                                 {"apiVersion": "example.com/v1", "kind": "Widget",
                                  "metadata": {"name": "w"}}, "default")
            break
        except ApiError:
            await asyncio.sleep(0.1)  # the CRD is established
    current = await cluster.get(*CRDS, "widgets.example.com")
    current["spec"]["versions"] = [
        {"name": "v1", "served": True, "storage": False, "schema": schema},
        {"name": "v2", "served": True, "storage": True, "schema": schema}]
    updated = await cluster.update(*CRDS, current)
    assert updated["status"]["storedVersions"] == ["v1", "v2"]
    await cluster.create(*SVM, migration("widgets", "widgets", "example.com"))
    svm = await finished(cluster, "widgets")
    assert conditions(svm)["Succeeded"]["status"] == "True"
    crd_now = await cluster.get(*CRDS, "widgets.example.com")
    assert crd_now["status"]["storedVersions"] == ["v2"]
    migrating = next(c for c in crd_now["status"]["conditions"]
                     if c["type"] == "StorageMigrating")
    assert (migrating["status"], migrating["reason"], migrating["message"]) == (
        "False", "MigrationSucceeded",
        "The migration has succeeded and the stored versions have been updated")


async def test_status_rules_are_upstreams(cluster: Client) -> None:
    await cluster.create(*SVM, migration("rules", "foo"))
    patched = await cluster.patch(*SVM, "rules", [
        {"op": "add", "path": "/status/conditions", "value": [
            {"type": "Failed", "status": "True", "reason": "Test", "message": "m",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}],
        patch_type="json", subresource="status")
    assert conditions(patched)["Failed"]["status"] == "True"
    with pytest.raises(ApiError) as caught:
        await cluster.patch(*SVM, "rules", [{"op": "replace", "path": "/status/conditions",
                                             "value": []}],
                            patch_type="json", subresource="status")
    assert caught.value.code == 422
    assert "Failed condition cannot be set to false once it is true" in caught.value.message
    with pytest.raises(ApiError) as caught:
        await cluster.patch(*SVM, "rules", {"spec": {"resource": {"resource": "bar"}}})
    assert "field is immutable" in caught.value.message
