"""Bad input gives a clear StoreError, never a traceback from the database driver."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from draemu.store import (
    InvalidKeyError,
    StoreError,
    StoreLockedError,
    ValueTooLargeError,
    open_store,
)

pytestmark = pytest.mark.unit

CHILD = Path(__file__).with_name("store_child.py")
BAD_KEYS = ["", "registry/pods/a", "/", "/registry//a", "/registry/pods/", "/registry/../a",
            "/registry/a\x00b", "/registry/a\nb", "/registry/\ud800", "/" + "x" * 3000]
BAD_PREFIXES = ["", "registry/", "/registry/\x00", "/\udfff"]


def child(*args: str, preexec: list[str] | None = None) -> str:
    """Run store_child.py and return what it printed."""
    result = subprocess.run([*(preexec or []), sys.executable, str(CHILD), *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout.strip()


@pytest.mark.backends("sqlite-memory")
@pytest.mark.parametrize("key", BAD_KEYS)
async def test_invalid_key_is_rejected_with_a_reason(store, key: str) -> None:
    with pytest.raises(InvalidKeyError, match="key"):
        await store.create(key, b"1")
    with pytest.raises(InvalidKeyError):
        await store.get(key)
    assert await store.current_revision() == 0


@pytest.mark.backends("sqlite-memory")
@pytest.mark.parametrize("prefix", BAD_PREFIXES)
async def test_invalid_prefix_is_rejected_with_a_reason(store, prefix: str) -> None:
    with pytest.raises(InvalidKeyError, match="prefix"):
        await store.range(prefix)
    with pytest.raises(InvalidKeyError, match="prefix"):
        store.watch(prefix, 0)


@pytest.mark.backends("sqlite-memory", "postgresql", "etcd")
async def test_oversized_value_is_rejected_and_nothing_is_written(store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0,
                                max_value_bytes=1024) as store:
        with pytest.raises(ValueTooLargeError, match="1025 bytes .* limit of 1024 bytes"):
            await store.create("/registry/cm/ns/big", b"x" * 1025)
        kv = await store.create("/registry/cm/ns/big", b"x" * 1024)
        with pytest.raises(ValueTooLargeError):
            await store.update("/registry/cm/ns/big", b"x" * 2048, kv.mod_revision)
        assert await store.current_revision() == kv.mod_revision


async def test_corrupted_database_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    garbage = os.urandom(8192)
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match=f"cannot open the store {path}: .*not a database"):
        await open_store(f"sqlite:///{path}")
    assert path.read_bytes() == garbage


async def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(StoreError, match="not a draemu store: it holds other tables \\(users\\)"):
        await open_store(f"sqlite:///{path}")


async def test_store_from_a_newer_draemu_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    await (await open_store(f"sqlite:///{path}")).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE draemu_meta SET value = 99 WHERE name = 'schema_version'")
    with pytest.raises(StoreError, match="newer draemu \\(schema version 99\\)"):
        await open_store(f"sqlite:///{path}")


async def test_unsupported_url_is_refused() -> None:
    with pytest.raises(StoreError, match="unsupported store URL 'mysql://db'"):
        await open_store("mysql://db")


async def test_unreachable_postgresql_is_reported() -> None:
    with pytest.raises(StoreError, match="cannot open the store postgresql://u:\\*\\*\\*@"):
        await open_store("postgresql://u:secret@127.0.0.1:1/db")


async def test_second_store_on_the_same_data_directory_fails_at_once(tmp_path: Path) -> None:
    url = "sqlite:///state.db"
    async with await open_store(url, data_dir=tmp_path):
        with pytest.raises(StoreLockedError,
                           match=f"data directory {tmp_path} is in use by another draemu "
                                 f"\\(pid {os.getpid()}\\)"):
            await open_store(url, data_dir=tmp_path)
    await (await open_store(url, data_dir=tmp_path)).close()


@pytest.mark.e2e  # a real process
async def test_second_draemu_process_on_the_same_store_fails_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    async with await open_store(url):
        output = child("open", url)
    assert output.startswith(f"error: the store {tmp_path / 'state.db'} is in use by another "
                             f"draemu (pid {os.getpid()})")


async def test_lock_dies_with_its_holder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    holder = subprocess.Popen([sys.executable, str(CHILD), "hold", url, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "opened"
        with pytest.raises(StoreLockedError):
            await open_store(url, data_dir=tmp_path)
        holder.kill()
        holder.wait(60)
        await (await open_store(url, data_dir=tmp_path)).close()
    finally:
        holder.kill()
        holder.wait(60)


@pytest.mark.e2e  # a real process
async def test_read_only_data_directory_is_reported(tmp_path: Path) -> None:
    data_dir = tmp_path / "ro"
    data_dir.mkdir()
    data_dir.chmod(0o555)
    # root ignores permissions: drop the capabilities that let it.
    drop = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    output = child("open", "sqlite:///state.db", str(data_dir), preexec=drop)
    assert output == (f"error: cannot create the lock file {data_dir / 'draemu.lock'} for "
                      f"the data directory {data_dir}: Permission denied")
