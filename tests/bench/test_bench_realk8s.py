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


def claim(name: str, *results: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"allocation": {"devices": {"results": list(results)}}}}


def result(pool: str, device: str, request: str = "gpu", **extra: Any) -> dict[str, Any]:
    return {"request": request, "driver": wl.DRIVER, "pool": pool, "device": device, **extra}


def test_every_workload_builds_its_objects_and_names_its_gates():
    for w in wl.WORKLOADS.values():
        slices = w.slices(3)
        assert slices and all(s["spec"]["nodeName"] == wl.node_name(3) for s in slices)
        assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {len(slices)}
        assert w.template["metadata"]["name"] == wl.TEMPLATE_NAME
        assert 1 <= w.default_pods(100) <= 1000
    assert wl.WORKLOADS["partitionable"].gates == ("DRAPartitionableDevices",)
    assert wl.WORKLOADS["consumable"].gates == ("DRAConsumableCapacity",)
    assert wl.WORKLOADS["prioritized"].gates == ("DRAPrioritizedList",)
    # a pool's counters cover what its devices consume
    counters, devices = wl.partitionable_slices(0)
    have = counters["spec"]["sharedCounters"][0]["counters"]
    for d in devices["spec"]["devices"]:
        assert set(d["consumesCounters"][0]["counters"]) <= set(have)


def test_exclusive_devices():
    assert wl.check_exclusive([claim("a", result("p", "d1")), claim("b", result("p", "d2"))]) == []
    assert wl.check_exclusive([claim("a", result("p", "d1")), claim("b", result("p", "d1"))]) \
        == [f"device {wl.DRIVER}/p/d1 allocated to both a and b"]


def test_partitionable_counters_and_match_attribute():
    good = claim("a", result("node-0", "two-counters-1"), result("node-0", "two-counters-2"))
    assert wl.check_partitionable([good]) == []
    # one-counter-1 takes counter1, which two-counters-1 of another claim holds already
    over = claim("b", result("node-0", "one-counter-1"), result("node-0", "one-counter-3"))
    problems = wl.check_partitionable([good, over])
    assert "pool node-0: counter1 consumed 2 times, it has 1" in problems
    split = claim("c", result("node-1", "two-counters-1"), result("node-2", "two-counters-1"))
    assert any("matchAttribute" in p for p in wl.check_partitionable([split]))
    assert any("1 devices allocated" in p
               for p in wl.check_partitionable([claim("d", result("node-3", "one-counter-1"))]))


def test_consumable_capacity_is_not_overcommitted():
    def shared(name: str, gi: int) -> dict[str, Any]:
        return claim(name, *(result("node-0", "shareable-0", f"mem-{k}",
                                    consumedCapacity={"memory": f"{gi}Gi"}, shareID=f"{name}{k}")
                             for k in range(2)))

    assert wl.check_consumable([shared(f"c{i}", 10) for i in range(4)]) == []  # 80Gi of 80Gi
    assert wl.check_consumable([shared(f"c{i}", 10) for i in range(5)]) == [
        "device node-0/shareable-0: 100Gi consumed of 80Gi"]
    bare = claim("x", result("node-0", "shareable-1", "mem-0"),
                 result("node-0", "shareable-1", "mem-1"))
    assert len(wl.check_consumable([bare])) == 2


def test_prioritized_list_takes_the_second_subrequest():
    assert wl.check_prioritized([claim("a", result("p", "d", "gpu/sub-1"))]) == []
    assert wl.check_prioritized([claim("a", result("p", "d", "gpu/sub-0"))]) != []


def test_prefill_leaves_the_last_devices_free():
    fill = wl.prefill_claims(nodes=2, free=3)
    assert len(fill) == 2 * wl.basic.DEVICES_PER_NODE - 3
    devices = {(st["allocation"]["devices"]["results"][0]["pool"],
                st["allocation"]["devices"]["results"][0]["device"]) for _, st in fill}
    assert len(devices) == len(fill) and ("node-00001", "gpu-7") not in devices


def test_ledger_sees_a_device_held_twice_and_forgets_deleted_claims():
    ledger = realk8s.Ledger(shared=False)
    ledger.update(claim("a", result("p", "d")))
    ledger.remove(claim("a"))
    ledger.update(claim("b", result("p", "d")))
    assert ledger.conflicts == []
    ledger.update(claim("c", result("p", "d")))
    assert ledger.conflicts == [f"{wl.DRIVER}/p/d: b and c"]
    # a claim deallocated in an update gives its device back
    ledger.update(claim("b"))
    ledger.update(claim("c"))
    ledger.update(claim("e", result("p", "d")))
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
