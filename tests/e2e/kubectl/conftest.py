"""One apiserver per module and a kubectl per version on the machine."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubectl_helpers import BINARIES, NEWEST

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import Kubectl


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
