"""One `draemu up --preset example` (two nodes, eight example GPUs each) for the whole
matrix, and a kubectl of each version with a namespace of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from matrix_support import BINARIES

from draemu.cmd.testing.apiserver import Kubectl
from draemu.cmd.testing.process import RunningDraemu, draemu_up


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDraemu]:
    with draemu_up(tmp_path_factory.mktemp("draemu"), "--preset", "example") as running:
        yield running


@pytest.fixture(scope="module")
def kubectl_at(cluster: RunningDraemu, tmp_path_factory: pytest.TempPathFactory
               ) -> Callable[[str], Kubectl]:
    """kubectl of a version, with a cache of its own (discovery is cached per version)."""
    made: dict[str, Kubectl] = {}

    def get(version: str) -> Kubectl:
        if version not in made:
            cache = tmp_path_factory.mktemp(f"kubectl-{version}")
            made[version] = Kubectl(cluster.kubeconfig, cache, BINARIES[version], timeout=90)
        return made[version]

    return get


@pytest.fixture(scope="module")
def namespace_of(kubectl_at: Callable[[str], Kubectl]) -> Callable[[str], str]:
    """A namespace per version, made by that kubectl (`create namespace` is a protobuf
    body from 1.32 on)."""
    made: set[str] = set()

    def get(version: str) -> str:
        name = "m-" + version.replace(".", "-")
        if name not in made:
            kubectl_at(version)("create", "namespace", name)
            made.add(name)
        return name

    return get
