"""One apiserver per module and a kubectl per version on the machine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from draemu.apiserver.server import APIServer
from draemu.testing.apiserver import Kubectl, kubectl_binaries

BINARIES = kubectl_binaries()
# The newest kubectl on the machine drives the full suite.
NEWEST = max(BINARIES, key=lambda v: tuple(int(p) for p in v.split(".")))


@pytest.fixture(scope="module")
def k(module_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    cache = tmp_path_factory.mktemp("kubectl-cache")
    return Kubectl(module_apiserver.kubeconfig_path, cache, BINARIES[NEWEST])


@pytest.fixture(scope="module")
def kubectl_for(module_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory
                ) -> Callable[[str], Kubectl]:
    def make(version: str) -> Kubectl:
        cache = tmp_path_factory.mktemp(f"kubectl-{version}")
        return Kubectl(module_apiserver.kubeconfig_path, cache, BINARIES[version])

    return make


def write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)
