"""The layout holds the architecture: no component imports another.

Every Python file of the tree belongs to one part (by folder); every `import draemu.X`
or `from draemu.X import ...` in it, at any depth (function-level imports count),
names the part it reaches. A part may import only itself and the parts listed for it
below. The rule is ARCHITECTURE.md's: only the apiserver touches the store; the
scheduler, controllers, kubelets and drivers are API clients that share nothing but
the library; the library depends on no component; only the composition root
(`draemu/cmd/`) and the `kind` front end wire components together.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent

# Folder -> part. The library is `draemu/` less its root wing and the links to the
# top-level folders (draemu/store -> ../store, ...).
FOLDERS = {
    "store": "store",
    "openapi": "openapi",
    "apiserver": "apiserver",
    "scheduler": "scheduler",
    "controllers": "controllers",
    "kubelet": "kubelet",
    "drivers": "drivers",
    "kind-compat": "kind-compat",
    "draemu/cmd": "root",
    "draemu/__main__.py": "root",  # python -m draemu
    "draemu": "library",
}

# Import name (the part after `draemu.`) -> part.
NAMES = {
    "store": "store",
    "openapi": "openapi",
    "apiserver": "apiserver",
    "scheduler": "scheduler",
    "controllers": "controllers",
    "kubelet": "kubelet",
    "drivers": "drivers",
    "kindcompat": "kind-compat",
    "examples": "examples",
    "cmd": "root",
}

COMPONENTS = {"store", "openapi", "apiserver", "scheduler", "controllers", "kubelet",
              "drivers"}
ALLOWED: dict[str, set[str]] = {
    "library": set(),
    "store": {"library"},
    "openapi": {"library"},
    "apiserver": {"library", "store", "openapi"},
    "scheduler": {"library"},
    "controllers": {"library"},
    "kubelet": {"library"},
    "drivers": {"library"},
    "root": {"library", "examples", *COMPONENTS},
    "kind-compat": {"library", "root"},
}


def part_of_file(path: Path) -> str | None:
    rel = path.relative_to(ROOT).as_posix()
    for folder, part in FOLDERS.items():
        if rel == folder or rel.startswith(folder + "/"):
            return part
    return None


def part_of_name(module: str) -> str:
    if module == "draemu":
        return "library"
    head = module.split(".")[1]
    return NAMES.get(head, "library")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "draemu":  # from draemu import cmd, store, ...
                found += [(node.lineno, f"draemu.{a.name}") for a in node.names]
    return [(line, m) for line, m in found if m == "draemu" or m.startswith("draemu.")]


def source_files() -> list[Path]:
    files = set()
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            # draemu/store -> ../store and the other links are checked as their folders
            if not any((ROOT / p).is_symlink() for p in path.relative_to(ROOT).parents):
                files.add(path)
    return sorted(files)


def violations() -> list[str]:
    bad = []
    for path in source_files():
        part = part_of_file(path)
        if part is None:
            continue
        text = path.read_text()
        if "draemu" not in text:  # imports nothing of draemu's
            continue
        tree = ast.parse(text, filename=str(path))
        for line, module in imported_modules(tree):
            target = part_of_name(module)
            if target != part and target not in ALLOWED[part]:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {part} imports {module} "
                           f"({target})")
    return bad


def test_no_forbidden_import():
    assert violations() == []


def test_every_part_is_checked():
    parts = {part_of_file(p) for p in source_files()}
    assert parts >= set(ALLOWED)


def test_the_check_catches_a_forbidden_import(tmp_path):
    tree = ast.parse("def f():\n    from draemu.apiserver.registry import discover\n")
    [(line, module)] = imported_modules(tree)
    assert line == 2 and part_of_name(module) == "apiserver"
    assert "apiserver" not in ALLOWED["scheduler"]


def test_import_names_are_paths():
    """draemu.<name> is draemu/<name> in the tree: each top-level folder is linked."""
    for name, part in NAMES.items():
        if part in ("root",):
            continue
        link = ROOT / "draemu" / name
        assert link.is_symlink() and (link / "__init__.py").is_file(), name


def test_every_test_module_is_marked_unit_or_e2e():
    """`make test-fast` selects by marker: each test module says what it is
    (`pytestmark = pytest.mark.unit` in-process, `pytest.mark.e2e` with real processes,
    kubectl, Go programs or PostgreSQL; add `pytest.mark.slow` when it takes seconds)."""
    marked = re.compile(r"^pytestmark = (\[[^\]]*\]|.*)", re.M)
    unmarked = []
    for path in sorted([*(ROOT / "tests").rglob("test_*.py"),
                        *(ROOT / "examples").rglob("test_*.py")]):
        found = marked.search(path.read_text())
        if not found or not re.search(r"mark\.(unit|e2e)\b", found.group(1)):
            unmarked.append(str(path.relative_to(ROOT)))
    assert unmarked == []


def test_objects_have_one_alias():
    """`Obj` (a Kubernetes object as decoded JSON) is `draemu.api.types.Obj`, imported,
    not defined again in each module."""
    again = [str(path.relative_to(ROOT))
             for path in sorted({*source_files(), *(ROOT / "tests").rglob("*.py")})
             if path != ROOT / "draemu" / "api" / "types.py"
             and "\nObj = dict[str, Any]" in "\n" + path.read_text()]
    assert again == []


def test_test_module_names_are_unique():
    """Test folders are not packages, so pytest imports each module by its file name: two
    test_x.py in different folders stop the whole suite's collection."""
    seen: dict[str, list[str]] = {}
    for path in [*(ROOT / "tests").rglob("test_*.py"), *(ROOT / "examples").rglob("test_*.py")]:
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_name_and_age_columns_are_defined_once():
    """Strategies print Name, Age and Created At with registry.strategy's NAME_COLUMN,
    AGE_COLUMN and CREATED_AT_COLUMN, not with copies of their definitions."""
    strategy = ROOT / "apiserver" / "registry" / "strategy.py"
    copies = [str(path.relative_to(ROOT))
              for path in sorted((ROOT / "apiserver" / "registry").rglob("*.py"))
              if path != strategy and ("Name must be unique within a" in path.read_text()
                                       or "CreationTimestamp is a" in path.read_text())]
    assert copies == []


def test_timestamps_are_formatted_in_one_place():
    """metav1.Time and MicroTime are written by draemu.api.meta (format_time, time_now,
    format_micro_time, micro_time_now), not by strftime copies."""
    meta = ROOT / "draemu" / "api" / "meta.py"
    copies = [str(path.relative_to(ROOT)) for path in source_files()
              if path != meta and "%Y-%m-%dT%H" in path.read_text()]
    assert copies == []
