"""API Priority and Fairness on a real apiserver: the bootstrap configuration, its
restoration, classification headers, rejection with 429 and Retry-After, and fairness
between flows (a client flooding LISTs does not hold another client's or a node's
requests up)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from apiclient import CM, Client, configmap, ssl_context_for

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import start_apiserver

pytestmark = pytest.mark.unit
FC = "/apis/flowcontrol.apiserver.k8s.io/v1"


def _level(name: str, shares: int, queuing: dict | None) -> dict:
    response = {"type": "Queue", "queuing": queuing} if queuing else {"type": "Reject"}
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                                                    "limitResponse": response}}}


def _schema(name: str, level: str, group: str) -> dict:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 500,
                     "distinguisherMethod": {"type": "ByUser"},
                     "rules": [{"subjects": [{"kind": "Group", "group": {"name": group}}],
                                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                                   "resources": ["*"], "namespaces": ["*"],
                                                   "clusterScope": True}]}]}}


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[APIServer]:
    s = await start_apiserver(tmp_path / "s", apf_ensure_interval=0.2)
    try:
        yield s
    finally:
        await s.stop()


class Users:
    """Clients with their own certificates (user, groups) on one server."""

    def __init__(self, server: APIServer, tmp: Path, session: aiohttp.ClientSession) -> None:
        self.server, self.tmp, self.session = server, tmp, session

    def client(self, user: str, *groups: str) -> Client:
        path = self.server.write_kubeconfig(self.tmp / f"{user}.kubeconfig", user=user,
                                            groups=list(groups))
        return Client(self.server.url, self.session, ssl_context_for(path))


@pytest_asyncio.fixture
async def users(server: APIServer, tmp_path: Path) -> AsyncIterator[Users]:
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield Users(server, tmp_path, session)


async def _admin(users: Users) -> Client:
    return Client(users.server.url, users.session, ssl_context_for(users.server.kubeconfig_path))


async def test_bootstrap_configuration_is_served_and_mandatory_objects_come_back(
        users: Users) -> None:
    admin = await _admin(users)
    levels = {i["metadata"]["name"] for i in
              (await admin.get(f"{FC}/prioritylevelconfigurations")).json["items"]}
    assert levels == {"exempt", "catch-all", "system", "node-high", "leader-election",
                      "workload-high", "workload-low", "global-default"}
    schemas = (await admin.get(f"{FC}/flowschemas")).json["items"]
    assert {i["metadata"]["name"] for i in schemas} == {
        "exempt", "catch-all", "probes", "system-nodes", "system-node-high",
        "system-leader-election", "kube-controller-manager", "kube-scheduler",
        "kube-system-service-accounts", "service-accounts", "global-default"}
    assert all(i["metadata"]["annotations"] == {"apf.kubernetes.io/autoupdate-spec": "true"}
               for i in schemas)
    deleted = await admin.delete(f"{FC}/flowschemas/catch-all")
    assert deleted.status == 200
    assert (await admin.delete(f"{FC}/prioritylevelconfigurations/exempt")).status == 200
    # A suggested schema an administrator took over (auto-update off) is left alone.
    took_over = (await admin.get(f"{FC}/flowschemas/service-accounts")).json
    took_over["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] = "false"
    took_over["spec"]["matchingPrecedence"] = 8000
    del took_over["metadata"]["resourceVersion"]
    assert (await admin.put(f"{FC}/flowschemas/service-accounts", took_over)).status == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        found = await admin.get(f"{FC}/flowschemas/catch-all")
        level = await admin.get(f"{FC}/prioritylevelconfigurations/exempt")
        if found.status == 200 and level.status == 200:
            break
        await asyncio.sleep(0.1)
    assert found.status == 200 and found.json["metadata"]["uid"] != \
        deleted.json["details"]["uid"]
    assert level.status == 200 and level.json["spec"]["type"] == "Exempt"
    kept = (await admin.get(f"{FC}/flowschemas/service-accounts")).json
    assert kept["spec"]["matchingPrecedence"] == 8000


async def test_mandatory_spec_and_bad_objects_are_refused_with_causes(users: Users) -> None:
    admin = await _admin(users)
    exempt = (await admin.get(f"{FC}/flowschemas/exempt")).json
    exempt["spec"]["matchingPrecedence"] = 5
    del exempt["metadata"]["resourceVersion"]  # the status may move meanwhile
    refused = await admin.put(f"{FC}/flowschemas/exempt", exempt)
    assert refused.status == 422
    assert [c["field"] for c in refused.json["details"]["causes"]] == ["spec"]
    assert "spec of 'exempt' must equal the fixed value" in refused.json["message"]
    bad = _level("bad", -1, {"queues": 4, "handSize": 8, "queueLengthLimit": 10})
    refused = await admin.post(f"{FC}/prioritylevelconfigurations", bad)
    assert refused.status == 422
    assert {(c["field"], c["message"]) for c in refused.json["details"]["causes"]} == {
        ("spec.limited.nominalConcurrencyShares",
         "Invalid value: -1: must be a non-negative integer"),
        ("spec.limited.limitResponse.queuing.handSize",
         "Invalid value: 8: should not be greater than queues (4)")}


async def test_responses_name_their_flow_schema_and_priority_level(users: Users) -> None:
    admin = await _admin(users)
    schemas = {i["metadata"]["uid"]: i["metadata"]["name"]
               for i in (await admin.get(f"{FC}/flowschemas")).json["items"]}
    levels = {i["metadata"]["uid"]: i["metadata"]["name"]
              for i in (await admin.get(f"{FC}/prioritylevelconfigurations")).json["items"]}

    def classified(reply: object) -> tuple[str, str]:
        headers = reply.headers  # type: ignore[attr-defined]
        return (schemas[headers["X-Kubernetes-PF-FlowSchema-UID"]],
                levels[headers["X-Kubernetes-PF-PriorityLevel-UID"]])

    assert classified(await admin.get(CM)) == ("exempt", "exempt")
    node = users.client("system:node:n1", "system:nodes")
    assert classified(await node.get("/api/v1/nodes/n1")) == ("system-node-high", "node-high")
    assert classified(await node.get(CM)) == ("system-nodes", "system")
    someone = users.client("alice", "dev")
    reply = await someone.get(CM)
    assert reply.status == 403  # classified before it is authorized, as upstream
    assert classified(reply) == ("global-default", "global-default")
    assert classified(await someone.get("/readyz")) == ("probes", "exempt")
    assert "X-Kubernetes-PF-FlowSchema-UID" not in (
        await someone.get(f"{CM.replace('configmaps', 'pods')}/p/log")).headers


async def _fill(admin: Client, count: int) -> None:
    payload = "x" * 2000
    for start in range(0, count, 50):
        replies = await asyncio.gather(*(admin.post(CM, configmap(f"cm-{i}", data=payload))
                                         for i in range(start, min(start + 50, count))))
        assert all(r.status == 201 for r in replies)


async def _grant_reads(admin: Client, group: str) -> None:
    for kind, body in (("clusterroles", {"rules": [{"apiGroups": [""], "resources": [
            "configmaps"], "verbs": ["get", "list"]}]}),
            ("clusterrolebindings", {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                 "kind": "ClusterRole", "name": "readers"},
                                     "subjects": [{"kind": "Group", "name": group,
                                                   "apiGroup": "rbac.authorization.k8s.io"}]})):
        reply = await admin.post(f"/apis/rbac.authorization.k8s.io/v1/{kind}",
                                 {"metadata": {"name": "readers"}, **body})
        assert reply.status == 201, reply.json


async def test_a_level_that_rejects_answers_429_with_retry_after(users: Users) -> None:
    admin = await _admin(users)
    await _grant_reads(admin, "tiny")
    await _fill(admin, 300)
    level = await admin.post(f"{FC}/prioritylevelconfigurations", _level("tiny", 1, None))
    schema = await admin.post(f"{FC}/flowschemas", _schema("tiny", "tiny", "tiny"))
    assert level.status == 201 and schema.status == 201
    await asyncio.sleep(0.1)  # the configuration follows the watch cache
    client = users.client("bob", "tiny")
    # Open the connections first (/version is not the tiny level's), so that the lists
    # arrive together.
    await asyncio.gather(*(client.get("/version") for _ in range(40)))
    replies = await asyncio.gather(*(client.get(CM) for _ in range(40)))
    assert {r.status for r in replies} == {200, 429}
    refused = next(r for r in replies if r.status == 429)
    assert refused.headers["Retry-After"] in {str(n) for n in range(1, 33)}
    assert refused.json["reason"] == "TooManyRequests"
    assert refused.json["message"] == "Too many requests, please try again later."
    assert refused.headers["X-Kubernetes-PF-FlowSchema-UID"] == schema.json["metadata"]["uid"]
    assert refused.headers["X-Kubernetes-PF-PriorityLevel-UID"] == \
        level.json["metadata"]["uid"]
    metrics = (await admin.get("/metrics")).body.decode()
    assert 'apiserver_flowcontrol_rejected_requests_total{flow_schema="tiny",' \
        'priority_level="tiny",reason="concurrency-limit"}' in metrics
    # An administrator is exempt whatever the others do.
    assert (await admin.get(CM)).status == 200


# The flooding client is another process, as it would be: its own reading of the
# responses must not share the server's event loop.
def _bench_flood_script() -> str:
    """bench/flowcontrol.py's flooding client (opens its connections first: TLS
    handshakes are not what is measured; then sends its LISTs together)."""
    path = Path(__file__).resolve().parents[2] / "bench" / "flowcontrol.py"
    spec = importlib.util.spec_from_file_location("bench_flowcontrol", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.FLOOD)


_FLOOD = _bench_flood_script()


async def _start_flood(server: APIServer, tmp: Path, user: str, group: str,
                       count: int) -> asyncio.subprocess.Process:
    pair = server.issue_client_certificate(user, [group])
    cert, key, ca = tmp / f"{user}.crt", tmp / f"{user}.key", tmp / "ca.crt"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    assert server.pki is not None
    ca.write_bytes(server.pki.ca.cert_pem)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _FLOOD, f"{server.url}{CM}", str(cert), str(key), str(ca),
        str(count), stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    assert (await proc.stdout.readline()).strip() == b"started"
    return proc


async def _light_requests_during(flood: asyncio.subprocess.Process, light: Client,
                                 node: Client) -> tuple[list[float], list[float], float]:
    started = time.perf_counter()
    light_seconds, node_seconds = [], []
    while flood.returncode is None:
        t0 = time.perf_counter()
        assert (await light.get(f"{CM}/cm-1")).status == 200
        t1 = time.perf_counter()
        await node.get("/api/v1/nodes/n1")
        light_seconds.append(t1 - t0)
        node_seconds.append(time.perf_counter() - t1)
        try:
            await asyncio.wait_for(asyncio.shield(flood.wait()), 0.01)
        except TimeoutError:
            pass
    assert flood.stdout is not None
    assert (await flood.stdout.read()).strip() == b"200"
    return light_seconds, node_seconds, time.perf_counter() - started


@pytest.mark.slow
async def test_a_flood_of_lists_does_not_hold_up_another_user_or_a_node(
        users: Users, tmp_path: Path) -> None:
    admin = await _admin(users)
    await _grant_reads(admin, "tenants")
    await _fill(admin, 400)
    await admin.post(f"{FC}/prioritylevelconfigurations", _level(
        "tenants", 1, {"queues": 16, "handSize": 2, "queueLengthLimit": 200}))
    await admin.post(f"{FC}/flowschemas", _schema("tenants", "tenants", "tenants"))
    await asyncio.sleep(0.1)
    light = users.client("light", "tenants")
    node = users.client("system:node:n1", "system:nodes")
    # Their connections are open, as a scheduler's or a kubelet's would be.
    assert (await light.get(f"{CM}/cm-1")).status == 200
    await node.get("/api/v1/nodes/n1")
    # 200 lists: long enough (about a second here) that a few light requests fit in it on a
    # faster or a busier machine.
    flood = await _start_flood(users.server, tmp_path, "flooder", "tenants", 200)
    light_seconds, node_seconds, makespan = await _light_requests_during(flood, light, node)
    assert len(light_seconds) >= 3, (makespan, light_seconds, node_seconds)
    # The flood waits in its own queues: a light request waits for the few lists that
    # hold the level's seats, not for the whole flood (without APF the first light
    # request waits for most of it: 80-85% of the flood's time here).
    assert max(light_seconds) < makespan / 2, (makespan, light_seconds)
    assert max(node_seconds) < makespan / 2, (makespan, node_seconds)


async def test_a_schema_naming_no_level_is_dangling(users: Users) -> None:
    admin = await _admin(users)
    created = await admin.post(f"{FC}/flowschemas", _schema("orphan", "nowhere", "tenants"))
    assert created.status == 201
    wanted = {"type": "Dangling", "status": "True", "reason": "NotFound",
              "message": 'This FlowSchema references the PriorityLevelConfiguration object '
                         'named "nowhere" but there is no such object'}
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        status = (await admin.get(f"{FC}/flowschemas/orphan")).json.get("status") or {}
        conditions = [{k: c[k] for k in wanted} for c in status.get("conditions") or []]
        if conditions == [wanted]:
            break
        await asyncio.sleep(0.05)
    assert conditions == [wanted]
    # Its requests fall through to the next matching schema.
    tenant = users.client("carol", "tenants")
    reply = await tenant.get("/version")
    assert reply.headers["X-Kubernetes-PF-FlowSchema-UID"] != created.json["metadata"]["uid"]


async def test_a_watch_holds_its_seat_only_while_it_starts(users: Users) -> None:
    admin = await _admin(users)
    node = users.client("system:node:n1", "system:nodes")
    async with users.session.get(f"{users.server.url}/api/v1/pods?watch=true"
                                 "&fieldSelector=spec.nodeName%3Dn1",
                                 ssl=node.ssl) as watch:
        assert watch.status == 200
        assert "X-Kubernetes-PF-PriorityLevel-UID" in watch.headers
        metrics = (await admin.get("/metrics")).body.decode()
        executing = [line for line in metrics.splitlines() if line.startswith(
            'apiserver_flowcontrol_current_executing_requests{flow_schema="system-nodes"')]
        assert executing == ['apiserver_flowcontrol_current_executing_requests'
                             '{flow_schema="system-nodes",priority_level="system"} 0']
        # The /metrics request itself is the one read-only request under way.
        assert 'apiserver_current_inflight_requests{request_kind="readOnly"} 1' in metrics


async def test_an_auto_updated_object_no_longer_bootstrapped_is_removed(users: Users) -> None:
    admin = await _admin(users)
    old = _schema("workload-leader-election", "leader-election", "tenants")
    old["metadata"]["annotations"] = {"apf.kubernetes.io/autoupdate-spec": "true"}
    mine = _schema("mine", "global-default", "tenants")
    assert (await admin.post(f"{FC}/flowschemas", old)).status == 201
    assert (await admin.post(f"{FC}/flowschemas", mine)).status == 201
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if (await admin.get(f"{FC}/flowschemas/workload-leader-election")).status == 404:
            break
        await asyncio.sleep(0.1)
    assert (await admin.get(f"{FC}/flowschemas/workload-leader-election")).status == 404
    assert (await admin.get(f"{FC}/flowschemas/mine")).status == 200


def test_requests_before_the_configuration_is_read_find_the_mandatory_levels() -> None:
    """The listeners open before the controller reads its objects: a request then (a
    /readyz of an apiserver starting up) is classified by the mandatory configuration,
    not refused with KeyError 'catch-all' (seen as a 500 during a start-up)."""
    from draemu.apiserver.flowcontrol.controller import FlowControl
    from draemu.apiserver.registry import discover
    from draemu.apiserver.registry.resources import ResourceTable
    from draemu.features import FeatureGates

    control = FlowControl(ResourceTable(discover(), FeatureGates()), None, 600)  # type: ignore[arg-type]
    assert {"catch-all", "exempt"} <= set(control.levels)
    assert {s.name for s in control.classifier.schemas} >= {"catch-all", "exempt"}
