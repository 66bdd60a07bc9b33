"""ServiceAccount tokens: TokenRequest, verification (signature, audience, expiry,
binding), TokenReview, and what nodes may ask for."""

from __future__ import annotations

import asyncio
import base64
import json
import time

import pytest
from test_rbac_api import RBAC, rule

from draemu.apiserver.endpoints.tokenrequest import claims

pytestmark = pytest.mark.unit
NS = "/api/v1/namespaces/default"
AUTHN = "/apis/authentication.k8s.io/v1"


def token_request(**spec: object) -> dict:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


async def _account(admin, name: str = "driver") -> dict:
    reply = await admin.post(f"{NS}/serviceaccounts", {"apiVersion": "v1",
                                                       "kind": "ServiceAccount",
                                                       "metadata": {"name": name}})
    assert reply.status == 201
    return reply.json


async def _token(admin, name: str = "driver", **spec: object) -> str:
    reply = await admin.post(f"{NS}/serviceaccounts/{name}/token", token_request(**spec))
    assert reply.status == 201, reply.json
    return reply.json["status"]["token"]


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def test_a_requested_token_authenticates_as_the_service_account(as_user) -> None:
    admin = as_user()
    account = await _account(admin)
    reply = await admin.post(f"{NS}/serviceaccounts/driver/token", token_request())
    assert reply.status == 201
    assert reply.json["spec"] == {"audiences": ["https://kubernetes.default.svc.cluster.local"],
                                  "expirationSeconds": 3600}
    token = reply.json["status"]["token"]
    c = _claims(token)
    assert c["sub"] == "system:serviceaccount:default:driver"
    assert c["kubernetes.io"]["serviceaccount"] == {"name": "driver",
                                                    "uid": account["metadata"]["uid"]}
    assert c["exp"] - c["iat"] == 3600
    sa = as_user(token=token)
    who = await sa.post(f"{AUTHN}/selfsubjectreviews", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    info = who.json["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:driver"
    assert info["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default",
                              "system:authenticated"]
    assert info["extra"]["authentication.kubernetes.io/credential-id"] == [f"JTI={c['jti']}"]
    denied = await sa.get(f"{NS}/secrets")
    assert denied.status == 403
    assert denied.json["message"] == (
        'secrets is forbidden: User "system:serviceaccount:default:driver" cannot list '
        'resource "secrets" in API group "" in the namespace "default"')


async def test_rbac_grants_a_service_account_through_its_subject(as_user) -> None:
    admin = as_user()
    await _account(admin)
    assert (await admin.post(f"{RBAC}/namespaces/default/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cm"}, "rules": [rule(["configmaps"], ["list"])]})).status == 201
    assert (await admin.post(f"{RBAC}/namespaces/default/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "cm"}, "roleRef": {"kind": "Role", "name": "cm",
                                                "apiGroup": "rbac.authorization.k8s.io"},
        "subjects": [{"kind": "ServiceAccount", "name": "driver"}]})).status == 201
    sa = as_user(token=await _token(admin))
    await asyncio.sleep(0.1)
    assert (await sa.get(f"{NS}/configmaps")).status == 200


async def test_tampered_expired_and_foreign_audience_tokens_are_401(server, as_user) -> None:
    admin = as_user()
    account = await _account(admin)
    token = await _token(admin)
    header, payload, signature = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged["kubernetes.io"]["serviceaccount"]["name"] = "default"
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=")
    expired = server.signer.sign(claims("default", account, [
        "https://kubernetes.default.svc.cluster.local"], 600, now=int(time.time()) - 3600))
    elsewhere = await _token(admin, audiences=["https://vault.example.com"])
    for bad in (f"{header}.{forged_payload.decode()}.{signature}", token[:-4] + "AAAA",
                expired, elsewhere):
        client = as_user(token=bad)
        reply = await client.get(f"{NS}/configmaps")
        assert reply.status == 401, bad
        assert reply.json["message"] == "Unauthorized"


async def test_token_review(as_user) -> None:
    admin = as_user()
    await _account(admin)
    token = await _token(admin)
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": token}}
    ok = await admin.post(f"{AUTHN}/tokenreviews", review)
    assert ok.status == 201
    status = ok.json["status"]
    assert status["authenticated"] is True
    assert status["user"]["username"] == "system:serviceaccount:default:driver"
    assert status["audiences"] == ["https://kubernetes.default.svc.cluster.local"]
    other = await admin.post(f"{AUTHN}/tokenreviews", {**review, "spec": {
        "token": token, "audiences": ["https://vault.example.com"]}})
    assert other.json["status"]["authenticated"] is False
    bad = await admin.post(f"{AUTHN}/tokenreviews",
                           {**review, "spec": {"token": token[:-4] + "AAAA"}})
    assert bad.json["status"]["authenticated"] is False
    assert bad.json["status"]["error"] == \
        "[invalid bearer token, crypto/ecdsa: verification error]"
    empty = await admin.post(f"{AUTHN}/tokenreviews", {**review, "spec": {}})
    assert empty.status == 400
    denied = await as_user("bob").post(f"{AUTHN}/tokenreviews", review)
    assert denied.status == 403


async def test_validation_of_token_requests(as_user) -> None:
    admin = as_user()
    await _account(admin)
    short = await admin.post(f"{NS}/serviceaccounts/driver/token",
                             token_request(expirationSeconds=60))
    assert short.status == 422
    assert short.json["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid '
        'value: 60: may not specify a duration less than 10 minutes')
    missing = await admin.post(f"{NS}/serviceaccounts/nobody/token", token_request())
    assert missing.status == 404
    assert missing.json["message"] == 'serviceaccounts "nobody" not found'
    pod = await admin.post(f"{NS}/serviceaccounts/driver/token", token_request(
        boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "ghost"}))
    assert pod.status == 404


async def _pod(admin, name: str, node: str, account: str = "driver") -> dict:
    reply = await admin.post(f"{NS}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "serviceAccountName": account,
                 "containers": [{"name": "c", "image": "busybox"}]}})
    assert reply.status == 201, reply.json
    return reply.json


async def test_a_pod_bound_token_dies_with_its_pod(as_user) -> None:
    admin = as_user()
    await _account(admin)
    pod = await _pod(admin, "p1", "n1")
    token = await _token(admin, boundObjectRef={"apiVersion": "v1", "kind": "Pod",
                                                "name": "p1", "uid": pod["metadata"]["uid"]},
                         expirationSeconds=3607)
    c = _claims(token)
    assert c["kubernetes.io"]["pod"] == {"name": "p1", "uid": pod["metadata"]["uid"]}
    assert c["kubernetes.io"]["node"]["name"] == "n1"
    # The kubelet's 3607 seconds: valid for a year, refreshed after 3607 s.
    assert c["exp"] - c["iat"] == 365 * 24 * 3600
    assert c["kubernetes.io"]["warnafter"] - c["iat"] == 3607
    sa = as_user(token=token)
    who = await sa.post(f"{AUTHN}/selfsubjectreviews", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    extra = who.json["status"]["userInfo"]["extra"]
    assert extra["authentication.kubernetes.io/pod-name"] == ["p1"]
    assert extra["authentication.kubernetes.io/node-name"] == ["n1"]
    assert (await admin.delete(f"{NS}/pods/p1?gracePeriodSeconds=0")).status == 200
    await asyncio.sleep(0.1)
    assert (await sa.get(f"{NS}/configmaps")).status == 401


async def test_nodes_get_tokens_only_for_their_own_pods(server, as_user, tmp_path) -> None:
    import ssl

    import aiohttp

    admin = as_user()
    await _account(admin)
    mine = await _pod(admin, "mine", "n1")
    theirs = await _pod(admin, "theirs", "n2")
    path = server.write_kubeconfig(tmp_path / "n1.kubeconfig", user="system:node:n1",
                                   groups=["system:nodes"])
    pair = server.issue_client_certificate("system:node:n1", ["system:nodes"])
    (tmp_path / "n1.crt").write_bytes(pair.cert_pem)
    (tmp_path / "n1.key").write_bytes(pair.key_pem)
    ctx = ssl.create_default_context(cadata=server.pki.ca.cert_pem.decode())
    ctx.load_cert_chain(tmp_path / "n1.crt", tmp_path / "n1.key")
    assert path.exists()

    async def ask(body: dict) -> tuple[int, dict]:
        async with aiohttp.ClientSession() as session, session.post(
                f"{server.url}{NS}/serviceaccounts/driver/token", json=body,
                ssl=ctx) as resp:
            return resp.status, await resp.json()

    ok, body = await ask(token_request(boundObjectRef={
        "apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": mine["metadata"]["uid"]}))
    assert ok == 201, body
    unbound, body = await ask(token_request())
    assert unbound == 403
    assert body["message"] == ('serviceaccounts "driver" is forbidden: node requested token '
                               "not bound to a pod")
    other, body = await ask(token_request(boundObjectRef={
        "apiVersion": "v1", "kind": "Pod", "name": "theirs",
        "uid": theirs["metadata"]["uid"]}))
    assert other == 403
    assert body["message"].endswith("node requested token bound to a pod scheduled on a "
                                    "different node")


async def test_malformed_token_requests_are_400s(as_user) -> None:
    admin = as_user()
    await _account(admin)
    for spec in ([], {"expirationSeconds": "x"}, {"boundObjectRef": "x"}, {"audiences": "a"}):
        reply = await admin.post(f"{NS}/serviceaccounts/driver/token", {"spec": spec})
        assert reply.status == 400, reply.json
        assert reply.json["message"].startswith(
            'TokenRequest in version "v1" cannot be handled as a TokenRequest: json: cannot '
            "unmarshal")
    kind = await admin.post(f"{NS}/serviceaccounts/driver/token", token_request(
        boundObjectRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}))
    assert kind.status == 400
    assert kind.json["message"] == "cannot bind token to object of type apps/v1, Kind=Deployment"


async def test_legacy_token_secrets_are_filled_on_request(tmp_path) -> None:
    from draemu.client import Client
    from draemu.cmd.testing.apiserver import start_apiserver
    from draemu.controllers.manager import ControllerManager

    server = await start_apiserver(tmp_path / "s")
    admin = Client.from_kubeconfig(server.kubeconfig_path)
    manager = ControllerManager(Client.from_kubeconfig(server.kubeconfig_path),
                                enabled=["serviceaccount-token"],
                                service_account_key_file=server.data_dir / "pki" / "sa.key")
    try:
        await manager.start()
        account = await admin.create("v1", "serviceaccounts", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "old"}},
            namespace="default")
        await admin.create("v1", "secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "old-token",
                         "annotations": {"kubernetes.io/service-account.name": "old"}}},
            namespace="default")
        for _ in range(100):
            secret = await admin.get("v1", "secrets", "old-token", "default")
            if (secret.get("data") or {}).get("token"):
                break
            await asyncio.sleep(0.05)
        assert secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == \
            account["metadata"]["uid"]
        assert base64.b64decode(secret["data"]["namespace"]) == b"default"
        token = base64.b64decode(secret["data"]["token"]).decode()
        assert _claims(token)["iss"] == "kubernetes/serviceaccount"
        review = await admin.create("authentication.k8s.io/v1", "tokenreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})
        assert review["status"]["user"]["username"] == "system:serviceaccount:default:old"
        # Deleting the Secret revokes the token.
        await admin.delete("v1", "secrets", "old-token", "default")
        await asyncio.sleep(0.2)
        gone = await admin.create("authentication.k8s.io/v1", "tokenreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})
        assert gone["status"]["authenticated"] is False
    finally:
        await manager.stop()
        await manager.ctx.client.close()
        await admin.close()
        await server.stop()
