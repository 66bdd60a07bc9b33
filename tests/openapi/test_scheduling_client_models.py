"""scheduling.k8s.io Workload and PodGroup schemas (v1beta1, v1alpha3), field for field,
against the kubernetes==37 client models (empty structs such as BasicSchedulingPolicy
have no model there: the client types them as `object`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

models = pytest.importorskip("kubernetes.client.models")

pytestmark = pytest.mark.unit

SCHEMAS = {name: schema for version in ("v1beta1", "v1alpha3") for name, schema in json.loads(
    (Path(__file__).resolve().parents[2] / "openapi" / "schemas"
     / f"scheduling.k8s.io__{version}-workloads.json").read_text())["components"][
    "schemas"].items()}
PLAIN = {"io.k8s.apimachinery.pkg.apis.meta.v1.Time": "datetime"}


def class_name(definition: str) -> str:
    if definition in PLAIN:
        return PLAIN[definition]
    version, short = definition.rsplit(".", 2)[1:]
    name = version[0].upper() + version[1:] + short
    return name if getattr(models, name, None) is not None else "object"


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


@pytest.mark.parametrize("definition", sorted(d for d in SCHEMAS if class_name(d) != "object"))
def test_schema_matches_the_client_model(definition: str) -> None:
    model = getattr(models, class_name(definition))
    ours = {name: python_type(prop)
            for name, prop in (SCHEMAS[definition].get("properties") or {}).items()}
    theirs = {json_name: model.openapi_types[attr]
              for attr, json_name in model.attribute_map.items()}
    assert ours == theirs
