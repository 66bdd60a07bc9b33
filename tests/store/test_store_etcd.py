"""What the etcd backend adds to the store's semantics: etcd's own keys, revisions and
limits, several processes on one cluster, TLS, and URLs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable
from draemu.store import (
    CompactedError,
    ConflictError,
    StoreError,
    ValueTooLargeError,
    open_store,
)
from draemu.store import etcd as etcd_store
from draemu.store.etcdrpc import EtcdClient, parse_url, pb, with_tls_files

pytestmark = pytest.mark.unit

TIMEOUT = 10
server = pytest.mark.backends("etcd")


async def raw_get(url: str, key: bytes) -> object:
    """The key as etcd itself holds it (no store in between)."""
    client = EtcdClient(parse_url(url))
    try:
        response = await client.range(pb.RangeRequest(key=key), "reading")
    finally:
        await client.close()
    return response.kvs[0] if response.kvs else None


# -- URLs (no server) ------------------------------------------------------------------

def test_url_names_members_prefix_and_tls_files() -> None:
    config = parse_url("etcd://10.0.0.1:2379,etcd-b,[::1]:22379/cluster-a/?cafile=/p/ca.crt"
                       "&certfile=/p/c.crt&keyfile=/p/c.key")
    assert config.endpoints == (("10.0.0.1", 2379), ("etcd-b", 2379), ("::1", 22379))
    assert config.prefix == "/cluster-a"
    assert (config.cafile, config.certfile, config.keyfile) == ("/p/ca.crt", "/p/c.crt",
                                                                "/p/c.key")
    assert parse_url("etcd://h:1").prefix == ""


@pytest.mark.parametrize(("url", "reason"), [
    ("etcd://", "give the members"),
    ("etcd://h:99999", "bad port"),
    ("etcd://h:1?tls=1", "unknown parameter 'tls'"),
    ("etcd://h:1?certfile=/c", "certfile and keyfile go together"),
    ("etcd://h:1?cafile=", "cafile needs a file name"),
])
def test_bad_url_is_refused_with_the_reason(url: str, reason: str) -> None:
    with pytest.raises(StoreError, match=reason):
        parse_url(url)


def test_kube_apiserver_tls_flags_become_url_parameters() -> None:
    url = with_tls_files("etcd://h:1/p", "/ca.crt", "/c.crt", "/c.key")
    config = parse_url(url)
    assert (config.cafile, config.certfile, config.keyfile) == ("/ca.crt", "/c.crt", "/c.key")
    assert with_tls_files("etcd://h:1", None, None, None) == "etcd://h:1"
    with pytest.raises(StoreError, match="need an etcd:// store URL"):
        with_tls_files("sqlite://:memory:", "/ca.crt", None, None)


async def test_unreachable_etcd_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_store, "OPEN_TIMEOUT", 0.5)
    with pytest.raises(StoreError, match="cannot open the store etcd://127.0.0.1:1: .*"
                                         "unavailable"):
        await open_store("etcd://127.0.0.1:1")


# -- on a real etcd --------------------------------------------------------------------

@server
@pytest.mark.e2e
async def test_keys_are_the_prefix_and_the_store_key_and_revisions_are_etcds(
        store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        kv = await store.create("/registry/pods/default/p1", b'{"kind":"Pod"}')
    prefix = parse_url(store_url).prefix.encode()
    raw = await raw_get(store_url, prefix + b"/registry/pods/default/p1")
    assert raw is not None
    assert (raw.value, raw.mod_revision, raw.create_revision, raw.version) == (
        b'{"kind":"Pod"}', kv.mod_revision, kv.create_revision, 1)


@server
@pytest.mark.e2e
async def test_value_over_etcds_request_limit_is_refused_as_kube_apiserver_reports_it(
        store_url: str) -> None:
    async with await open_store(store_url, compaction_interval=0) as store:
        before = await store.current_revision()
        # etcd's --max-request-bytes: 1.5 MiB by default.
        with pytest.raises(ValueTooLargeError, match="^etcdserver: request is too large$"):
            await store.create("/registry/cm/ns/big", b"x" * (1536 * 1024 + 1))
        # Over etcd's Go client's 2 MiB send limit: that client's message.
        with pytest.raises(ValueTooLargeError, match="trying to send message larger than max "
                                                     r"\(\d+ vs. 2097152\)"):
            await store.create("/registry/cm/ns/big", b"x" * (3 * 1024 * 1024))
        assert await store.current_revision() == before
        kv = await store.create("/registry/cm/ns/big", b"x" * (1024 * 1024))
        assert kv.mod_revision == before + 1


@server
@pytest.mark.e2e
async def test_two_processes_on_one_cluster_share_keys_revisions_and_watches(
        store_url: str) -> None:
    async with (await open_store(store_url, compaction_interval=0) as first,
                await open_store(store_url, compaction_interval=0) as second):
        start = await second.current_revision()
        watch = second.watch("/registry/", start)
        created = await first.create("/registry/cm/ns/a", b"1")
        await second.update("/registry/cm/ns/a", b"2", created.mod_revision)
        with pytest.raises(ConflictError):
            await first.update("/registry/cm/ns/a", b"3", created.mod_revision)
        events = []
        async with asyncio.timeout(TIMEOUT):
            async for event in watch:
                events.append((event.type, event.kv.value, event.revision))
                if len(events) == 2:
                    break
        assert events == [("put", b"1", created.mod_revision),
                          ("put", b"2", created.mod_revision + 1)]
        await first.compact(created.mod_revision + 1)
        with pytest.raises(CompactedError):
            await second.get("/registry/cm/ns/a", revision=created.mod_revision)
        assert second.compacted_revision == created.mod_revision + 1
        with pytest.raises(CompactedError):
            second.watch("/registry/", created.mod_revision - 1)


@server
@pytest.mark.e2e
async def test_the_current_revision_is_the_newest_of_the_stores_own_keys(
        store_url: str) -> None:
    other_url = store_url.replace("/t-", "/other-t-")
    async with (await open_store(store_url, compaction_interval=0) as store,
                await open_store(other_url, compaction_interval=0) as other):
        ours = await store.create("/registry/cm/ns/a", b"1")
        for i in range(3):
            await other.create(f"/registry/cm/ns/b{i}", b"1")
        # A watch cache waiting for the current revision would never see the other
        # prefix's revisions come through its watch.
        assert await store.current_revision() == ours.mod_revision
        assert await other.current_revision() == ours.mod_revision + 3
        watch = store.watch("/registry/", await store.current_revision())
        again = await store.create("/registry/cm/ns/c", b"1")
        async with asyncio.timeout(TIMEOUT):
            event = await watch.__anext__()
        assert event.revision == again.mod_revision == await store.current_revision()
        await watch.aclose()
        await other.create("/registry/cm/ns/b9", b"1")
        async with asyncio.timeout(TIMEOUT / 2):  # the watch confirms progress at once
            await store.compact(await store.current_revision())
        assert store.compacted_revision == again.mod_revision


@server
@pytest.mark.e2e
async def test_history_larger_than_etcds_request_limit_arrives_whole(store_url: str) -> None:
    # etcd splits a watch response over its request limit (1.5 MiB) into fragments.
    async with await open_store(store_url, compaction_interval=0) as store:
        start = await store.current_revision()
        values = [bytes([65 + i]) * (1024 * 1024) for i in range(6)]
        for i, value in enumerate(values):
            await store.create(f"/registry/cm/ns/big{i}", value)
        watch = store.watch("/registry/cm/", start)
        got = []
        async with asyncio.timeout(TIMEOUT):
            async for event in watch:
                got.append(event.kv.value)
                if len(got) == len(values):
                    break
        await watch.aclose()
        assert got == values


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[EtcdCluster]:
    try:
        cluster = EtcdCluster(1, tls=True)
    except EtcdUnavailable as error:
        pytest.skip(f"etcd not available: {error}")
    yield cluster
    cluster.stop()


@pytest.mark.e2e
async def test_tls_with_a_client_certificate(tls_cluster: EtcdCluster) -> None:
    async with await open_store(tls_cluster.url("/tls"), compaction_interval=0) as store:
        kv = await store.create("/registry/cm/ns/a", b"1")
        assert (await store.get("/registry/cm/ns/a")) == kv


@pytest.mark.e2e
async def test_tls_without_the_client_certificate_is_refused(
        tls_cluster: EtcdCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd_store, "OPEN_TIMEOUT", 1)
    ca = tls_cluster.client_files()["cafile"]
    url = f"etcd://{tls_cluster.endpoints}/tls?cafile={ca}"
    with pytest.raises(StoreError, match="cannot open the store etcd://.*/tls \\(TLS\\)"):
        await open_store(url)
