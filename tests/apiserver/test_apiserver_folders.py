"""apiserver/'s folders import one way (apiserver/README.md, "Folders"): a module imports
modules of its own folder and of the folders below it, never above, so the generic
store never reaches into the HTTP handlers, nor the registry into admission."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

APISERVER = Path(__file__).resolve().parents[2] / "apiserver"

# Folder -> floor; a folder may import floors at or below its own (two folders on one
# floor do not import each other: the test would say so as a cycle).
FLOORS = {"wire": 0, "auth": 1, "apiextensions": 2, "registry": 3, "storage": 4,
          "admission": 5, "genericregistry": 6, "endpoints": 7, "flowcontrol": 8,
          "controlplane": 8, "server": 9}


def _imports(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    if "draemu.apiserver" not in text:  # imports nothing of the apiserver's (by name)
        return []
    found = []
    for node in ast.walk(ast.parse(text, filename=str(path))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["draemu", "apiserver"] and len(parts) > 2:
                found.append((node.lineno, parts[2]))
    return found


def violations() -> list[str]:
    bad = []
    for path in sorted(APISERVER.rglob("*.py")):
        rel = path.relative_to(APISERVER)
        if len(rel.parts) < 2:
            continue  # apiserver/__init__.py
        source = rel.parts[0]
        for line, target in _imports(path):
            if target == source or target not in FLOORS:
                continue
            if FLOORS[target] >= FLOORS[source]:
                bad.append(f"apiserver/{rel}:{line}: {source} imports {target}")
    return bad


def test_every_folder_has_a_floor() -> None:
    folders = {p.name for p in APISERVER.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(FLOORS)


def test_folders_import_only_the_folders_below_them() -> None:
    assert violations() == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    planted = tmp_path / "x.py"
    planted.write_text("def f():\n    from draemu.apiserver.endpoints.scope import Scope\n")
    assert _imports(planted) == [(2, "endpoints"), (2, "endpoints")]
    assert FLOORS["endpoints"] > FLOORS["genericregistry"]
