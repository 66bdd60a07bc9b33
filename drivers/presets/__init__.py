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

from draemu.api import yamlload
from draemu.api.yamlerror import one_line

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
    # `legacyV1alpha3: true`: the cluster also serves resource.k8s.io/v1alpha3 in its
    # Kubernetes 1.31 shape, for manifests written then (the seed preset's introduction).
    legacy_v1alpha3: bool = False


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


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yamlload.load_file_text(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise PresetError(f"cannot read preset {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise PresetError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as err:
        raise PresetError(f"{path}: not valid YAML: {one_line(err)}") from None
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise PresetError(f"{path}: kind must be Preset")
    return data


def _list_of_mappings(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise PresetError(f"{where} must be a list of mappings")
    return value


def _node_names(entry: dict[str, Any], nodes: int | None, where: str,
                first: int = 1) -> list[str]:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise PresetError(f"{where}.name must be a non-empty string")
    if "count" not in entry:
        return [name]
    count = nodes if nodes is not None else entry["count"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise PresetError(f"{where}.count must be a whole number, not {count!r}")
    try:
        return [name.format(i=i) for i in range(first, first + count)]
    except (KeyError, IndexError, ValueError) as err:
        raise PresetError(f"{where}.name {name!r}: only {{i}} may be templated ({err})") \
            from None


def _drivers(entry: dict[str, Any], where: str) -> list[DriverSpec]:
    out = []
    for j, d in enumerate(_list_of_mappings(entry.get("drivers"), f"{where}.drivers")):
        if not isinstance(d.get("name"), str) or not isinstance(d.get("type"), str):
            raise PresetError(f"{where}.drivers[{j}] needs a name and a type (strings)")
        out.append(DriverSpec(d["name"], d["type"],
                              {k: v for k, v in d.items() if k not in ("name", "type")}))
    return out


def load_preset(name_or_path: str | Path, nodes: int | None = None, first: int = 1) -> Preset:
    """The preset; `nodes` replaces the count of its node template (a node with
    `count`), whose names' `{i}` then run from `first`."""
    path = preset_path(name_or_path)
    data = _read(path)
    entries = _list_of_mappings(data.get("nodes"), f"{path}: nodes")
    templated = [e for e in entries if "count" in e]
    if nodes is not None and not templated:
        raise PresetError(f"preset {path.stem} has no node template (a node with a count) "
                          "to scale")
    out: list[NodeSpec] = []
    for index, entry in enumerate(entries):
        where = f"{path}: nodes[{index}]"
        for key, kind in (("labels", dict), ("taints", list), ("capacity", dict)):
            if entry.get(key) is not None and not isinstance(entry[key], kind):
                raise PresetError(f"{where}.{key} must be a {kind.__name__}")
        for name in _node_names(entry, nodes, where, first):
            # Each node gets its own driver specs: no config dict is shared by nodes.
            out.append(NodeSpec(
                name=name, labels=dict(entry.get("labels") or {}),
                taints=list(entry.get("taints") or []), capacity=entry.get("capacity"),
                drivers=_drivers(entry, where)))
    seen: set[str] = set()
    for node in out:
        if node.name in seen:
            raise PresetError(f"{path}: node {node.name} is listed twice")
        seen.add(node.name)
    classes = _list_of_mappings(data.get("deviceClasses"), f"{path}: deviceClasses")
    for index, entry in enumerate(classes):
        if not isinstance(entry.get("name"), str) or not isinstance(entry.get("driver"), str):
            raise PresetError(f"{path}: deviceClasses[{index}] needs a name and a driver "
                              "(strings)")
    legacy = data.get("legacyV1alpha3", False)
    if not isinstance(legacy, bool):
        raise PresetError(f"{path}: legacyV1alpha3 must be true or false")
    return Preset(name=path.stem, description=str(data.get("description", "")),
                  device_classes=list(classes), nodes=out, legacy_v1alpha3=legacy)


def device_class_object(entry: dict[str, Any]) -> dict[str, Any]:
    """A resource.k8s.io/v1 DeviceClass selecting one driver's devices."""
    selectors = [{"cel": {"expression": f'device.driver == "{entry["driver"]}"'}}]
    selectors += [{"cel": {"expression": e}} for e in entry.get("extraSelectors") or []]
    spec: dict[str, Any] = {"selectors": selectors}
    if entry.get("extendedResourceName"):
        spec["extendedResourceName"] = entry["extendedResourceName"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": entry["name"]}, "spec": spec}
