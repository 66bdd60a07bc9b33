"""bench/realk8s.py's own logic, without the real binaries: the workloads' checks of an
allocation, the device ledger of the churn workload, --workload parsing, the percentile,
and the round-robin TCP balancer of the pg3lb side."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


realk8s = _load("realk8s")
wl = realk8s.draworkloads
apiload = realk8s.apiload
tcpbalancer = _load("tcpbalancer")


DRIVER = "test-driver.cdi.k8s.io"


def claim(name: str, *results: dict[str, Any], requests: list[dict[str, Any]] | None = None,
          constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests or []}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"devices": devices},
            "status": {"allocation": {"devices": {"results": list(results)}}}}


def result(pool: str, device: str, request: str = "req-0", **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": DRIVER, "pool": pool, "device": device, **extra}


def a_slice(pool: str, devices: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": pool}, "spec": {
        "driver": DRIVER, "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
        "nodeName": pool, "devices": devices, **spec}}


def test_every_workload_plans_upstreams_operations_at_any_size():
    for w in wl.WORKLOADS.values():
        for nodes in (2, 60):
            plan = w.plan(nodes)
            made = wl.node_names(plan)
            assert len(made) == nodes and len(set(made)) == nodes
            measured = [op for op in plan if op.collect_metrics]
            assert len(measured) == 1 and measured[0].opcode == "createPods"
            assert 1 <= measured[0].count <= max(wl.MAX_POD_PHASE, nodes)
            assert measured[0].duration > 0 if measured[0].steady_state else True
            for op in plan:
                if op.template is not None and op.count:
                    obj = wl.objects(op, op.count - 1)
                    assert obj["apiVersion"] and obj["kind"], (w.name, op)
        assert w.measured(5000).count <= max(wl.MAX_POD_PHASE, 5000)
    assert wl.WORKLOADS["partitionable"].gates == ("DRAPartitionableDevices",)
    assert wl.WORKLOADS["podgroupclaim"].runtime_config == ("scheduling.k8s.io/v1beta1=true",)
    # "full": all devices but 10 allocated beforehand, at any size
    churn = {op.opcode + str(op.namespace): op for op in wl.WORKLOADS["churn"].plan(7)}
    assert churn["createAnyinit"].count == 7 * 10 - 10
    # upstream's ratio of 5 pods to a claim is kept
    claims = {(op.opcode, op.namespace): op.count for op in wl.WORKLOADS["claim"].plan(5000)}
    assert claims[("createPods", "test")] == 5 * claims[("createAny", "test")] == wl.MAX_POD_PHASE


def test_allocate_claims_spreads_claims_over_the_nodes_with_room_seeded():
    w = wl.WORKLOADS["template"]
    plan = w.plan(6)
    by_template = {op.template.name: op for op in plan if op.template is not None}
    nodes = [wl.objects(by_template["node-with-dra-test-driver.yaml"], i) for i in range(6)]
    slices = [wl.objects(by_template["resourceslice-basic-devices.yaml"], i) for i in range(6)]
    classes = [wl.objects(by_template["deviceclass.yaml"], 0)]
    claims = [{**wl.objects(by_template["resourceclaim.yaml"], i)} for i in range(55)]
    for c in claims:
        c["metadata"]["namespace"] = "init"
    done = wl.allocate_claims(claims, nodes, classes, slices, [], w.gates)
    assert len(done) == 55
    assert done == wl.allocate_claims(claims, nodes, classes, slices, [], w.gates)
    allocated = [{**c, "status": {"allocation": a}} for c, a in done]
    assert wl.check_allocations(allocated, slices) == []
    assert len({c["status"]["allocation"]["devices"]["results"][0]["pool"]
                for c in allocated}) == 6
    more = [{**c, "metadata": {**c["metadata"], "name": f"more-{i}"}} for i, c in
            enumerate(claims[:6])]
    with pytest.raises(RuntimeError, match="no node has room"):
        wl.allocate_claims(more, nodes, classes, slices, allocated, w.gates)


def test_check_allocations_finds_what_is_wrong():
    devices = [{"name": f"d{i}", "attributes": {"root": {"string": str(i % 2)}}}
               for i in range(4)]
    s = a_slice("p", devices)
    one = [{"name": "req-0", "exactly": {"deviceClassName": "c"}}]
    assert wl.check_allocations([claim("a", result("p", "d0"), requests=one),
                                 claim("b", result("p", "d1"), requests=one)], [s]) == []
    assert wl.check_allocations([claim("a", result("p", "d1"), requests=one),
                                 claim("b", result("p", "d1"), requests=one)], [s]) == [
        f"device {DRIVER}/p/d1 allocated to both a and b"]
    assert wl.check_allocations([claim("a", result("p", "d9"))], [s]) == [
        f"a: device {DRIVER}/p/d9 does not exist"]
    two = [{"name": "req-0", "exactly": {"deviceClassName": "c", "count": 2}}]
    assert wl.check_allocations([claim("a", result("p", "d0"), requests=two)], [s]) == [
        "a: request req-0 got 1 devices, asked 2"]
    match = [{"matchAttribute": f"{DRIVER}/root"}]
    assert wl.check_allocations([claim("a", result("p", "d0"), result("p", "d2"),
                                       constraints=match)], [s]) == []
    assert "matchAttribute" in wl.check_allocations(
        [claim("a", result("p", "d0"), result("p", "d1"), constraints=match)], [s])[0]
    distinct = [{"distinctAttribute": f"{DRIVER}/root"}]
    assert "distinctAttribute" in wl.check_allocations(
        [claim("a", result("p", "d0"), result("p", "d2"), constraints=distinct)], [s])[0]


def test_check_allocations_counts_counters_and_capacity():
    counters = a_slice("p", [
        {"name": f"d{i}", "consumesCounters": [{"counterSet": "set", "counters": {
            "mem": {"value": "10Gi"}}}]} for i in range(3)],
        sharedCounters=[{"name": "set", "counters": {"mem": {"value": "20Gi"}}}])
    assert wl.check_allocations([claim("a", result("p", "d0")),
                                 claim("b", result("p", "d1"))], [counters]) == []
    assert wl.check_allocations([claim("a", result("p", "d0")), claim("b", result("p", "d1")),
                                 claim("c", result("p", "d2"))], [counters]) == [
        f"counter {DRIVER}/p/set/mem: 32212254720 consumed of 21474836480"]
    shared = a_slice("q", [{"name": "s", "allowMultipleAllocations": True,
                            "capacity": {"bw": {"value": "10G"}}}])

    def share(name: str, amount: str) -> dict[str, Any]:
        return claim(name, result("q", "s", shareID=name, consumedCapacity={"bw": amount}))

    assert wl.check_allocations([share(f"c{i}", "2500M") for i in range(4)], [shared]) == []
    assert wl.check_allocations([share(f"c{i}", "2500M") for i in range(5)], [shared]) == [
        f"capacity {DRIVER}/q/s/bw: 12500000000 consumed of 10G"]


def test_ledger_sees_a_device_held_twice_and_forgets_deleted_claims():
    ledger = realk8s.Ledger()
    ledger.update(claim("a", result("p", "d")))
    ledger.remove(claim("a"))
    ledger.update(claim("b", result("p", "d")))
    assert ledger.conflicts == []
    ledger.update(claim("c", result("p", "d")))
    assert ledger.conflicts == [f"{DRIVER}/p/d: ns/b and ns/c"]
    # a claim deallocated in an update gives its device back
    ledger.update(claim("b"))
    ledger.update(claim("c"))
    ledger.update(claim("e", result("p", "d")))
    assert len(ledger.conflicts) == 1
    # shares of one device are not conflicts
    ledger.update(claim("f", result("p", "s", shareID="1")))
    ledger.update(claim("g", result("p", "s", shareID="2")))
    assert len(ledger.conflicts) == 1


def test_workload_selection():
    assert realk8s.select_workloads("template") == (["template"], [])
    assert realk8s.select_workloads("watch,churn,list") == (["churn"], ["list", "watch"])
    assert realk8s.select_workloads("all") == (list(wl.WORKLOADS), realk8s.API_STEPS)
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        realk8s.select_workloads("template,nope")


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert apiload.percentile(values, 50) == 50.0
    assert apiload.percentile(values, 99) == 99.0
    assert apiload.percentile([3.0, 1.0, 2.0], 99) == 3.0


async def test_balancer_gives_connections_to_the_backends_in_turn():
    seen: list[str] = []

    def backend(name: str) -> Any:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            data = await reader.readline()
            seen.append(name)
            writer.write(name.encode() + b":" + data)
            await writer.drain()
            writer.close()
        return handle

    servers = [await asyncio.start_server(backend(n), "127.0.0.1", 0) for n in "abc"]
    ports = [s.sockets[0].getsockname()[1] for s in servers]
    servers[1].close()  # b refuses: its turns go to the next one
    await servers[1].wait_closed()
    balancer = tcpbalancer.Balancer([("127.0.0.1", p) for p in ports])
    front = await balancer.serve("127.0.0.1", 0)
    port = front.sockets[0].getsockname()[1]
    answers = []
    for i in range(4):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"hello %d\n" % i)
        await writer.drain()
        answers.append(await reader.read())
        writer.close()
    assert answers == [b"a:hello 0\n", b"c:hello 1\n", b"a:hello 2\n", b"c:hello 3\n"]
    assert balancer.connections == [2, 0, 2]
    front.close()
    for s in servers:
        s.close()
