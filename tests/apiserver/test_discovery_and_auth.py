"""Discovery documents, health, metrics, authentication and authorization."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from apiclient import CM, Client, configmap, ssl_context_for

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = pytest.mark.unit

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


async def test_legacy_api_versions(client: Client) -> None:
    body = (await client.get("/api")).json
    assert body["kind"] == "APIVersions" and body["versions"] == ["v1"]


async def test_aggregated_discovery_v2_by_accept_order(client: Client) -> None:
    reply = await client.get("/apis", headers={"Accept": f"{V2},{V2BETA1},application/json"})
    assert reply.content_type == V2
    groups = {g["metadata"]["name"]: g for g in reply.json["items"]}
    apps = groups["apps"]["versions"][0]
    deployments = next(r for r in apps["resources"] if r["resource"] == "deployments")
    assert deployments["scope"] == "Namespaced"
    assert {s["subresource"] for s in deployments["subresources"]} == {"scale", "status"}
    scale = next(s for s in deployments["subresources"] if s["subresource"] == "scale")
    assert scale["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}


async def test_core_group_aggregated_item_has_empty_name(client: Client) -> None:
    reply = await client.get("/api", headers={"Accept": f"{V2},application/json"})
    items = reply.json["items"]
    assert [i["metadata"]["name"] for i in items] == [""]
    pods = next(r for r in items[0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["shortNames"] == ["po"]
    assert {s["subresource"] for s in pods["subresources"]} >= {"status", "binding", "log"}


async def test_v2beta1_only_accept_gets_legacy_json(client: Client) -> None:
    reply = await client.get("/apis", headers={"Accept": f"{V2BETA1},application/json"})
    assert reply.content_type == "application/json"
    assert reply.json["kind"] == "APIGroupList"


async def test_group_version_resource_list_with_trailing_slash(client: Client) -> None:
    body = (await client.get("/api/v1/")).json
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    names = {r["name"] for r in body["resources"]}
    assert {"pods", "pods/status", "namespaces", "namespaces/finalize"} <= names
    group = (await client.get("/apis/apps/")).json
    assert group["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}


async def test_system_namespaces_exist_from_the_start(client: Client) -> None:
    body = (await client.get("/api/v1/namespaces")).json
    assert {n["metadata"]["name"] for n in body["items"]} >= {
        "default", "kube-system", "kube-public", "kube-node-lease"}


async def test_health_endpoints_and_verbose(client: Client) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        reply = await client.get(path)
        assert (reply.status, reply.body) == (200, b"ok")
    verbose = (await client.get("/readyz?verbose")).body.decode()
    assert "[+]etcd ok" in verbose and verbose.endswith("readyz check passed\n")


async def test_metrics_count_requests_by_verb_resource_and_code(client: Client) -> None:
    await client.get(f"{CM}/nope")
    text = (await client.get("/metrics")).body.decode()
    assert 'apiserver_request_total{verb="GET",group="",version="v1",resource="configmaps"' \
        in text
    assert 'code="404"} 1' in text
    assert "apiserver_request_duration_seconds_bucket" in text
    assert 'apiserver_storage_objects{resource="namespaces"} 4' in text


@pytest_asyncio.fixture
async def anonymous(apiserver: APIServer):
    bare = ssl.create_default_context(cadata=apiserver.pki.ca.cert_pem.decode())
    async with aiohttp.ClientSession() as session:
        yield Client(apiserver.url, session, bare)


async def test_no_credentials_is_401_except_public_paths(anonymous: Client) -> None:
    reply = await anonymous.get(CM)
    assert reply.status == 401
    assert reply.json["reason"] == "Unauthorized"
    assert (await anonymous.get("/version")).status == 200
    assert (await anonymous.get("/healthz")).status == 200


async def test_self_subject_review_tells_the_client_certificate_identity(
        apiserver: APIServer, tmp_path: Path) -> None:
    path = apiserver.write_kubeconfig(tmp_path / "node", user="system:node:n1",
                                      groups=["system:nodes"])
    async with aiohttp.ClientSession() as session:
        node = Client(apiserver.url, session, ssl_context_for(path))
        reply = await node.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                {"apiVersion": "authentication.k8s.io/v1",
                                 "kind": "SelfSubjectReview"})
    assert reply.status == 201
    assert reply.json["status"]["userInfo"] == {
        "username": "system:node:n1", "groups": ["system:nodes", "system:authenticated"]}


async def test_access_review_allows_masters(client: Client) -> None:
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"verb": "create", "resource": "pods",
                                              "namespace": "default"}}}
    reply = await client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert reply.status == 201 and reply.json["status"]["allowed"] is True


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.csv"
    path.write_text('admin-token,alice,1001,"system:masters"\nplain-token,bob,1002\n')
    return path


async def test_bearer_tokens_from_the_token_file(tmp_path: Path, token_file: Path) -> None:
    server = await start_apiserver(tmp_path / "s", token_file=token_file)
    try:
        ctx = ssl.create_default_context(cadata=server.pki.ca.cert_pem.decode())
        async with aiohttp.ClientSession() as session:
            c = Client(server.url, session, ctx)
            admin = await c.get(CM, headers={"Authorization": "Bearer admin-token"})
            assert admin.status == 200
            bob = await c.post(CM, configmap("b"), headers={"Authorization": "Bearer plain-token"})
            assert bob.status == 403
            assert bob.json["message"] == (
                'configmaps is forbidden: User "bob" cannot create resource "configmaps" in '
                'API group "" in the namespace "default"')
            wrong = await c.get(CM, headers={"Authorization": "Bearer nope"})
            assert wrong.status == 401
    finally:
        await server.stop()


async def test_insecure_http_serves_loopback_plain_http_as_admin(tmp_path: Path) -> None:
    server = await start_apiserver(tmp_path / "s", insecure_http=True)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        async with aiohttp.ClientSession() as session:
            c = Client(server.url, session, None)
            assert (await c.post(CM, configmap("plain"))).status == 201
    finally:
        await server.stop()


def test_insecure_http_is_refused_off_loopback(tmp_path: Path) -> None:
    from draemu.apiserver.server.lifecycle import APIServerOptions

    with pytest.raises(ValueError, match="loopback"):
        APIServer(APIServerOptions(data_dir=tmp_path, address="0.0.0.0", insecure_http=True))


async def test_certificates_are_reused_across_restarts(tmp_path: Path) -> None:
    first = await start_apiserver(tmp_path / "s")
    ca = first.pki.ca.cert_pem
    await first.stop()
    second = await start_apiserver(tmp_path / "s")
    try:
        assert second.pki.ca.cert_pem == ca
    finally:
        await second.stop()


async def test_max_in_flight_is_429_with_retry_after(tmp_path: Path) -> None:
    # The two limits apply when API Priority and Fairness is off (it is on by default).
    server = await start_apiserver(tmp_path / "s", max_mutating_requests_inflight=0,
                                   enable_priority_and_fairness=False)
    try:
        async with aiohttp.ClientSession() as session:
            c = Client(server.url, session, ssl_context_for(server.kubeconfig_path))
            reply = await c.post(CM, configmap("limited"))
            assert reply.status == 429
            assert reply.headers["Retry-After"] == "1"
            assert reply.json["reason"] == "TooManyRequests"
            assert (await c.get(CM)).status == 200  # reads have their own limit
            assert (await c.get("/readyz")).status == 200
    finally:
        await server.stop()


async def test_objects_survive_a_restart_on_the_same_data_directory(tmp_path: Path) -> None:
    from draemu.apiserver.server.lifecycle import APIServerOptions

    opts = APIServerOptions(data_dir=tmp_path / "s")  # SQLite file in the data directory
    first = APIServer(opts)
    await first.start()
    async with aiohttp.ClientSession() as session:
        c = Client(first.url, session, ssl_context_for(first.kubeconfig_path))
        assert (await c.post(CM, configmap("kept", a="1"))).status == 201
    await first.stop()
    second = APIServer(APIServerOptions(data_dir=tmp_path / "s"))
    await second.start()
    try:
        async with aiohttp.ClientSession() as session:
            c = Client(second.url, session, ssl_context_for(second.kubeconfig_path))
            reply = await c.get(f"{CM}/kept")
            assert reply.status == 200 and reply.json["data"] == {"a": "1"}
    finally:
        await second.stop()


async def _served_resources(c: Client, group: str) -> set[str]:
    names: set[str] = set()
    for gv in (await c.get(f"/apis/{group}")).json["versions"]:
        names |= {r["name"] for r in (await c.get(f"/apis/{gv['groupVersion']}")).json[
            "resources"]}
    return names


async def test_kinds_behind_a_feature_gate_are_served_only_when_it_is_on(
        client: Client, tmp_path: Path) -> None:
    from draemu.features import FeatureGates

    assert "resourcepoolstatusrequests" not in await _served_resources(client,
                                                                       "resource.k8s.io")
    server = await start_apiserver(tmp_path / "s", feature_gates=FeatureGates(
        {"DRAResourcePoolStatus": True}))
    try:
        async with aiohttp.ClientSession() as session:
            c = Client(server.url, session, ssl_context_for(server.kubeconfig_path))
            assert "resourcepoolstatusrequests" in await _served_resources(c,
                                                                           "resource.k8s.io")
    finally:
        await server.stop()
