"""Validation of resource.k8s.io objects: each invalid case gives upstream's path and
message (dra-api.md §§3-7, §10, §13)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from resource_objects import CLAIM, CLASS, SLICE, TAINT_RULE, fresh, messages

from draemu.api.types import Obj
from draemu.apiserver.registry.resource.strategies import (
    DeviceClassStrategy,
    DeviceTaintRuleStrategy,
    ResourceClaimStrategy,
    ResourceClaimTemplateStrategy,
    ResourcePoolStatusRequestStrategy,
    ResourceSliceStrategy,
)
from draemu.apiserver.registry.strategy import Context
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit

C_ID = ("a valid C identifier must start with alphabetic character or '_', followed by a string "
        "of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex "
        "used for validation is '[A-Za-z_][A-Za-z0-9_]*')")
DNS_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
REQUEST_REF = ("must be the name of a request in the claim or the name of a request and a "
               "subrequest separated by '/'")
NODE_SELECTION = ("exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                  "`perDeviceNodeSelection` is required")
FQN = "a fully qualified name must be a domain and a name separated by a slash"


def claim_with(change: Callable[[Obj], Any]) -> Obj:
    o = fresh(CLAIM)
    change(o)
    return o


def slice_with(change: Callable[[Obj], Any]) -> Obj:
    o = fresh(SLICE)
    change(o)
    return o


def req(o: Obj, i: int = 0) -> Obj:
    return o["spec"]["devices"]["requests"][i]


def dev(o: Obj, i: int = 0) -> Obj:
    return o["spec"]["devices"][i]


def constraint(o: Obj) -> Obj:
    return o["spec"]["devices"]["constraints"][0]


@pytest.mark.parametrize("strategy,obj", [
    (ResourceClaimStrategy(), CLAIM),
    (ResourceSliceStrategy(), SLICE),
    (DeviceClassStrategy(), CLASS),
    (DeviceTaintRuleStrategy(), TAINT_RULE),
    (ResourceClaimTemplateStrategy(), {"spec": {"metadata": {"labels": {"app": "x"}},
                                                "spec": CLAIM["spec"]}}),
], ids=["claim", "slice", "class", "taintrule", "template"])
def test_valid_objects_are_accepted(strategy: Any, obj: Obj, ctx: Context) -> None:
    assert messages(strategy.validate(fresh(obj), ctx)) == []


CLAIM_CASES: list[tuple[str, Callable[[Obj], Any], list[str]]] = [
    ("count below zero", lambda o: req(o)["exactly"].update(count=-1),
     ["spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"]),
    ("count with All", lambda o: req(o)["exactly"].update(allocationMode="All", count=2),
     ["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when "
      "allocationMode is 'All'"]),
    ("unknown allocation mode", lambda o: req(o)["exactly"].update(allocationMode="Some"),
     ['spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported '
      'values: "All", "ExactCount"']),
    ("missing class", lambda o: req(o)["exactly"].pop("deviceClassName"),
     ["spec.devices.requests[0].exactly.deviceClassName: Required value"]),
    ("neither exactly nor firstAvailable", lambda o: req(o).pop("exactly"),
     ["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` "
      "is required"]),
    ("both exactly and firstAvailable",
     lambda o: req(o).update(firstAvailable=req(o, 1)["firstAvailable"]),
     ["spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or "
      "`firstAvailable` is required, but multiple fields are set"]),
    ("upper-case request name", lambda o: req(o).update(name="GPU"),
     [f'spec.devices.requests[0].name: Invalid value: "GPU": {DNS_LABEL}',
      f'spec.devices.constraints[0].requests[0]: Invalid value: "gpu": {REQUEST_REF}']),
    ("duplicate request name", lambda o: req(o, 1).update(name="gpu"),
     ['spec.devices.requests[1]: Duplicate value: "gpu"',
      f'spec.devices.constraints[0].requests[1]: Invalid value: "nic": {REQUEST_REF}']),
    ("matchAttribute without a domain",
     lambda o: constraint(o).update(matchAttribute="numa-node"),
     [f'spec.devices.constraints[0].matchAttribute: Invalid value: "numa-node": {C_ID}',
      'spec.devices.constraints[0].matchAttribute: Invalid value: "numa-node": ' + FQN
      + " (e.g. 'resource.kubernetes.io/numaNode', the standard attribute drivers publish "
      "for it; a driver's own attributes take the driver's name as the domain, as in "
      "'dra.example.com/model')"]),
    ("matchAttribute with a hyphenated id",
     lambda o: constraint(o).update(matchAttribute="dra.example.com/numa-node"),
     [f'spec.devices.constraints[0].matchAttribute: Invalid value: "numa-node": {C_ID}']),
    ("distinctAttribute without a domain",
     lambda o: (constraint(o).pop("matchAttribute"),
                constraint(o).update(distinctAttribute="numa")),
     ['spec.devices.constraints[0].distinctAttribute: Invalid value: "numa": ' + FQN
      + " (e.g. 'resource.kubernetes.io/numaNode', the standard attribute drivers publish "
      "for it; a driver's own attributes take the driver's name as the domain, as in "
      "'dra.example.com/model')"]),
    ("distinctAttribute of the driver's own without a domain",
     lambda o: (constraint(o).pop("matchAttribute"),
                constraint(o).update(distinctAttribute="serial-number")),
     [f'spec.devices.constraints[0].distinctAttribute: Invalid value: "serial-number": {C_ID}',
      'spec.devices.constraints[0].distinctAttribute: Invalid value: "serial-number": ' + FQN
      + " (e.g. 'dra.example.com/serial_number': the domain is usually the driver's name, or "
      "resource.kubernetes.io for a standard attribute such as "
      "'resource.kubernetes.io/numaNode' or 'resource.kubernetes.io/pcieRoot'; the name after "
      "the slash is a C identifier)"]),
    ("constraint on an unknown request",
     lambda o: constraint(o).update(requests=["gpu-x"]),
     [f'spec.devices.constraints[0].requests[0]: Invalid value: "gpu-x": {REQUEST_REF}']),
    ("constraint on an unknown subrequest",
     lambda o: constraint(o).update(requests=["nic/medium"]),
     [f'spec.devices.constraints[0].requests[0]: Invalid value: "nic/medium": {REQUEST_REF}']),
    ("constraint on a nested reference",
     lambda o: constraint(o).update(requests=["nic/fast/x"]),
     [f'spec.devices.constraints[0].requests[0]: Invalid value: "nic/fast/x": {REQUEST_REF}']),
    ("constraint without attribute", lambda o: constraint(o).pop("matchAttribute"),
     ['spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or '
      '"distinctAttribute" is required, but multiple fields are set']),
    ("selector without cel", lambda o: req(o)["exactly"].update(selectors=[{}]),
     ["spec.devices.requests[0].exactly.selectors[0].cel: Required value"]),
    ("selector expression too long",
     lambda o: req(o)["exactly"].update(selectors=[{"cel": {"expression": "x" * 10241}}]),
     ["spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be "
      "more than 10240 bytes"]),
    ("too many requests",
     lambda o: o["spec"]["devices"].update(requests=[
         {"name": f"r{i}", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}
         for i in range(33)], constraints=[]),
     ["spec.devices.requests: Too many: 33: must have at most 32 items"]),
    ("too many subrequests",
     lambda o: req(o, 1).update(firstAvailable=[
         {"name": f"s{i}", "deviceClassName": "c", "allocationMode": "All"} for i in range(9)]),
     ["spec.devices.requests[1].firstAvailable: Too many: 9: must have at most 8 items"]),
    ("opaque config with a list",
     lambda o: o["spec"]["devices"].update(config=[
         {"opaque": {"driver": "gpu.example.com", "parameters": [1, 2]}}]),
     ['spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a '
      "valid JSON object"]),
    ("opaque config with a string",
     lambda o: o["spec"]["devices"].update(config=[
         {"opaque": {"driver": "gpu.example.com", "parameters": "mtu=9000"}}]),
     ['spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a '
      "valid JSON object"]),
    ("opaque config too large",
     lambda o: o["spec"]["devices"].update(config=[
         {"opaque": {"driver": "gpu.example.com", "parameters": {"x": "y" * 10240}}}]),
     ["spec.devices.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"]),
    ("opaque config without parameters",
     lambda o: o["spec"]["devices"].update(config=[{"opaque": {"driver": "gpu.example.com"}}]),
     ["spec.devices.config[0].opaque.parameters: Required value"]),
    ("config without opaque", lambda o: o["spec"]["devices"].update(config=[{}]),
     ["spec.devices.config[0].opaque: Required value"]),
    ("toleration with Exists and value",
     lambda o: req(o)["exactly"].update(tolerations=[
         {"key": "k", "operator": "Exists", "value": "v"}]),
     ['spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be '
      "empty for operator `Exists`"]),
    ("toleration with an unknown effect",
     lambda o: req(o)["exactly"].update(tolerations=[
         {"key": "k", "operator": "Equal", "effect": "PreferNoSchedule"}]),
     ['spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: '
      '"PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"']),
]


@pytest.mark.parametrize("change,expected", [c[1:] for c in CLAIM_CASES],
                         ids=[c[0] for c in CLAIM_CASES])
def test_invalid_claim_is_rejected_with_upstream_path_and_message(
        change: Callable[[Obj], Any], expected: list[str], ctx: Context) -> None:
    assert messages(ResourceClaimStrategy().validate(claim_with(change), ctx)) == expected


def test_constraint_without_attribute_with_gate_off_requires_matchattribute() -> None:
    ctx = Context(gates=FeatureGates({"DRAConsumableCapacity": False}))
    o = claim_with(lambda o: constraint(o).pop("matchAttribute"))
    assert messages(ResourceClaimStrategy().validate(o, ctx)) == [
        "spec.devices.constraints[0].matchAttribute: Required value"]


def test_template_validates_metadata_and_claim_spec_under_spec(ctx: Context) -> None:
    spec = fresh(CLAIM["spec"])
    spec["devices"]["requests"][0]["exactly"]["count"] = -1
    errors = ResourceClaimTemplateStrategy().validate(
        {"spec": {"metadata": {"name": "x"}, "spec": spec}}, ctx)
    assert messages(errors) == [
        "spec.metadata.name: Forbidden: cannot be set",
        "spec.spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than "
        "zero"]


@pytest.mark.parametrize("strategy,obj", [(ResourceClaimStrategy(), CLAIM),
                                          (ResourceClaimTemplateStrategy(),
                                           {"spec": {"spec": CLAIM["spec"]}})],
                         ids=["claim", "template"])
def test_claim_and_template_specs_are_immutable(strategy: Any, obj: Obj, ctx: Context) -> None:
    old = fresh(obj)
    new = fresh(obj)
    new["spec"]["x"] = 1
    errors = strategy.validate_update(new, old, ctx)
    assert [(e.field, e.type, e.detail) for e in errors] == [
        ("spec", "Invalid", "field is immutable")]


SLICE_CASES: list[tuple[str, Callable[[Obj], Any], list[str]]] = [
    ("no node selection", lambda o: o["spec"].pop("nodeName"),
     [f"spec: Required value: {NODE_SELECTION}"]),
    ("two node selections", lambda o: o["spec"].update(allNodes=True),
     ['spec: Invalid value: "{`nodeName`, `allNodes`}": ' + NODE_SELECTION
      + ", but multiple fields are set"]),
    ("empty node name", lambda o: o["spec"].update(nodeName=""),
     ['spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string',
      f"spec: Required value: {NODE_SELECTION}"]),
    ("allNodes false", lambda o: (o["spec"].pop("nodeName"), o["spec"].update(allNodes=False)),
     ["spec.allNodes: Invalid value: false: must be either unset or set to true",
      f"spec: Required value: {NODE_SELECTION}"]),
    ("two node selector terms",
     lambda o: (o["spec"].pop("nodeName"), o["spec"].update(nodeSelector={"nodeSelectorTerms": [
         {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
         {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}]})),
     ['spec.nodeSelector.nodeSelectorTerms: Invalid value: [{"matchFields":[{"key":'
      '"metadata.name","operator":"In","values":["a"]}]},{"matchFields":[{"key":'
      '"metadata.name","operator":"In","values":["b"]}]}]: must have exactly one node '
      "selector term"]),
    ("node selector with a bad operator",
     lambda o: (o["spec"].pop("nodeName"), o["spec"].update(nodeSelector={"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]})),
     ['spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: '
      '"Near": not a valid selector operator']),
    ("zero slice count", lambda o: o["spec"]["pool"].update(resourceSliceCount=0),
     ["spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"]),
    ("negative generation", lambda o: o["spec"]["pool"].update(generation=-1),
     ["spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"]),
    ("missing pool name", lambda o: o["spec"]["pool"].update(name=""),
     ["spec.pool.name: Required value"]),
    ("missing driver", lambda o: o["spec"].update(driver=""),
     ["spec.driver: Required value",
      'spec.driver: Invalid value: "": a lowercase RFC 1123 subdomain must consist of lower '
      "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ("devices and shared counters",
     lambda o: o["spec"].update(sharedCounters=[{"name": "mem", "counters": {
         "memory": {"value": "1Gi"}}}]),
     ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed']),
    ("attribute with two values",
     lambda o: dev(o)["attributes"].update(model={"string": "A100", "int": 1}),
     ['spec.devices[0].attributes[model]: Invalid value: {"int":1,"string":"A100"}: exactly '
      "one value must be specified"]),
    ("attribute without a value", lambda o: dev(o)["attributes"].update(model={}),
     ['spec.devices[0].attributes[model]: Invalid value: "": exactly one value must be '
      "specified"]),
    ("bad version", lambda o: dev(o)["attributes"].update(driverVersion={"version": "1.0"}),
     ['spec.devices[0].attributes[driverVersion].version: Invalid value: "1.0": must be a '
      "string compatible with semver.org spec 2.0.0"]),
    ("string too long", lambda o: dev(o)["attributes"].update(model={"string": "x" * 65}),
     ["spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes"]),
    ("hyphen in attribute name", lambda o: dev(o)["attributes"].update({"numa-node": {"int": 1}}),
     [f'spec.devices[0].attributes[numa-node]: Invalid value: "numa-node": {C_ID}']),
    ("too many attributes and capacities",
     lambda o: dev(o)["attributes"].update({f"a{i}": {"int": i} for i in range(32)}),
     ["spec.devices[0]: Invalid value: 34: the total number of attributes and capacities "
      "must not exceed 32"]),
    ("too many attribute values",
     lambda o: dev(o)["attributes"].update({f"a{i}": {"ints": [1, 2]} for i in range(25)}),
     ["spec.devices[0]: Invalid value: 51: the total number of attribute values must not "
      "exceed 48"]),
    ("empty list attribute", lambda o: dev(o)["attributes"].update(ids={"ints": []}),
     ["spec.devices[0].attributes[ids].ints: Invalid value: []: must not be empty if "
      "specified"]),
    ("duplicate device", lambda o: o["spec"]["devices"].append(fresh(dev(o))),
     ['spec.devices[1]: Duplicate value: "gpu-0"']),
    ("too many devices", lambda o: o["spec"].update(devices=[
        {"name": f"d{i}"} for i in range(129)]),
     ["spec.devices: Too many: 129: must have at most 128 items"]),
    ("more than 64 devices when one has taints", lambda o: o["spec"].update(devices=[
        {"name": f"d{i}", "taints": [{"key": "k", "effect": "NoSchedule"}]}
        for i in range(65)]),
     ["spec.devices: Too many: 65: must have at most 64 items"]),
    ("taint with PreferNoSchedule",
     lambda o: dev(o).update(taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
     ['spec.devices[0].taints[0].effect: Unsupported value: "PreferNoSchedule": supported '
      'values: "NoExecute", "NoSchedule", "None"']),
    ("per-device node name without perDeviceNodeSelection",
     lambda o: dev(o).update(nodeName="node-1"),
     ["spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can "
      "only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"]),
    ("perDeviceNodeSelection without a device node",
     lambda o: (o["spec"].pop("nodeName"), o["spec"].update(perDeviceNodeSelection=True)),
     ["spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or "
      "`allNodes` is required when `perDeviceNodeSelection` is set to true in the "
      "ResourceSlice spec"]),
    ("request policy without allowMultipleAllocations",
     lambda o: dev(o)["capacity"]["memory"].update(requestPolicy={"default": "1Gi"}),
     ["spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations "
      "must be true"]),
    ("request policy default outside validValues",
     lambda o: (dev(o).update(allowMultipleAllocations=True),
                dev(o)["capacity"]["memory"].update(requestPolicy={
                    "default": "3Gi", "validValues": ["1Gi", "2Gi"]})),
     ['spec.devices[0].capacity[memory].requestPolicy.validValues: Invalid value: "3Gi": '
      "default value is not valid according to the requestPolicy"]),
    ("request policy values out of order",
     lambda o: (dev(o).update(allowMultipleAllocations=True),
                dev(o)["capacity"]["memory"].update(requestPolicy={
                    "default": "1Gi", "validValues": ["2Gi", "1Gi"]})),
     ['spec.devices[0].capacity[memory].requestPolicy.validValues[1]: Invalid value: "1Gi": '
      "values must be sorted in ascending order"]),
    ("request policy with values and range",
     lambda o: (dev(o).update(allowMultipleAllocations=True),
                dev(o)["capacity"]["memory"].update(requestPolicy={
                    "default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}})),
     ["spec.devices[0].capacity[memory].requestPolicy: Forbidden: exactly one policy can be "
      'specified, cannot specify "validValues" and "validRange" at the same time']),
    ("request policy range off step",
     lambda o: (dev(o).update(allowMultipleAllocations=True),
                dev(o)["capacity"]["memory"].update(requestPolicy={
                    "default": "3Gi", "validRange": {"min": "2Gi", "step": "2Gi"}})),
     ['spec.devices[0].capacity[memory].requestPolicy.validRange.step: Invalid value: "3Gi": '
      "value is not a multiple of a given step (2Gi) from (2Gi)"]),
    ("bindingFailureConditions without bindingConditions",
     lambda o: dev(o).update(bindingFailureConditions=["Failed"]),
     ["spec.devices[0].bindingConditions: Invalid value: []: bindingConditions are required "
      "to use bindingFailureConditions"]),
    ("overlapping binding conditions",
     lambda o: dev(o).update(bindingConditions=["Ready"], bindingFailureConditions=["Ready"]),
     ['spec.devices[0].bindingFailureConditions[0]: Invalid value: "Ready": '
      "bindingFailureConditions must not overlap with bindingConditions"]),
    ("consumes an unnamed counter set", lambda o: dev(o).update(consumesCounters=[
        {"counterSet": "", "counters": {"mem": {"value": "1"}}}]),
     ["spec.devices[0].consumesCounters[0].counterSet: Required value"]),
    ("counter set without counters",
     lambda o: (o["spec"].pop("devices"), o["spec"].update(sharedCounters=[{"name": "s"}])),
     ["spec.sharedCounters[0].counters: Required value"]),
    ("skip prepare without unprepare",
     lambda o: o["spec"].update(skipNodeOperations=["NodePrepareResources"]),
     ['spec.skipNodeOperations: Invalid value: ["NodePrepareResources"]: NodePrepareResources '
      "cannot be skipped unless NodeUnprepareResources is also skipped"]),
]


@pytest.mark.parametrize("change,expected", [c[1:] for c in SLICE_CASES],
                         ids=[c[0] for c in SLICE_CASES])
def test_invalid_slice_is_rejected_with_upstream_path_and_message(
        change: Callable[[Obj], Any], expected: list[str], ctx: Context) -> None:
    assert messages(ResourceSliceStrategy().validate(slice_with(change), ctx)) == expected


def test_slice_driver_pool_and_node_are_immutable(ctx: Context) -> None:
    new = slice_with(lambda o: (o["spec"].update(driver="nic.example.com", nodeName="node-2"),
                                o["spec"]["pool"].update(name="other")))
    errors = ResourceSliceStrategy().validate_update(new, fresh(SLICE), ctx)
    assert [(e.field, e.detail) for e in errors] == [
        ("spec.pool.name", "field is immutable"), ("spec.driver", "field is immutable"),
        ("spec.nodeName", "field is immutable")]


def test_unchanged_stored_taint_with_unknown_effect_survives_an_update(ctx: Context) -> None:
    old = slice_with(lambda o: dev(o).update(taints=[{"key": "k", "effect": "Future"}]))
    new = fresh(old)
    new["spec"]["pool"]["generation"] = 1
    assert ResourceSliceStrategy().validate_update(new, old, ctx) == []


def test_unchanged_stored_capacity_policy_survives_an_update(ctx: Context) -> None:
    old = slice_with(lambda o: (dev(o).update(allowMultipleAllocations=True),
                                dev(o)["capacity"]["memory"].update(requestPolicy={
                                    "default": "3Gi", "validValues": ["1Gi"]})))
    new = fresh(old)
    new["spec"]["pool"]["generation"] = 1
    assert ResourceSliceStrategy().validate_update(new, old, ctx) == []
    assert ResourceSliceStrategy().validate(new, ctx) != []


def test_slice_with_upper_case_driver_is_accepted_with_a_warning(ctx: Context) -> None:
    o = slice_with(lambda o: o["spec"].update(driver="GPU.example.com"))
    strategy = ResourceSliceStrategy()
    assert strategy.validate(o, ctx) == []
    assert strategy.warnings(o, ctx) == [
        'spec.driver: driver names should be lowercase; "GPU.example.com" contains uppercase '
        "characters"]


def test_partition_type_attribute_is_forbidden_while_its_gate_is_off(ctx: Context) -> None:
    o = slice_with(lambda o: o["spec"].update(partitionTypeAttribute="gpu.example.com/type"))
    assert [e.type for e in ResourceSliceStrategy().validate(o, ctx)] == ["Forbidden"]


def test_partition_type_attribute_must_be_a_string_on_counter_consumers() -> None:
    ctx = Context(gates=FeatureGates({"DRAPartitionableDevicesType": True,
                                      "DRAResourcePoolStatus": True}))
    o = slice_with(lambda o: (o["spec"].update(partitionTypeAttribute="gpu.example.com/model"),
                              dev(o).update(consumesCounters=[{"counterSet": "s", "counters": {
                                  "mem": {"value": "1Gi"}}}]),
                              dev(o)["attributes"].update(model={"int": 3})))
    assert messages(ResourceSliceStrategy().validate(o, ctx)) == [
        'spec.devices[0].attributes[model]: Invalid value: {"int":3}: must be a string value '
        "because `partitionTypeAttribute` names this attribute"]


CLASS_CASES: list[tuple[str, Obj, list[str]]] = [
    ("bad extended resource name", {"extendedResourceName": "gpu"},
     ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource '
      "name"]),
    ("config with null parameters", {"config": [{"opaque": {"driver": "d.example.com",
                                                            "parameters": None}}]},
     ["spec.config[0].opaque.parameters: Required value"]),
    ("too many selectors", {"selectors": [{"cel": {"expression": "true"}}] * 33},
     ["spec.selectors: Too many: 33: must have at most 32 items"]),
]


@pytest.mark.parametrize("spec,expected", [c[1:] for c in CLASS_CASES],
                         ids=[c[0] for c in CLASS_CASES])
def test_invalid_device_class_is_rejected(spec: Obj, expected: list[str], ctx: Context) -> None:
    assert messages(DeviceClassStrategy().validate({"spec": spec}, ctx)) == expected


def test_device_class_accepts_an_extended_resource_name(ctx: Context) -> None:
    o = {"spec": {"extendedResourceName": "example.com/gpu"}}
    assert DeviceClassStrategy().validate(o, ctx) == []


def test_oversized_class_config_stored_before_is_kept_on_update(ctx: Context) -> None:
    big = {"spec": {"config": [{"opaque": {"driver": "d.example.com",
                                           "parameters": {"x": "y" * 11000}}}]}}
    strategy = DeviceClassStrategy()
    assert [e.type for e in strategy.validate(fresh(big), ctx)] == ["TooLong"]
    assert strategy.validate_update(fresh(big), fresh(big), ctx) == []


def test_taint_rule_requires_a_taint_effect(ctx: Context) -> None:
    o = fresh(TAINT_RULE)
    del o["spec"]["taint"]["effect"]
    assert messages(DeviceTaintRuleStrategy().validate(o, ctx)) == [
        "spec.taint.effect: Required value"]


def test_taint_rule_selector_fields_are_validated(ctx: Context) -> None:
    o = fresh(TAINT_RULE)
    o["spec"]["deviceSelector"]["device"] = "GPU_0"
    assert messages(DeviceTaintRuleStrategy().validate(o, ctx)) == [
        f'spec.deviceSelector.device: Invalid value: "GPU_0": {DNS_LABEL}']


def test_taint_rule_status_conditions_are_validated(ctx: Context) -> None:
    o = fresh(TAINT_RULE)
    o["status"] = {"conditions": [{"type": "EvictionInProgress", "status": "Maybe",
                                   "reason": "Evicting", "lastTransitionTime":
                                   "2026-01-01T00:00:00Z"}]}
    assert messages(DeviceTaintRuleStrategy().validate_status_update(o, o, ctx)) == [
        'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", '
        '"True", "Unknown"']


def test_pool_status_request_limit_is_bounded(ctx: Context) -> None:
    o = {"spec": {"driver": "gpu.example.com", "limit": 0}}
    assert messages(ResourcePoolStatusRequestStrategy().validate(o, ctx)) == [
        "spec.limit: Invalid value: 0: must be between 1 and 1000, inclusive"]


def test_selector_that_does_not_compile_is_invalid(ctx: Context) -> None:
    o = claim_with(lambda o: req(o)["exactly"].update(
        selectors=[{"cel": {"expression": "device.driver =="}}]))
    errors = ResourceClaimStrategy().validate(o, ctx)
    assert [(e.field, e.type) for e in errors] == [
        ("spec.devices.requests[0].exactly.selectors[0].cel.expression", "Invalid")]
    assert errors[0].detail.startswith("compilation failed: ")


def test_selector_that_is_not_boolean_is_invalid(ctx: Context) -> None:
    o = {"spec": {"selectors": [{"cel": {"expression": "1 + 2"}}]}}
    assert messages(DeviceClassStrategy().validate(o, ctx)) == [
        'spec.selectors[0].cel.expression: Invalid value: "1 + 2": must evaluate to bool or '
        "the unknown type, not int"]


def test_pool_status_request_status_needs_a_pool_count(ctx: Context) -> None:
    o = {"spec": {"driver": "gpu.example.com"},
         "status": {"pools": [{"driver": "gpu.example.com", "poolName": "p", "generation": -1}]}}
    assert messages(ResourcePoolStatusRequestStrategy().validate_status_update(o, o, ctx)) == [
        "status.poolCount: Required value",
        "status.pools[0].generation: Invalid value: -1: must be greater than or equal to 0"]


def test_pool_status_request_spec_is_immutable(ctx: Context) -> None:
    old = {"spec": {"driver": "gpu.example.com", "limit": 100}}
    new = {"spec": {"driver": "gpu.example.com", "limit": 10}}
    errors = ResourcePoolStatusRequestStrategy().validate_update(new, old, ctx)
    assert [(e.field, e.detail) for e in errors] == [("spec", "field is immutable")]


def test_fractional_valid_values_are_distinct_only_with_their_gate() -> None:
    # Without DRAFractionalCapacityRange, values are compared in whole units (rounded up):
    # 250m, 500m and 1 are the same value; with it, exact decimals.
    o = slice_with(lambda o: (dev(o).update(allowMultipleAllocations=True),
                              dev(o)["capacity"].update(cores={"value": "4", "requestPolicy": {
                                  "default": "1", "validValues": ["250m", "500m", "1"]}})))
    off = ResourceSliceStrategy().validate(o, Context(gates=FeatureGates()))
    assert messages(off) == [
        "spec.devices[0].capacity[cores].requestPolicy.validValues[1]: Duplicate value: 1",
        "spec.devices[0].capacity[cores].requestPolicy.validValues[2]: Duplicate value: 1"]
    on = FeatureGates({"DRAFractionalCapacityRange": True})
    assert ResourceSliceStrategy().validate(o, Context(gates=on)) == []
