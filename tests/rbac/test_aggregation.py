"""The clusterrole-aggregation controller fills admin, edit and view and any other
ClusterRole with an aggregationRule."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from draemu.client import Client
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.controllers.manager import ControllerManager

pytestmark = pytest.mark.unit
RBAC = "rbac.authorization.k8s.io/v1"


async def _rules(client: Client, name: str, want: object, timeout: float = 10.0) -> list:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        rules = (await client.get(RBAC, "clusterroles", name)).get("rules") or []
        if want(rules) or asyncio.get_running_loop().time() > deadline:
            return rules
        await asyncio.sleep(0.1)


async def test_aggregated_roles_gather_labelled_roles(tmp_path: Path) -> None:
    server = await start_apiserver(tmp_path / "s")
    client = Client.from_kubeconfig(server.kubeconfig_path, user_agent="test")
    manager = ControllerManager(Client.from_kubeconfig(server.kubeconfig_path),
                                enabled=["clusterrole-aggregation"])
    try:
        await manager.start()
        view = await _rules(client, "view", lambda r: r)
        assert {"apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims", "resourceclaims/status",
                              "resourceclaimtemplates"],
                "verbs": ["get", "list", "watch"]} in view
        # admin gathers edit's and view's aggregate-to roles too.
        admin = await _rules(client, "admin", lambda r: r)
        assert all(r in admin for r in view)
        extra = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
        await client.create(RBAC, "clusterroles", {
            "apiVersion": RBAC, "kind": "ClusterRole",
            "metadata": {"name": "widgets-view",
                         "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [extra]})
        assert extra in await _rules(client, "view", lambda r: extra in r)
        await client.delete(RBAC, "clusterroles", "widgets-view")
        assert extra not in await _rules(client, "view", lambda r: extra not in r)
    finally:
        await manager.stop()
        await manager.ctx.client.close()
        await client.close()
        await server.stop()
