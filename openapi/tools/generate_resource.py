"""Generate the resource.k8s.io schema files (`openapi/schemas/resource.k8s.io__*.json`).

* v1 and v1beta2 come from upstream's published OpenAPI v3 documents (copies under the
  steering repository's `shared/reference/openapi/`): names, types, formats, `$ref`s,
  `required`, defaults and `x-kubernetes-*` extensions are kept; descriptions are
  replaced by our own short phrases (the helpers of `generate.py`).
* v1beta1 is derived from v1 by the structural differences of dra-api.md §8.2: flat
  `DeviceRequest` (no `ExactDeviceRequest`), devices wrapped in `basic` (`BasicDevice`),
  and no DeviceTaintRule.
* v1alpha3 holds DeviceTaintRule in the v1 shape, ResourcePoolStatusRequest as
  `generate.py` builds it from kubernetes-validate (1.37), and DeviceClass, ResourceClaim,
  ResourceClaimTemplate and ResourceSlice in their Kubernetes 1.31 shape (dra-api.md
  §8.3), pruned from the v1beta1 derivation plus the 1.31-only fields.

    .venv/bin/python openapi/tools/generate_resource.py [--reference DIR] [--out DIR]
    .venv/bin/python openapi/tools/generate_resource.py --describe-only   # descriptions
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate  # the sibling generator: description helpers, kubernetes-validate
import resource_descriptions as descriptions  # our words for every kind and field

REFERENCE = Path("/work/shared/reference/openapi")
PREFIX = "io.k8s.api.resource."
REF = generate.REF_PREFIX
Schemas = dict[str, dict[str, Any]]

# v1alpha3 of Kubernetes 1.31: the properties each type had then (dra-api.md §8.3).
ALPHA_131_PROPERTIES: dict[str, list[str]] = {
    "DeviceClass": ["apiVersion", "kind", "metadata", "spec"],
    "DeviceClassList": ["apiVersion", "kind", "metadata", "items"],
    "DeviceClassSpec": ["selectors", "config", "suitableNodes"],
    "DeviceClassConfiguration": ["opaque"],
    "OpaqueDeviceConfiguration": ["driver", "parameters"],
    "DeviceSelector": ["cel"],
    "CELDeviceSelector": ["expression"],
    "ResourceClaim": ["apiVersion", "kind", "metadata", "spec", "status"],
    "ResourceClaimList": ["apiVersion", "kind", "metadata", "items"],
    "ResourceClaimSpec": ["devices", "controller"],
    "DeviceClaim": ["requests", "constraints", "config"],
    "DeviceRequest": ["name", "deviceClassName", "selectors", "allocationMode", "count",
                      "adminAccess"],
    "DeviceConstraint": ["requests", "matchAttribute"],
    "DeviceClaimConfiguration": ["requests", "opaque"],
    "ResourceClaimStatus": ["allocation", "reservedFor", "deallocationRequested"],
    "AllocationResult": ["devices", "nodeSelector", "controller"],
    "DeviceAllocationResult": ["results", "config"],
    "DeviceRequestAllocationResult": ["request", "driver", "pool", "device"],
    "DeviceAllocationConfiguration": ["source", "requests", "opaque"],
    "ResourceClaimConsumerReference": ["apiGroup", "resource", "name", "uid"],
    "ResourceClaimTemplate": ["apiVersion", "kind", "metadata", "spec"],
    "ResourceClaimTemplateList": ["apiVersion", "kind", "metadata", "items"],
    "ResourceClaimTemplateSpec": ["metadata", "spec"],
    "ResourceSlice": ["apiVersion", "kind", "metadata", "spec"],
    "ResourceSliceList": ["apiVersion", "kind", "metadata", "items"],
    "ResourceSliceSpec": ["driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices"],
    "ResourcePool": ["name", "generation", "resourceSliceCount"],
    "Device": ["name", "basic"],
    "BasicDevice": ["attributes", "capacity"],
    "DeviceAttribute": ["int", "bool", "string", "version"],
}
# Fields 1.31 had that later releases removed.
ALPHA_131_ADDED: dict[tuple[str, str], dict[str, Any]] = {
    ("DeviceClassSpec", "suitableNodes"): {
        "allOf": [{"$ref": REF + "io.k8s.api.core.v1.NodeSelector"}]},
    ("ResourceClaimSpec", "controller"): {"type": "string"},
    ("ResourceClaimStatus", "deallocationRequested"): {"type": "boolean"},
    ("AllocationResult", "controller"): {"type": "string"},
    ("BasicDevice", "capacity"): {
        "type": "object",
        "additionalProperties": {"$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"}},
    ("DeviceRequest", "adminAccess"): {"type": "boolean"},
}
ALPHA_131_REQUIRED = {"DeviceRequest": ["name", "deviceClassName"],
                      "ResourceSliceSpec": ["driver", "pool"]}
TAINT_RULE_TYPES = ["DeviceTaint", "DeviceTaintRule", "DeviceTaintRuleList",
                    "DeviceTaintRuleSpec", "DeviceTaintRuleStatus", "DeviceTaintSelector"]
POOL_STATUS_TYPES = ("ResourcePoolStatusRequest", "PoolStatus", "PartitionTypeStatus",
                     "ShareableCapacityStatus", "ShareableSummaryStatus")


def short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def describe(schemas: Schemas) -> Schemas:
    """Our own descriptions in place of upstream's prose (resource_descriptions.py; a
    phrase derived from the name where it has none)."""
    out: Schemas = {}
    for name, schema in schemas.items():
        schema = _strip_descriptions(schema)
        schema["description"] = descriptions.TYPES.get(short(name)) or \
            generate.type_description(name, schema)
        for prop, node in schema.get("properties", {}).items():
            node["description"] = descriptions.field_description(short(name), prop) or \
                generate.property_description(name, prop)
        out[name] = dict(sorted(schema.items()))
    return out


def describe_files(out: Path) -> None:
    """Our descriptions into the schema files as they are (nothing else changes)."""
    for path in sorted(out.glob("resource.k8s.io__*.json")):
        doc = json.loads(path.read_text())
        doc["components"]["schemas"] = dict(sorted(describe(doc["components"]["schemas"])
                                                   .items()))
        path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{path}: described")


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


def rename(schemas: Schemas, src: str, dst: str) -> Schemas:
    """Move definitions from package version `src` to `dst` (names, refs and GVKs)."""
    text = json.dumps(schemas).replace(f"{PREFIX}{src}.", f"{PREFIX}{dst}.")
    out: Schemas = json.loads(text)
    for schema in out.values():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if gvk.get("group") == "resource.k8s.io":
                gvk["version"] = dst
    return out


def from_reference(reference: Path, version: str) -> Schemas:
    doc = json.loads((reference / f"apis__resource.k8s.io__{version}_openapi.json").read_text())
    package = f"{PREFIX}{version}."
    return {k: v for k, v in doc["components"]["schemas"].items() if k.startswith(package)}


def v1beta1_from_v1(v1: Schemas) -> Schemas:
    schemas = rename(copy.deepcopy(v1), "v1", "v1beta1")
    p = f"{PREFIX}v1beta1."
    for name in TAINT_RULE_TYPES[1:]:
        schemas.pop(p + name)
    exact = schemas.pop(p + "ExactDeviceRequest")
    request = schemas[p + "DeviceRequest"]
    props = {k: v for k, v in request["properties"].items() if k != "exactly"}
    props.update(exact["properties"])
    request["properties"] = dict(sorted(props.items()))
    request["required"] = ["name"]
    device = schemas[p + "Device"]
    basic = {"type": "object",
             "properties": {k: v for k, v in device["properties"].items() if k != "name"}}
    schemas[p + "BasicDevice"] = basic
    device["properties"] = {"name": device["properties"]["name"],
                            "basic": {"allOf": [{"$ref": f"{REF}{p}BasicDevice"}]}}
    device["required"] = ["name"]
    return schemas


def v1alpha3(v1: Schemas, v1beta1: Schemas, pool_status: Schemas) -> Schemas:
    p = f"{PREFIX}v1alpha3."
    taint_rules = rename({f"{PREFIX}v1.{n}": copy.deepcopy(v1[f"{PREFIX}v1.{n}"])
                          for n in TAINT_RULE_TYPES}, "v1", "v1alpha3")
    base = rename(copy.deepcopy(v1beta1), "v1beta1", "v1alpha3")
    out: Schemas = dict(taint_rules)
    for type_name, props in ALPHA_131_PROPERTIES.items():
        schema = base[p + type_name]
        properties = {}
        for prop in props:
            added = ALPHA_131_ADDED.get((type_name, prop))
            properties[prop] = copy.deepcopy(added) if added else schema["properties"][prop]
        schema["properties"] = properties
        required = ALPHA_131_REQUIRED.get(type_name, schema.get("required", []))
        required = [r for r in required if r in properties]
        if required:
            schema["required"] = required
        else:
            schema.pop("required", None)
        out[p + type_name] = schema
    out.update({k: v for k, v in pool_status.items() if short(k).startswith(POOL_STATUS_TYPES)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--out", type=Path, default=generate.OUT)
    parser.add_argument("--describe-only", action="store_true",
                        help="only rewrite the descriptions of the files in --out (after an "
                        "edit of resource_descriptions.py)")
    args = parser.parse_args(argv)
    if args.describe_only:
        describe_files(args.out)
        return 0
    v1 = from_reference(args.reference, "v1")
    v1beta2 = from_reference(args.reference, "v1beta2")
    v1beta1 = v1beta1_from_v1(v1)
    alpha = generate.build("resource.k8s.io/v1alpha3", generate.source_definitions())
    docs = {"v1": v1, "v1beta2": v1beta2, "v1beta1": v1beta1,
            "v1alpha3": v1alpha3(v1, v1beta1, alpha["components"]["schemas"])}
    for version, schemas in docs.items():
        path = args.out / f"resource.k8s.io__{version}.json"
        doc = {"components": {"schemas": dict(sorted(describe(schemas).items()))}}
        path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{path}: {len(schemas)} schemas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
