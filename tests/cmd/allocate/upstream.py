"""Builders for the transcription of upstream's allocator test table
(k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting) into
`draemu allocate` fixtures. `make_cases.py` turns the table into YAML files under
cases/; the tests read only those files.

The helpers build resource.k8s.io/v1 objects with the defaults the upstream helpers
use (one slice per pool, generation 1, node labels region/planet).
"""

from __future__ import annotations

from typing import Any

REGION, PLANET, EARTH = "region", "planet", "earth"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
ALL_NODES, PER_DEVICE = "<all-nodes>", "<per-device>"
INT_ATTR, VERSION_ATTR = f"{DRIVER_A}/numa", f"{DRIVER_A}/driverVersion"
STRING_ATTR, BOOL_ATTR = f"{DRIVER_A}/stringAttribute", f"{DRIVER_A}/boolAttribute"
MISSING_ATTR = f"{DRIVER_A}/NonExistentAttribute"


def api(kind: str, name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, **meta}, "spec": spec}


def sel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def mem_at_least(size: str, driver: str = DRIVER_A) -> dict[str, Any]:
    return sel(f'device.capacity["{driver}"].memory.compareTo(quantity("{size}")) >= 0')


def opaque(driver: str, attribute: str) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def device_class(name: str, driver: str, config: str | None = None,
                 multi: bool | None = None, expression: str | None = None) -> dict[str, Any]:
    if expression is None:
        expression = f'device.driver == "{driver}"'
        if multi is not None:
            expression += f" && device.allowMultipleAllocations == {str(multi).lower()}"
    spec: dict[str, Any] = {"selectors": [sel(expression)]}
    if config:
        spec["config"] = [opaque(driver, config)]
    return api("DeviceClass", name, spec)


def request(name: str, cls: str, count: int = 1, *selectors: dict[str, Any],
            **extra: Any) -> dict[str, Any]:
    exact: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount",
                             "count": count}
    if selectors:
        exact["selectors"] = list(selectors)
    exact.update(extra)
    return {"name": name, "exactly": exact}


def all_request(name: str, cls: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All",
                                      **extra}}


def sub(name: str, cls: str, count: int = 1, *selectors: dict[str, Any],
        **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "deviceClassName": cls,
                           "allocationMode": "ExactCount", "count": count}
    if selectors:
        out["selectors"] = list(selectors)
    out.update(extra)
    return out


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict[str, Any], constraints: list[dict[str, Any]] | None = None,
          config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints is not None:
        devices["constraints"] = constraints
    if config is not None:
        devices["config"] = config
    return api("ResourceClaim", name, {"devices": devices})


def simple_claim(name: str, req: str, cls: str, *constraints: dict[str, Any]) -> dict[str, Any]:
    return claim(name, request(req, cls, 1), constraints=list(constraints) or None)


def claim_config(requests: list[str] | None, driver: str, attribute: str) -> dict[str, Any]:
    out: dict[str, Any] = opaque(driver, attribute)
    if requests:
        out = {"requests": requests, **out}
    return out


def match(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def distinct(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"distinctAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def attrs(**values: Any) -> dict[str, Any]:
    """Attributes from keyword args: str → string, bool → bool, int → int; a value
    ("version", "1.0.0") → version; lists → ints/strings/..."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, tuple):
            out[k] = {v[0]: v[1]}
        elif isinstance(v, bool):
            out[k] = {"bool": v}
        elif isinstance(v, int):
            out[k] = {"int": v}
        else:
            out[k] = {"string": v}
    return out


def device(name: str, capacity: dict[str, Any] | None = None,
           attributes: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if attributes is not None:
        out["attributes"] = attributes
    if capacity is not None:
        out["capacity"] = {k: v if isinstance(v, dict) else {"value": v}
                           for k, v in capacity.items()}
    out.update(extra)
    return out


def pool(name: str, count: int = 1, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def resource_slice(name: str, node: Any, pool_: Any, driver: str, *devices: dict[str, Any],
                   counters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": driver,
                            "pool": pool_ if isinstance(pool_, dict) else pool(pool_)}
    if isinstance(node, dict):
        spec["nodeSelector"] = node
    elif node == ALL_NODES:
        spec["allNodes"] = True
    elif node == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node
    if counters is not None:
        spec["sharedCounters"] = counters
    else:
        spec["devices"] = list(devices)
    return api("ResourceSlice", name, spec)


def one_device_slice(name: str, node: Any, pool_: Any, driver: str) -> dict[str, Any]:
    return resource_slice(name, node, pool_, driver, device("device-1"))


def many_devices_slice(name: str, node: Any, pool_: Any, driver: str, count: int
                       ) -> dict[str, Any]:
    return resource_slice(name, node, pool_, driver,
                          *[device(f"device-{i}") for i in range(count)])


def label_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": key, "operator": "In", "values": list(values)}]}]}


def local_selector(node: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def consumes(counter_set_: str, **counters: str) -> dict[str, Any]:
    return {"counterSet": counter_set_, "counters": {k: {"value": v} for k, v in
                                                     counters.items()}}


def result(req: str, driver: str, pool_: str, dev: str, admin: bool = False,
           **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"request": req, "driver": driver, "pool": pool_, "device": dev}
    if admin:
        out["adminAccess"] = True
    out.update(extra)
    return out


def allocation(selector: dict[str, Any] | None, *results: dict[str, Any],
               config: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"devices": {"results": list(results)}}
    if config:
        out["devices"]["config"] = config
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def config_entry(source: str, requests: list[str] | None, driver: str, attribute: str
                 ) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source}
    if requests:
        out["requests"] = requests
    out.update(opaque(driver, attribute))
    return out


def node(name: str, region: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {REGION: region, PLANET: EARTH}}}


def allocated_claim(index: int, *devices: tuple[str, str, str],
                    shares: list[tuple[tuple[str, str, str], str, dict[str, str]]] | None = None
                    ) -> dict[str, Any]:
    """A claim that already holds devices (upstream's allocatedDevices and shares)."""
    results = [result("req", *d) for d in devices]
    for d, share_id, consumed in shares or []:
        results.append(result("req", *d, shareID=share_id, consumedCapacity=consumed))
    obj = claim(f"allocated-{index}", request("req", CLASS_A))
    obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def case(name: str, *, claims: list[dict[str, Any]] = (), classes: list[dict[str, Any]] = (),
         slices: list[dict[str, Any]] = (), node_: dict[str, Any] | None = None,
         features: tuple[str, ...] = (), allocated: list[tuple[str, str, str]] = (),
         shared: list[tuple[tuple[str, str, str], str, dict[str, str]]] = (),
         expect: list[dict[str, Any]] | None = None, error: str | None = None,
         taint_rules: list[dict[str, Any]] = (), note: str = "") -> dict[str, Any]:
    node_ = node_ or node("node-1", "region-1")
    items = [*classes, *slices, *taint_rules]
    if allocated or shared:
        items.append(allocated_claim(0, *allocated, shares=list(shared)))
    items.extend(claims)
    items.append(node_)
    if error is not None:
        expectation: dict[str, Any] = {"outcome": "Error", "error": error}
    elif expect is None:
        expectation = {"outcome": "Unsatisfiable"}
    else:
        expectation = {"outcome": "Allocated", "allocations": expect}
    out = {"name": name, "node": node_["metadata"]["name"], "features": sorted(features),
           "expect": expectation,
           "input": {"apiVersion": "v1", "kind": "List", "items": items}}
    if note:
        out["note"] = note
    return out


def counter_device(name: str, *consumptions: dict[str, Any], from_counters: bool = True,
                   **extra: Any) -> dict[str, Any]:
    """A device consuming counters; with `from_counters` its capacity mirrors them, as
    upstream's helper does."""
    out: dict[str, Any] = {"name": name, "consumesCounters": list(consumptions)}
    if from_counters:
        out["capacity"] = {k: {"value": v["value"]} for c in consumptions
                           for k, v in c["counters"].items()}
    out.update(extra)
    return out


TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOLERATE_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOLERATE_NO_EXECUTE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2",
                       "effect": "NoExecute"}
TOLERATE_KEY1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}


def range_policy_capacity(**values: str) -> dict[str, Any]:
    """Capacities with upstream's default range policy: default 2, min 2, step 2, max 4."""
    return {k: {"value": v, "requestPolicy": {"default": "2", "validRange": {
        "min": "2", "step": "2", "max": "4"}}} for k, v in values.items()}


def valid_values_capacity(default: str, extra: list[str], **values: str) -> dict[str, Any]:
    return {k: {"value": v, "requestPolicy": {"default": default,
                                              "validValues": [default, *extra]}}
            for k, v in values.items()}


def capacity_request(amount: str | None, name: str = "capacity-0") -> dict[str, Any]:
    return {"requests": {name: amount} if amount is not None else {}}
