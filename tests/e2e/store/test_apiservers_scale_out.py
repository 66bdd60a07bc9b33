"""Three `draemu apiserver` processes on one store, a PostgreSQL database or a cluster of
three etcd members, sharing one PKI (`--pki-dir`): one kubeconfig and one service-account
token serve for all of them; a watch through one sees every write made through the
others, once each and in order; when one is killed (SIGKILL) mid-load, clients that
round-robin over the three fail over without losing a write the apiservers acknowledged;
and on etcd, so they do when the etcd leader is killed mid-load."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from draemu.client import config
from draemu.cmd.testing.etcd import EtcdCluster, EtcdUnavailable
from draemu.cmd.testing.postgres import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
CONFIGMAPS = "/api/v1/namespaces/{}/configmaps"
START_TIMEOUT = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Apiservers:
    """`draemu apiserver` processes, each with its own data dir, on one store and one
    PKI folder."""

    def __init__(self, base: Path, store_url: str, count: int) -> None:
        self.pki = base / "pki"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.killed: set[int] = set()
        self.urls: list[str] = []
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
        for i in range(count):
            port = _free_port()
            log = open(base / f"apiserver-{i}.log", "wb")  # the child keeps its copy
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "draemu", "apiserver", "--data-dir",
                 str(base / f"data-{i}"), "--pki-dir", str(self.pki), "--store", store_url,
                 "--port", str(port), "--log-format", "json"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=ROOT))
            log.close()
            self.urls.append(f"https://127.0.0.1:{port}")
        self.base = base

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig the first apiserver wrote (it names the first URL)."""
        return self.base / "data-0" / "kubeconfig"

    async def wait_ready(self, session: aiohttp.ClientSession) -> None:
        async with asyncio.timeout(START_TIMEOUT):
            for i, url in enumerate(self.urls):
                while i not in self.killed:
                    if self.procs[i].poll() is not None:
                        raise AssertionError((self.base / f"apiserver-{i}.log").read_text())
                    try:
                        async with session.get(url + "/readyz") as r:
                            if r.status == 200:
                                break
                    except (aiohttp.ClientError, OSError):
                        pass
                    await asyncio.sleep(0.1)

    def kill(self, i: int) -> None:
        self.killed.add(i)
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class RoundRobin:
    """A client of several apiservers: each request goes to the next one; one that
    cannot be reached (connection refused or dropped) is skipped, as a client behind a
    balancer would see."""

    def __init__(self, session: aiohttp.ClientSession, urls: list[str]) -> None:
        self.session = session
        self.urls = urls
        self.next = 0

    async def request(self, method: str, path: str, body: Any = None
                      ) -> tuple[int, dict[str, Any]]:
        last: BaseException | None = None
        for _ in range(3 * len(self.urls)):
            url = self.urls[self.next % len(self.urls)]
            self.next += 1
            try:
                async with self.session.request(method, url + path, json=body) as r:
                    return r.status, await r.json()
            except (aiohttp.ClientConnectionError, OSError) as e:
                last = e
                await asyncio.sleep(0.05)
        raise AssertionError(f"no apiserver answered: {last!r}")


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": data}


@pytest.fixture(scope="module", params=["postgresql", "etcd"])
def etcd(request: pytest.FixtureRequest) -> Iterator[EtcdCluster | None]:
    """The store's servers: PostgreSQL's (the session's), or three etcd members of this
    module's, durable (etcd's fsync on)."""
    if request.param == "postgresql":
        yield None
        return
    try:
        members = EtcdCluster(3, fsync=True)
    except EtcdUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"etcd is required in CI: {error}")
        pytest.skip(f"etcd not available: {error}")
    try:
        yield members
    finally:
        members.stop()


@pytest.fixture(scope="module")
def cluster(etcd: EtcdCluster | None, request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apiservers]:
    """One set of three for the module and store (the last tests kill one apiserver,
    then an etcd member)."""
    if etcd is None:
        postgres: PostgresServer = request.getfixturevalue("postgres_server")
        url = postgres.create_database("scaleout")
    else:
        url = etcd.url("/scaleout")
    servers = Apiservers(tmp_path_factory.mktemp("scaleout"), url, 3)
    try:
        yield servers
    finally:
        servers.stop()


@pytest.fixture
async def session(cluster: Apiservers) -> AsyncIterator[aiohttp.ClientSession]:
    # Until the first apiserver wrote its kubeconfig, the PKI may not exist yet.
    async with asyncio.timeout(START_TIMEOUT):
        while not cluster.kubeconfig.exists():
            assert cluster.procs[0].poll() is None, "apiserver 0 exited"
            await asyncio.sleep(0.1)
    # One kubeconfig, that of the first apiserver, for all three.
    ssl = config.load(cluster.kubeconfig).ssl_context()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl),
                                     timeout=aiohttp.ClientTimeout(total=30)) as s:
        await cluster.wait_ready(s)
        yield s


async def namespace(session: aiohttp.ClientSession, url: str, name: str) -> str:
    async with session.post(url + "/api/v1/namespaces", json={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}) as r:
        assert r.status == 201, await r.text()
    return CONFIGMAPS.format(name)


async def watch(session: aiohttp.ClientSession, urls: list[str], path: str,
                resource_version: str, seen: list[tuple[int, str, str]],
                stop: asyncio.Event) -> None:
    """Watch ConfigMaps from `resource_version` through urls[0]; when its connection
    drops, resume from the last event seen through the next apiserver."""
    rv, which = resource_version, 0
    while not stop.is_set():
        url = urls[which % len(urls)]
        try:
            async with session.get(url + path, params={
                    "watch": "1", "resourceVersion": rv},
                    timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as r:
                assert r.status == 200, await r.text()
                async for line in r.content:
                    event = json.loads(line)
                    meta = event["object"]["metadata"]
                    seen.append((int(meta["resourceVersion"]), event["type"], meta["name"]))
                    rv = meta["resourceVersion"]
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError):
            pass
        which += 1
        await asyncio.sleep(0.05)


async def test_one_kubeconfig_and_one_token_for_every_apiserver(
        cluster: Apiservers, session: aiohttp.ClientSession) -> None:
    first, second, third = cluster.urls
    async with session.post(first + "/api/v1/namespaces/default/serviceaccounts",
                            json={"apiVersion": "v1", "kind": "ServiceAccount",
                                  "metadata": {"name": "robot"}}) as r:
        assert r.status == 201, await r.text()
    # The second apiserver learns of the ServiceAccount from its watch of the store:
    # until then its GET (served from its watch cache) may not find it.
    async with asyncio.timeout(30):
        while True:
            async with session.post(
                    second + "/api/v1/namespaces/default/serviceaccounts/robot/token",
                    json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                          "spec": {}}) as r:
                if r.status != 404:
                    assert r.status == 201, await r.text()
                    token = (await r.json())["status"]["token"]
                    break
            await asyncio.sleep(0.05)
    # The token alone (a client certificate would take precedence), trusting the CA of
    # the first apiserver's kubeconfig.
    ca = ssl.create_default_context(cadata=(cluster.pki / "ca.crt").read_text())
    assert config.load(cluster.kubeconfig).ca_data == (cluster.pki / "ca.crt").read_bytes()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ca)) as bearer:
        for url in (first, second, third):
            async with bearer.post(
                    url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    json={"apiVersion": "authentication.k8s.io/v1",
                          "kind": "SelfSubjectReview"},
                    headers={"Authorization": f"Bearer {token}"}) as r:
                assert r.status == 201, await r.text()
                user = (await r.json())["status"]["userInfo"]["username"]
                assert user == "system:serviceaccount:default:robot"


async def test_watch_through_one_sees_writes_through_the_others_in_order(
        cluster: Apiservers, session: aiohttp.ClientSession) -> None:
    writers = [RoundRobin(session, [url]) for url in cluster.urls[1:]]
    path = await namespace(session, cluster.urls[1], "in-order")
    async with session.get(cluster.urls[0] + path) as r:
        start = (await r.json())["metadata"]["resourceVersion"]
    seen: list[tuple[int, str, str]] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch(session, cluster.urls[:1], path, start, seen, stop))

    async def write(client: RoundRobin, prefix: str) -> list[int]:
        versions = []
        for i in range(40):
            status, body = await client.request("POST", path, configmap(f"{prefix}-{i}"))
            assert status == 201, body
            versions.append(int(body["metadata"]["resourceVersion"]))
        return versions

    written = await asyncio.gather(*(write(w, f"w{n}") for n, w in enumerate(writers)))
    expected = sorted(v for vs in written for v in vs)
    async with asyncio.timeout(30):
        while len(seen) < len(expected):
            await asyncio.sleep(0.05)
    stop.set()
    watcher.cancel()
    assert [rv for rv, _, _ in seen] == expected  # each once, in resourceVersion order
    assert {t for _, t, _ in seen} == {"ADDED"}


async def test_clients_fail_over_when_an_apiserver_is_killed_mid_load(
        cluster: Apiservers, session: aiohttp.ClientSession) -> None:
    path = await namespace(session, cluster.urls[2], "fail-over")
    async with session.get(cluster.urls[1] + path) as r:
        start = (await r.json())["metadata"]["resourceVersion"]
    seen: list[tuple[int, str, str]] = []
    stop = asyncio.Event()
    # The watch goes through the apiserver that is killed, then resumes through another.
    watcher = asyncio.create_task(
        watch(session, [cluster.urls[1], cluster.urls[2], cluster.urls[0]], path, start,
              seen, stop))
    acknowledged: dict[str, int] = {}
    killed = asyncio.Event()

    async def write(client: RoundRobin, prefix: str) -> None:
        for i in range(60):
            name = f"{prefix}-{i}"
            status, body = await client.request("POST", path, configmap(name))
            # A create whose answer was lost with the killed apiserver and that is sent
            # again finds the object: it was written.
            assert status in (201, 409), body
            if status == 201:
                acknowledged[name] = int(body["metadata"]["resourceVersion"])
            if len(acknowledged) >= 100 and not killed.is_set():
                killed.set()
                cluster.kill(1)

    await asyncio.gather(*(write(RoundRobin(session, cluster.urls[n:] + cluster.urls[:n]),
                                 f"w{n}") for n in range(3)))
    assert killed.is_set() and cluster.procs[1].poll() is not None
    survivor = RoundRobin(session, [cluster.urls[0], cluster.urls[2]])
    status, listed = await survivor.request("GET", path)
    assert status == 200
    stored = {item["metadata"]["name"]: int(item["metadata"]["resourceVersion"])
              for item in listed["items"]}
    assert len(stored) == 180
    for name, rv in acknowledged.items():
        assert stored[name] == rv, name
    async with asyncio.timeout(30):
        while len(seen) < len(stored):
            await asyncio.sleep(0.05)
    stop.set()
    watcher.cancel()
    assert [rv for rv, _, _ in seen] == sorted(stored.values())
    assert [name for _, _, name in seen] == sorted(stored, key=stored.__getitem__)
    print(f"apiserver killed: {len(acknowledged)} of 180 creates acknowledged, all stored; "
          f"the watch saw {len(seen)} events, no gap, no repeat")


async def create(client: RoundRobin, path: str, name: str) -> int | None:
    """Create a ConfigMap, again while the store is unavailable (the apiserver answers
    500: the write may or may not have been applied); its resourceVersion when the
    apiservers acknowledged it, None when a try that failed had written it (409)."""
    while True:
        status, body = await client.request("POST", path, configmap(name))
        if status == 201:
            return int(body["metadata"]["resourceVersion"])
        if status == 409:
            return None
        assert status in (500, 503, 504), body
        await asyncio.sleep(0.1)


async def test_no_acknowledged_write_is_lost_when_the_etcd_leader_is_killed_mid_load(
        etcd: EtcdCluster | None, cluster: Apiservers,
        session: aiohttp.ClientSession) -> None:
    if etcd is None:
        pytest.skip("an etcd drill")
    live = [url for url, p in zip(cluster.urls, cluster.procs, strict=True) if p.poll() is None]
    path = await namespace(session, live[0], "member-killed")
    async with session.get(live[0] + path) as r:
        start = (await r.json())["metadata"]["resourceVersion"]
    seen: list[tuple[int, str, str]] = []
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch(session, live, path, start, seen, stop))
    acknowledged: dict[str, int] = {}
    killed: list[str] = []
    loop = asyncio.get_running_loop()

    async def write(client: RoundRobin, prefix: str) -> None:
        for i in range(60):
            rv = await create(client, path, f"{prefix}-{i}")
            if rv is not None:
                acknowledged[f"{prefix}-{i}"] = rv
            if len(acknowledged) >= 60 and not killed:
                leader = etcd.leader()
                killed.append(leader.name)
                await loop.run_in_executor(None, etcd.kill, leader)

    started = loop.time()
    await asyncio.gather(*(write(RoundRobin(session, live[n:] + live[:n]), f"w{n}")
                           for n in range(3)))
    elapsed = loop.time() - started
    assert killed, "the leader was never killed"
    status, listed = await RoundRobin(session, live).request("GET", path)
    assert status == 200
    stored = {item["metadata"]["name"]: int(item["metadata"]["resourceVersion"])
              for item in listed["items"]}
    assert len(stored) == 180
    for name, rv in acknowledged.items():
        assert stored[name] == rv, name
    async with asyncio.timeout(60):
        while len(seen) < len(stored):
            await asyncio.sleep(0.05)
    stop.set()
    watcher.cancel()
    assert [rv for rv, _, _ in seen] == sorted(stored.values())  # no gap, no repeat
    print(f"etcd leader {killed[0]} killed: {len(acknowledged)} of 180 creates "
          f"acknowledged, all stored; {elapsed:.1f} s for 180 creates")
