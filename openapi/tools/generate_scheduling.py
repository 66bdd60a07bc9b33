"""Generate the scheduling.k8s.io Workload, PodGroup and CompositePodGroup schemas (v1beta1,
v1alpha3) from the OpenAPI v3 documents of kubernetes v1.38.0-beta.0 (CompositePodGroup;
the files keep Workload's and PodGroup's from v1.37.2, whose types 1.38 did not change but
whose upstream descriptions it reworded)
(`api/openapi-spec/v3/apis__scheduling.k8s.io__<version>_openapi.json`, e.g. from the Go
module cache): the definitions reachable from these kinds and their lists, with our
own descriptions (`generate_resource.describe`), into
`openapi/schemas/scheduling.k8s.io__<version>-workloads.json`. `generate.py` owns
`scheduling.k8s.io__v1alpha3.json` (the v1alpha3 types batch/v1 refers to); definitions it
already writes are left to it.

    .venv/bin/python openapi/tools/generate_scheduling.py --reference DIR [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate  # the sibling generator: description helpers
from generate_resource import describe

KINDS = ("Workload", "WorkloadList", "PodGroup", "PodGroupList", "CompositePodGroup",
         "CompositePodGroupList")
VERSIONS = ("v1beta1", "v1alpha3")


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else []
        return out + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def reachable(schemas: dict[str, Any], version: str) -> dict[str, Any]:
    package = f"io.k8s.api.scheduling.{version}."
    todo = [package + k for k in KINDS]
    out: dict[str, Any] = {}
    while todo:
        name = todo.pop()
        if name in out or not name.startswith(package):
            continue
        out[name] = schemas[name]
        todo += _refs(schemas[name])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=generate.OUT)
    args = parser.parse_args(argv)
    for version in VERSIONS:
        doc = json.loads((args.reference / f"apis__scheduling.k8s.io__{version}_openapi.json")
                         .read_text())
        schemas = describe(reachable(doc["components"]["schemas"], version))
        owned = args.out / f"scheduling.k8s.io__{version}.json"
        taken = json.loads(owned.read_text())["components"]["schemas"] if owned.exists() else {}
        mine = {k: v for k, v in schemas.items() if k not in taken}
        path = args.out / f"scheduling.k8s.io__{version}-workloads.json"
        path.write_text(json.dumps({"components": {"schemas": dict(sorted(mine.items()))}},
                                   indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"{path}: {len(mine)} Workload/PodGroup schemas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
