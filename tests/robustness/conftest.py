"""Fixtures of the robustness tests: one plain-HTTP apiserver per module (on a loopback
address, so no TLS handshakes slow the fuzzing down) and a synchronous client for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from draemu.cmd.testing.apiserver import ServerThread


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    thread = ServerThread(Path(tmp_path_factory.mktemp("apiserver")), insecure_http=True)
    server = thread.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield client
    finally:
        thread.stop()
