"""Fixtures of the store tests (a pytest plugin, loaded by tests/conftest.py): a
throw-away PostgreSQL server for the session and a store opened on each backend. A test
that takes `store` or `store_url` runs once per backend; the PostgreSQL runs are e2e."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from draemu.cmd.testing.postgres import PostgresServer, PostgresUnavailable
from draemu.store import Store, open_store

BACKENDS = ["sqlite-file", "sqlite-memory", "postgresql"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
    except PostgresUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI: {error}")
        pytest.skip(f"PostgreSQL not available: {error}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """One database for the session: emptying it is much cheaper than creating one."""
    return postgres_server.create_database("store")


@pytest.fixture
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new, empty store on the backend named by the test's parameter."""
    backend = getattr(request, "param", "sqlite-file")
    if backend == "sqlite-file":
        return f"sqlite:///{tmp_path / 'state.db'}"
    if backend == "sqlite-memory":
        return "sqlite://:memory:"
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
    with `@pytest.mark.backends(...)`; the PostgreSQL runs are marked e2e."""
    if "store_url" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("backends")
    backends = list(marker.args) if marker else BACKENDS
    # A PostgreSQL server is a real process: those runs are end to end.
    metafunc.parametrize("store_url", [
        pytest.param(b, marks=[pytest.mark.e2e] if b == "postgresql" else []) for b in backends
    ], indirect=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backends(*names): store backends a test runs on")
