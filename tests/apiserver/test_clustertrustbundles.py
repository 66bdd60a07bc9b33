"""ClusterTrustBundles as the kube-controller-manager's publisher writes and lists them:
names `<signer with ':' for '/'>:<suffix>`, listed by a spec.signerName field selector."""

from __future__ import annotations

import pytest
from apiclient import Client

from draemu.apiserver.server.lifecycle import APIServer

BUNDLES = "/apis/certificates.k8s.io/v1/clustertrustbundles"

pytestmark = pytest.mark.unit


def bundle(name: str, signer: str, pem: str) -> dict:
    spec = {"trustBundle": pem, **({"signerName": signer} if signer else {})}
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle",
            "metadata": {"name": name}, "spec": spec}


async def test_a_signers_bundle_is_named_with_its_prefix_and_found_by_signer(
        client: Client, apiserver: APIServer) -> None:
    pem = apiserver.pki.ca.cert_pem.decode()
    name = "kubernetes.io:kube-apiserver-serving:fedb8d3dbd815013"
    created = await client.post(BUNDLES, bundle(name, "kubernetes.io/kube-apiserver-serving", pem))
    assert created.status == 201, created.json
    assert (await client.post(BUNDLES, bundle("plain", "", pem))).status == 201
    found = await client.get(f"{BUNDLES}?fieldSelector=spec.signerName%3D"
                             "kubernetes.io%2Fkube-apiserver-serving")
    assert found.status == 200, found.json
    assert [i["metadata"]["name"] for i in found.json["items"]] == [name]


async def test_a_bundle_name_keeps_its_rules(client: Client, apiserver: APIServer) -> None:
    pem = apiserver.pki.ca.cert_pem.decode()
    wrong_prefix = await client.post(BUNDLES, bundle("other:x", "example.com/s", pem))
    assert wrong_prefix.status == 422
    assert "must be named with prefix example.com:s:" in wrong_prefix.json["message"]
    bad_suffix = await client.post(BUNDLES, bundle("example.com:s:UPPER", "example.com/s", pem))
    assert bad_suffix.status == 422
    assert "RFC 1123 subdomain" in bad_suffix.json["message"]
