"""Resolving CDI device IDs into container edits, as a container runtime does.

Specs are read from the node's CDI directories (YAML or JSON, `*.yaml`/`*.json` only,
temp files ignored); a later directory has higher priority, so a device defined in both
resolves from the later one; the same device twice at one priority is a conflict. Each
spec is checked against the rules of its declared `cdiVersion`. Edits are applied in the
order of the requested IDs: a spec's global `containerEdits` once, then each device's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from draemu.api import yamlload

KNOWN_VERSIONS = ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0",
                  "1.0.0", "1.1.0"]
_EDIT_KEYS = {"env", "deviceNodes", "mounts", "hooks", "additionalGids", "intelRdt",
              "netDevices"}
_SPEC_KEYS = {"cdiVersion", "kind", "annotations", "devices", "containerEdits"}
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
_VENDOR = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")


class CDIError(Exception):
    pass


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def _required_version(spec: dict[str, Any]) -> str:
    """The minimum cdiVersion the content needs (a subset of the library's rules)."""
    need = "0.3.0"
    edits = [spec.get("containerEdits") or {}] + [
        d.get("containerEdits") or {} for d in spec.get("devices") or []]

    def bump(v: str) -> None:
        nonlocal need
        if _version_key(v) > _version_key(need):
            need = v

    if spec.get("annotations") or any(d.get("annotations") for d in spec.get("devices") or []):
        bump("0.6.0")
    if "." in spec.get("kind", "").partition("/")[2]:
        bump("0.6.0")
    if any(str(d.get("name", "a"))[:1].isdigit() for d in spec.get("devices") or []):
        bump("0.5.0")
    for e in edits:
        if e.get("additionalGids") or e.get("intelRdt"):
            bump("0.7.0")
        if e.get("netDevices"):
            bump("1.1.0")
    return need


def validate_spec(spec: Any, source: str) -> None:
    if not isinstance(spec, dict):
        raise CDIError(f"{source}: not a CDI spec object")
    unknown = set(spec) - _SPEC_KEYS
    if unknown:
        raise CDIError(f"{source}: unknown field(s) {', '.join(sorted(unknown))}")
    version = str(spec.get("cdiVersion", ""))
    if version not in KNOWN_VERSIONS:
        raise CDIError(f"{source}: invalid version {version!r}")
    need = _required_version(spec)
    if _version_key(version) < _version_key(need):
        raise CDIError(f"{source}: the spec needs version {need} or later, declares {version}")
    vendor, sep, cls = str(spec.get("kind", "")).partition("/")
    if not sep or not _VENDOR.match(vendor) or not _VENDOR.match(cls):
        raise CDIError(f"{source}: invalid kind {spec.get('kind')!r}")
    devices = spec.get("devices")
    if not devices:
        raise CDIError(f"{source}: no devices")
    for edits in [spec.get("containerEdits") or {}] + [d.get("containerEdits") for d in devices]:
        if not isinstance(edits, dict) or set(edits) - _EDIT_KEYS:
            raise CDIError(f"{source}: invalid containerEdits {edits!r}")
    for d in devices:
        if not _NAME.match(str(d.get("name", ""))):
            raise CDIError(f"{source}: invalid device name {d.get('name')!r}")
        if not d.get("containerEdits"):
            raise CDIError(f"{source}: device {d['name']}: empty device edits")


@dataclass
class ContainerEdits:
    env: list[str] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    device_nodes: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    additional_gids: list[int] = field(default_factory=list)

    def apply(self, edits: dict[str, Any]) -> None:
        self.env += edits.get("env") or []
        self.mounts += edits.get("mounts") or []
        self.device_nodes += edits.get("deviceNodes") or []
        self.hooks += edits.get("hooks") or []
        self.additional_gids += edits.get("additionalGids") or []

    def env_map(self) -> dict[str, str]:
        """Later entries win, as in the OCI process env."""
        out: dict[str, str] = {}
        for item in self.env:
            name, _, value = item.partition("=")
            out[name] = value
        return out


@dataclass
class _Cached:
    mtime_ns: int
    spec: dict[str, Any] | None
    error: str | None


class CDIRegistry:
    """The devices of all specs in `dirs` (lowest priority first); files re-read on change."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = [Path(d) for d in dirs]
        self._cache: dict[Path, _Cached] = {}

    def _load(self, path: Path) -> _Cached:
        mtime = path.stat().st_mtime_ns
        cached = self._cache.get(path)
        if cached and cached.mtime_ns == mtime:
            return cached
        try:
            text = path.read_text()
            spec = json.loads(text) if path.suffix == ".json" else yamlload.load_file_text(text)
            validate_spec(spec, str(path))
            cached = _Cached(mtime, spec, None)
        except (OSError, ValueError, yaml.YAMLError, CDIError) as err:
            cached = _Cached(mtime, None, str(err))
        self._cache[path] = cached
        return cached

    def devices(self) -> tuple[dict[str, tuple[dict[str, Any], dict[str, Any]]], list[str]]:
        """Qualified name → (spec, device), and the errors of specs that were skipped."""
        found: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        errors: list[str] = []
        for directory in self.dirs:
            level: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
            paths = sorted(p for p in directory.glob("*") if p.suffix in (".yaml", ".json")
                           and not p.name.startswith("."))
            for path in paths:
                try:
                    cached = self._load(path)
                except FileNotFoundError:
                    continue  # replaced while we listed the directory
                if cached.spec is None:
                    errors.append(cached.error or str(path))
                    continue
                for device in cached.spec["devices"]:
                    qualified = f"{cached.spec['kind']}={device['name']}"
                    if qualified in level:
                        errors.append(f"{path}: conflicting device {qualified}")
                        continue
                    level[qualified] = (cached.spec, device)
            found.update(level)
        return found, errors

    def resolve(self, ids: list[str]) -> ContainerEdits:
        devices, errors = self.devices()
        edits = ContainerEdits()
        applied_specs: set[int] = set()
        for qualified in ids:
            entry = devices.get(qualified)
            if entry is None:
                detail = f" ({'; '.join(errors)})" if errors else ""
                raise CDIError(f"unresolvable CDI devices {qualified}{detail}")
            spec, device = entry
            if id(spec) not in applied_specs:
                applied_specs.add(id(spec))
                edits.apply(spec.get("containerEdits") or {})
            edits.apply(device["containerEdits"])
        return edits
