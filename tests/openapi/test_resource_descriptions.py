"""`kubectl explain` on resource.k8s.io says what a field is for, in our words, not a phrase
made of its name (issue 36: 'Capacity of the exact device request.')."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "openapi" / "schemas"
STANDARD = {"apiVersion", "kind", "metadata", "spec", "status", "items"}


def _descriptions():  # the generator's table, a tool module (not a package)
    spec = importlib.util.spec_from_file_location(
        "resource_descriptions", ROOT / "openapi" / "tools" / "resource_descriptions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1", "v1alpha3"])
def test_every_kind_and_field_has_our_words(version: str) -> None:
    table = _descriptions()
    doc = json.loads((SCHEMAS / f"resource.k8s.io__{version}.json").read_text())
    missing = []
    for name, schema in doc["components"]["schemas"].items():
        short = name.rsplit(".", 1)[-1]
        if not short.endswith("List") and schema["description"] != table.TYPES.get(short):
            missing.append(short)
        for prop, node in (schema.get("properties") or {}).items():
            if prop in STANDARD and not table.field_description(short, prop):
                continue
            if node["description"] != table.field_description(short, prop):
                missing.append(f"{short}.{prop}")
    assert missing == []
