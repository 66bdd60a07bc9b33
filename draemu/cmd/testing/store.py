"""Fixtures of the store tests (a pytest plugin, loaded by tests/conftest.py): a
throw-away PostgreSQL server, a single etcd member and a cluster of three for the session
(per pytest worker), and a store opened on each backend. A test that takes `store` or
`store_url` runs once per backend; the PostgreSQL and etcd runs are e2e. Each etcd run
gets a key prefix of its own (etcd's revisions are the cluster's: a test sees the
revisions the tests before it wrote, none written beside it)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import NoReturn

import asyncpg
import pytest

from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable
from draemu.cmd.testing.postgres import PostgresServer, PostgresUnavailable
from draemu.store import Store, open_store

BACKENDS = ["sqlite-file", "sqlite-memory", "postgresql", "etcd", "etcd-cluster"]
# Runs of real server processes: end to end.
SERVERS = {"postgresql", "etcd", "etcd-cluster"}


def _unavailable(what: str, error: Exception) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required in CI: {error}")
    pytest.skip(f"{what} not available: {error}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
    except PostgresUnavailable as error:
        _unavailable("PostgreSQL", error)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """One database for the session: emptying it is much cheaper than creating one."""
    return postgres_server.create_database("store")


def _etcd(members: int) -> Iterator[EtcdCluster]:
    try:
        cluster = EtcdCluster(members)
    except EtcdUnavailable as error:
        _unavailable("etcd", error)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def etcd_member() -> Iterator[EtcdCluster]:
    """One etcd member for the session."""
    yield from _etcd(1)


@pytest.fixture(scope="session")
def etcd_cluster() -> Iterator[EtcdCluster]:
    """A cluster of three etcd members for the session."""
    yield from _etcd(3)


@pytest.fixture
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new, empty store on the backend named by the test's parameter."""
    backend = getattr(request, "param", "sqlite-file")
    if backend == "sqlite-file":
        return f"sqlite:///{tmp_path / 'state.db'}"
    if backend == "sqlite-memory":
        return "sqlite://:memory:"
    if backend in ("etcd", "etcd-cluster"):
        cluster = request.getfixturevalue("etcd_member" if backend == "etcd"
                                          else "etcd_cluster")
        return cluster.url(f"/t-{uuid.uuid4().hex[:12]}")
    url = request.getfixturevalue("postgres_url")
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP TABLE IF EXISTS draemu_kv, draemu_meta")
    finally:
        await conn.close()
    return url


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    opened = await open_store(store_url, compaction_interval=0)
    try:
        yield opened
    finally:
        await opened.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests that use `store` or `store_url` run on every backend unless they pick some
    with `@pytest.mark.backends(...)`; the runs on servers are marked e2e."""
    if "store_url" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("backends")
    backends = list(marker.args) if marker else BACKENDS
    metafunc.parametrize("store_url", [
        pytest.param(b, marks=[pytest.mark.e2e] if b in SERVERS else []) for b in backends
    ], indirect=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backends(*names): store backends a test runs on")
