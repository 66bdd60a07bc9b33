"""Two apiservers, each with its own connection to one PostgreSQL database (the scale-out
setup): a CRD and a ValidatingAdmissionPolicy written through one are served and
enforced by the other, driven by each server's watch of the store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from apiclient import Client, ssl_context_for
from test_crd import CRD, CRDS, WIDGETS, widget

from draemu.cmd.testing.apiserver import start_apiserver
from draemu.cmd.testing.e2e import eventually
from draemu.cmd.testing.postgres import PostgresServer, PostgresUnavailable
from draemu.store import open_store

pytestmark = pytest.mark.e2e

POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    try:
        server = PostgresServer()
    except PostgresUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI: {error}")
        pytest.skip(f"PostgreSQL not available: {error}")
    try:
        yield server.create_database("crd")
    finally:
        server.stop()


async def test_crd_and_policy_written_through_one_apiserver_act_on_another(
        postgres_url: str, tmp_path: Path) -> None:
    first = await open_store(postgres_url)
    second = await open_store(postgres_url)
    a = await start_apiserver(tmp_path / "a", store=first)
    b = await start_apiserver(tmp_path / "b", store=second)
    try:
        async with aiohttp.ClientSession() as session:
            ca = Client(a.url, session, ssl_context_for(a.kubeconfig_path))
            cb = Client(b.url, session, ssl_context_for(b.kubeconfig_path))
            assert (await ca.post(CRDS, CRD)).status == 201
            created = await cb.post(WIDGETS, widget("from-b"))
            assert created.status == 201, created.body

            async def established() -> bool:
                crd = (await cb.get(f"{CRDS}/widgets.example.com")).json
                return {c["type"]: c["status"] for c in crd["status"].get("conditions", [])
                        }.get("Established") == "True"

            await eventually(established)
            policy = {"metadata": {"name": "small.example.com"}, "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["example.com"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["widgets"]}]},
                "validations": [{"expression": "object.spec.size == 'small'",
                                 "message": "only small widgets"}]}}
            assert (await ca.post(POLICIES, policy)).status == 201
            assert (await ca.post(BINDINGS, {"metadata": {"name": "small"}, "spec": {
                "policyName": "small.example.com", "validationActions": ["Deny"]}})
                    ).status == 201

            async def enforced() -> bool:
                reply = await cb.post(WIDGETS, widget("probe", size="huge", count=1))
                if reply.status == 201:
                    await cb.delete(f"{WIDGETS}/probe")
                return reply.status == 422 and \
                    reply.json["message"].endswith("denied request: only small widgets")

            await eventually(enforced)
            assert (await ca.delete(f"{CRDS}/widgets.example.com")).status == 200

            async def gone() -> bool:
                return (await cb.get(WIDGETS)).status == 404 and \
                    (await ca.get(f"{CRDS}/widgets.example.com")).status == 404

            await eventually(gone)
    finally:
        await b.stop()
        await a.stop()
        await second.close()
        await first.close()
