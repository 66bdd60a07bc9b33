"""The SDK's in-cluster client: ServiceAccount token and CA, service host and port."""

from __future__ import annotations

import pytest

from draemu.client import ConfigError
from draemu.cmd.testing.apiserver import start_apiserver
from draemu.drivers.sdk import in_cluster_client

pytestmark = pytest.mark.unit


async def test_in_cluster_client_authenticates_with_the_service_account_token(
        tmp_path, monkeypatch):
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('sa-token,system:serviceaccount:dra:driver,uid-1,"system:serviceaccounts"\n')
    server = await start_apiserver(tmp_path / "api", token_file=tokens)
    try:
        sa = tmp_path / "sa"
        sa.mkdir()
        (sa / "token").write_text("sa-token\n")
        (sa / "ca.crt").write_bytes(server.pki.ca.cert_pem)
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.port))
        async with in_cluster_client(sa) as client:
            review = await client.create("authentication.k8s.io/v1", "selfsubjectreviews", {
                "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert review["status"]["userInfo"]["username"] == "system:serviceaccount:dra:driver"
    finally:
        await server.stop()


def test_outside_a_cluster_the_error_says_to_pass_a_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="pass --kubeconfig"):
        in_cluster_client(tmp_path)
