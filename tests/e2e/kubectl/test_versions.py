"""A reduced suite with every kubectl on the machine (1.27 ...): discovery, get,
create/apply, delete --wait, wait, explain, `auth` and the `create` generators (which
send protobuf bodies from 1.32 on)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubectl_helpers import BINARIES, write

from draemu.cmd.testing.apiserver import Kubectl

pytestmark = pytest.mark.e2e

VERSIONS = sorted(BINARIES, key=lambda v: tuple(int(p) for p in v.split(".")))


def _manifest(name: str, value: str) -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
            f"data:\n  key: \"{value}\"\n")


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_version_round_trip(version: str, kubectl_for: Callable[[str], Kubectl],
                                    tmp_path: Path) -> None:
    k = kubectl_for(version)
    assert "kube-system" in k("get", "namespaces")
    name = f"v{version.replace('.', '-')}"
    path = write(tmp_path, "cm.yaml", _manifest(name, "1"))
    k("create", "-f", path)
    write(tmp_path, "cm.yaml", _manifest(name, "2"))
    assert "configured" in k("apply", "-f", path)
    assert k("get", "cm", name, "-o", "jsonpath={.data.key}") == "2"
    assert "serverside-applied" in k("apply", "--server-side", "-f", path)
    k("delete", "cm", name, "--wait=true")
    k("wait", "--for=delete", f"configmap/{name}", "--timeout=10s")


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_explain(version: str, kubectl_for: Callable[[str], Kubectl]) -> None:
    out = kubectl_for(version)("explain", "configmaps.data")
    assert "ConfigMap" in out and "data" in out


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_auth_whoami_and_can_i(version: str,
                                       kubectl_for: Callable[[str], Kubectl]) -> None:
    k = kubectl_for(version)
    assert k("auth", "can-i", "create", "pods").strip() == "yes"
    if version != "1.27":  # whoami arrived in 1.28 (beta API in 1.27)
        assert "kubernetes-admin" in k("auth", "whoami")


@pytest.mark.parametrize("version", VERSIONS)
def test_kubectl_create_generators(version: str,
                                   kubectl_for: Callable[[str], Kubectl]) -> None:
    k = kubectl_for(version)
    suffix = version.replace(".", "-")
    assert f"namespace/gen-{suffix} created" in k("create", "namespace", f"gen-{suffix}")
    assert f"configmap/gen-{suffix} created" in k("create", "configmap", f"gen-{suffix}",
                                                   "--from-literal=a=b")
    assert k("get", "cm", f"gen-{suffix}", "-o", "jsonpath={.data.a}") == "b"
