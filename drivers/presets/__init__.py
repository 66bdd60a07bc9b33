"""Cluster presets: which nodes exist, their drivers and devices, and the DeviceClasses.

A preset is a YAML file (see `seed.yaml`); `load_preset("seed")` reads a built-in one,
`load_preset("path/to/file.yaml")` a user's copy. A node entry with `count` and `{i}` in
its name is a template: `count` nodes numbered from 1, and `nodes=N` rescales it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
KINDS = {"Preset"}


class PresetError(ValueError):
    pass


@dataclass
class DriverSpec:
    name: str
    type: str  # a built-in driver implementation: "gpu" or "nic"
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeSpec:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    capacity: dict[str, str] | None = None
    drivers: list[DriverSpec] = field(default_factory=list)


@dataclass
class Preset:
    name: str
    description: str
    device_classes: list[dict[str, Any]]
    nodes: list[NodeSpec]


def available() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.yaml"))


def preset_path(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise PresetError(f"preset file {path} does not exist")
        return path
    builtin = HERE / f"{name_or_path}.yaml"
    if not builtin.exists():
        raise PresetError(f"unknown preset {name_or_path!r} (built-in: {', '.join(available())};"
                          " or give a path to a YAML file)")
    return builtin


def load_preset(name_or_path: str | Path, nodes: int | None = None) -> Preset:
    path = preset_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise PresetError(f"{path}: {err}") from err
    if data.get("kind") not in KINDS:
        raise PresetError(f"{path}: kind must be Preset")
    entries = data.get("nodes") or []
    templated = [e for e in entries if "count" in e]
    if nodes is not None and not templated:
        raise PresetError(f"preset {path.stem} has no node template to scale with --nodes")
    out: list[NodeSpec] = []
    for entry in entries:
        if "count" in entry:
            count = nodes if nodes is not None else int(entry["count"])
            names = [entry["name"].format(i=i) for i in range(1, count + 1)]
        else:
            names = [entry["name"]]
        for name in names:
            out.append(NodeSpec(
                name=name, labels=dict(entry.get("labels") or {}),
                taints=list(entry.get("taints") or []), capacity=entry.get("capacity"),
                drivers=[DriverSpec(d["name"], d["type"],
                                    {k: v for k, v in d.items() if k not in ("name", "type")})
                         for d in entry.get("drivers") or []]))
    seen: set[str] = set()
    for node in out:
        if node.name in seen:
            raise PresetError(f"{path}: node {node.name} is listed twice")
        seen.add(node.name)
    return Preset(name=path.stem, description=str(data.get("description", "")),
                  device_classes=list(data.get("deviceClasses") or []), nodes=out)


def device_class_object(entry: dict[str, Any]) -> dict[str, Any]:
    """A resource.k8s.io/v1 DeviceClass selecting one driver's devices."""
    selectors = [{"cel": {"expression": f'device.driver == "{entry["driver"]}"'}}]
    selectors += [{"cel": {"expression": e}} for e in entry.get("extraSelectors") or []]
    spec: dict[str, Any] = {"selectors": selectors}
    if entry.get("extendedResourceName"):
        spec["extendedResourceName"] = entry["extendedResourceName"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": entry["name"]}, "spec": spec}
