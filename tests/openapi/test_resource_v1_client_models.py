"""resource.k8s.io schemas (v1, and v1beta2 and v1beta1 likewise), field for field,
against the models of the 1.37 Python client (`kubernetes==37`, generated from
Kubernetes 1.37's OpenAPI): every property with its type, nothing more, nothing less."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

models = pytest.importorskip("kubernetes.client.models")

pytestmark = pytest.mark.unit

VERSIONS = ("v1", "v1beta2", "v1beta1")
SCHEMAS = {name: schema for version in VERSIONS for name, schema in json.loads(
    (Path(__file__).resolve().parents[2] / "openapi" / "schemas"
     / f"resource.k8s.io__{version}.json").read_text())["components"]["schemas"].items()}
PREFIX = "io.k8s.api.resource."
# Definitions the client maps onto plain Python types.
PLAIN = {"io.k8s.apimachinery.pkg.api.resource.Quantity": "str",
         "io.k8s.apimachinery.pkg.runtime.RawExtension": "object",
         "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "datetime",
         "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "datetime"}
# Classes the client renames because two groups define the same kind.
RENAMED = {"ResourceClaim": "ResourceV1ResourceClaim"}


def class_name(definition: str) -> str:
    if definition in PLAIN:
        return PLAIN[definition]
    version, short = definition.rsplit(".", 2)[1:]
    if not definition.startswith(PREFIX):
        return "V1" + short
    if version == "v1":
        return RENAMED.get(short, "V1" + short)
    return version[0].upper() + version[1:] + short


def python_type(prop: dict[str, Any]) -> str:
    ref = prop.get("$ref") or next((x["$ref"] for x in prop.get("allOf", []) if "$ref" in x),
                                   None)
    if ref:
        return class_name(ref.rsplit("/", 1)[1])
    kind = prop.get("type")
    if kind == "array":
        return f"List[{python_type(prop['items'])}]"
    if kind == "object" and "additionalProperties" in prop:
        return f"Dict[str, {python_type(prop['additionalProperties'])}]"
    if kind == "string":
        return "datetime" if prop.get("format") == "date-time" else "str"
    return {"integer": "int", "boolean": "bool", "number": "float", "object": "object"}[kind]


@pytest.mark.parametrize("definition", sorted(SCHEMAS))
def test_schema_matches_the_client_model(definition: str) -> None:
    model = getattr(models, class_name(definition))
    schema = SCHEMAS[definition]
    ours = {name: python_type(prop) for name, prop in (schema.get("properties") or {}).items()}
    theirs = {json_name: model.openapi_types[attr]
              for attr, json_name in model.attribute_map.items()}
    assert ours == theirs


def test_the_1_37_alpha_types_have_schemas() -> None:
    ours = {class_name(d) for d in SCHEMAS}
    for version in ("V1", "V1beta2", "V1beta1"):
        assert f"{version}DeviceDerivedAttribute" in ours
