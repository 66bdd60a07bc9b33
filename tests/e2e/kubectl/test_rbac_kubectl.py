"""RBAC and ServiceAccount tokens with the real kubectl and the official Python client,
as a driver author meets them: a ServiceAccount with a narrow Role, `kubectl create
token`, `kubectl auth can-i [--list] --as`, escalation refused, the bootstrap roles."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from draemu import kubeconfig
from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import Kubectl

pytestmark = pytest.mark.e2e
SA = "system:serviceaccount:drv:sa"


@pytest.fixture(scope="module")
def setup(k: Kubectl) -> str:
    """Namespace drv with ServiceAccount sa bound to a Role that may only get configmaps
    (and create roles, to show escalation prevention); returns a token for sa."""
    k("create", "namespace", "drv")
    k("create", "serviceaccount", "sa", "-n", "drv")
    k("create", "configmap", "c", "-n", "drv", "--from-literal=a=1")
    k("create", "role", "cm-get", "--verb=get", "--resource=configmaps", "-n", "drv")
    k("create", "role", "role-writer", "--verb=create", "--resource=roles", "-n", "drv")
    for role in ("cm-get", "role-writer"):
        k("create", "rolebinding", role, f"--role={role}", "--serviceaccount=drv:sa", "-n",
          "drv")
    return k("create", "token", "sa", "-n", "drv").strip()


def _as_token(k: Kubectl, server: APIServer, token: str, tmp: Path) -> Kubectl:
    path = tmp / f"token-{abs(hash(token))}.kubeconfig"
    kubeconfig.write(path, kubeconfig.build(server.url, user="sa", ca_pem=server.pki.ca.cert_pem,
                                            token=token, namespace="drv"))
    return Kubectl(path, k.cache_dir, k.binary)


def _retry(k: Kubectl, *args: str) -> str:
    """RBAC reads bindings from the watch cache: give a just-made binding a moment."""
    for _ in range(50):
        result = k.run(*args, check=False)
        if result.returncode == 0:
            return result.stdout
        time.sleep(0.1)
    raise AssertionError(result.stderr)


def test_the_service_account_gets_a_configmap_and_not_secrets(
        k: Kubectl, setup: str, module_apiserver: APIServer, tmp_path: Path) -> None:
    sa = _as_token(k, module_apiserver, setup, tmp_path)
    assert _retry(sa, "get", "configmap", "c", "-o", "jsonpath={.data.a}") == "1"
    denied = sa.run("get", "secret", "s", check=False)
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        f'Error from server (Forbidden): secrets "s" is forbidden: User "{SA}" cannot get '
        'resource "secrets" in API group "" in the namespace "drv"')
    listed = sa.run("get", "configmaps", check=False)
    assert f'User "{SA}" cannot list resource "configmaps" in API group "" in the namespace ' \
           '"drv"' in listed.stderr


def test_auth_can_i_answers_for_the_service_account(k: Kubectl, setup: str) -> None:
    _retry(k, "auth", "can-i", "get", "configmaps", f"--as={SA}", "-n", "drv")
    assert k("auth", "can-i", "get", "configmaps", f"--as={SA}", "-n", "drv").strip() == "yes"
    no = k.run("auth", "can-i", "get", "secrets", f"--as={SA}", "-n", "drv", check=False)
    assert no.stdout.strip() == "no" and no.returncode == 1
    rows = {tuple(line.split()) for line in
            k("auth", "can-i", "--list", f"--as={SA}", "-n", "drv").splitlines()[1:]}
    assert ("configmaps", "[]", "[]", "[get]") in rows
    assert ("roles.rbac.authorization.k8s.io", "[]", "[]", "[create]") in rows
    assert ("selfsubjectreviews.authentication.k8s.io", "[]", "[]", "[create]") in rows
    assert not any(row[0] == "secrets" for row in rows)


def test_a_created_token_is_accepted_and_a_tampered_one_refused(
        k: Kubectl, setup: str, module_apiserver: APIServer, tmp_path: Path) -> None:
    sa = _as_token(k, module_apiserver, setup, tmp_path)
    assert _retry(sa, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}") == SA
    tampered = _as_token(k, module_apiserver, setup[:-6] + "AAAAAA", tmp_path)
    refused = tampered.run("get", "configmap", "c", check=False)
    assert refused.returncode == 1
    assert "error: You must be logged in to the server (Unauthorized)" in refused.stderr


def test_escalation_is_refused(k: Kubectl, setup: str, module_apiserver: APIServer,
                               tmp_path: Path) -> None:
    sa = _as_token(k, module_apiserver, setup, tmp_path)
    _retry(sa, "create", "role", "fine", "--verb=get", "--resource=configmaps")
    refused = sa.run("create", "role", "greedy", "--verb=get", "--resource=secrets",
                     check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "greedy" is forbidden: '
        f'user "{SA}" (groups=["system:serviceaccounts" "system:serviceaccounts:drv" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')


def test_bootstrap_roles_are_listed(k: Kubectl) -> None:
    names = set(k("get", "clusterroles", "-o", "name").split())
    assert {"clusterrole.rbac.authorization.k8s.io/cluster-admin",
            "clusterrole.rbac.authorization.k8s.io/system:kube-scheduler",
            "clusterrole.rbac.authorization.k8s.io/system:node"} <= names
    binding = k("get", "clusterrolebinding", "cluster-admin", "-o", "wide")
    assert "ClusterRole/cluster-admin" in binding and "system:masters" in binding


def test_the_python_client_with_the_service_account_token(
        setup: str, module_apiserver: APIServer, tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(module_apiserver.pki.ca.cert_pem)
    config = client.Configuration(host=module_apiserver.url,
                                  api_key={"authorization": f"Bearer {setup}"})
    config.ssl_ca_cert = str(ca)
    with client.ApiClient(config) as api:
        core = client.CoreV1Api(api)
        for _ in range(50):
            try:
                assert core.read_namespaced_config_map("c", "drv").data == {"a": "1"}
                break
            except ApiException:
                time.sleep(0.1)
        with pytest.raises(ApiException) as denied:
            core.read_namespaced_secret("s", "drv")
        assert denied.value.status == 403
        assert f'User \\"{SA}\\" cannot get resource \\"secrets\\"' in denied.value.body or \
            f'User "{SA}" cannot get resource "secrets"' in denied.value.body


def test_draemu_kubeconfig_for_a_service_account(
        k: Kubectl, setup: str, module_apiserver: APIServer, tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "sa.kubeconfig"
    subprocess.run([sys.executable, "-m", "draemu", "kubeconfig", "--service-account",
                    "drv/sa", "--data-dir", str(module_apiserver.data_dir), "-o", str(path)],
                   check=True, timeout=60)
    sa = Kubectl(path, k.cache_dir, k.binary)
    assert _retry(sa, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}") == SA
    assert "secrets" in sa.run("get", "secrets", check=False).stderr
    missing = subprocess.run([sys.executable, "-m", "draemu", "kubeconfig",
                              "--service-account", "drv/nobody", "--data-dir",
                              str(module_apiserver.data_dir)], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'error: serviceaccounts "nobody" not found'
