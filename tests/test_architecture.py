"""The layout holds the architecture: no component imports another.

Every Python file of the tree belongs to one part (by folder); every `import draemu.X`
or `from draemu.X import ...` in it, at any depth (function-level imports count),
names the part it reaches. A part may import only itself and the parts listed for it
below. The rule is ARCHITECTURE.md's: only the apiserver touches the store; the
scheduler, controllers, kubelets and drivers are API clients that share nothing but
the library; the library depends on no component; only the composition root
(`draemu/cmd/`) and the `kind` front end wire components together.

Relative imports count as the absolute names they resolve to, and every file of the tree
(tests, bench/ and examples/ too) is checked for bare top-level names: `import store` from
the repository root would load a second copy of `draemu.store` (each top-level package
refuses that at import time too, see `draemu.check_import_name`).
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
    # Users of draemu: they may import any part, but only by its draemu.* name.
    "examples": "examples",
    "tests": "users",
    "bench": "users",
    "setup.py": "users",
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
    "examples": {"library", "drivers"},
    "users": {"library", "root", "examples", "kind-compat", *COMPONENTS},
}

# Import names that are top-level folders of the tree: from the repository root they
# import, as a second copy of the draemu.* module (`store.errors.ConflictError is not
# draemu.store.errors.ConflictError`).
BARE_NAMES = {"store", "openapi", "apiserver", "scheduler", "controllers", "kubelet",
              "drivers", "examples", "tests", "bench"}


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


def module_name(path: Path) -> str | None:
    """The import name of a file in a package of the tree (None for tests/, bench/ and
    other files that are not in a package)."""
    rel = path.relative_to(ROOT)
    top = rel.parts[0]
    package = {"kind-compat": "kindcompat"}.get(top, top)
    if top != "draemu" and package not in NAMES:
        return None
    parts = ["draemu", *([] if top == "draemu" else [package]), *rel.parts[1:]]
    parts[-1] = parts[-1].removesuffix(".py")
    return ".".join(parts)


def resolve_relative(node: ast.ImportFrom, module: str | None, is_package: bool) -> str:
    """The absolute name of `from .x import y` in `module` ("" if it cannot resolve)."""
    if module is None:
        return ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level - 1 >= len(base):
        return ""
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(tree: ast.AST, module: str | None = None,
                     is_package: bool = False) -> list[tuple[int, str]]:
    """Every module a file imports, relative imports resolved: (line, name)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = node.module or "" if node.level == 0 else resolve_relative(
                node, module, is_package)
            if node.level and not name:
                found.append((node.lineno, "." * node.level + (node.module or "")))
                continue
            found.append((node.lineno, name))
            if name == "draemu" or (node.level and node.module is None):
                # from draemu import cmd, store, ...; from . import sibling
                found += [(node.lineno, f"{name}.{a.name}") for a in node.names]
    return found


def draemu_imports(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(line, m) for line, m in found if m == "draemu" or m.startswith("draemu.")]


def bare_imports(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Imports by a top-level folder's bare name, and relative imports that leave the
    tree's packages (both load modules under a name other than draemu.*)."""
    return [(line, m) for line, m in found
            if m.split(".")[0] in BARE_NAMES or m.startswith(".")]


def source_files() -> list[Path]:
    files = set()
    for folder in FOLDERS:
        paths = [ROOT / folder] if folder.endswith(".py") else (ROOT / folder).rglob("*.py")
        for path in paths:
            # draemu/store -> ../store and the other links are checked as their folders
            if not any((ROOT / p).is_symlink() for p in path.relative_to(ROOT).parents):
                files.add(path)
    return sorted(files)


def product_files() -> list[Path]:
    """The files of draemu itself (not its tests, benchmarks or examples)."""
    return [path for path in source_files() if part_of_file(path) not in ("users", "examples")]


def file_violations(path: Path, text: str) -> list[str]:
    part = part_of_file(path)
    if part is None:
        return []
    module = module_name(path)
    tree = ast.parse(text, filename=str(path))
    found = imported_modules(tree, module, path.name == "__init__.py")
    rel = path.relative_to(ROOT)
    bad = [f"{rel}:{line}: imports {m} by a name outside draemu.* (use draemu.{m.lstrip('.')}"
           f" and absolute imports across parts)" for line, m in bare_imports(found)]
    for line, name in draemu_imports(found):
        target = part_of_name(name)
        if target != part and target not in ALLOWED[part]:
            bad.append(f"{rel}:{line}: {part} imports {name} ({target})")
    return bad


def violations() -> list[str]:
    bad = []
    for path in source_files():
        bad += file_violations(path, path.read_text())
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


def test_the_check_catches_a_relative_import_across_parts():
    planted = ROOT / "scheduler" / "planted.py"
    bad = file_violations(planted, "from ..store import errors\n")
    assert bad == ["scheduler/planted.py:1: scheduler imports draemu.store (store)"]
    nested = ROOT / "scheduler" / "dra" / "planted.py"
    assert file_violations(nested, "from ...apiserver.registry import discover\n") == [
        "scheduler/dra/planted.py:1: scheduler imports draemu.apiserver.registry (apiserver)"]


def test_relative_imports_inside_a_part_pass():
    inside = ROOT / "apiserver" / "registry" / "resource" / "planted.py"
    assert file_violations(inside, "from . import walk\nfrom .fields import obj\n") == []


def test_the_check_catches_a_bare_top_level_import():
    for planted in (ROOT / "scheduler" / "planted.py", ROOT / "tests" / "planted.py",
                    ROOT / "draemu" / "planted.py"):
        for source in ("import store\n", "from store.errors import ConflictError\n",
                       "def f():\n    import apiserver.registry\n"):
            assert len(file_violations(planted, source)) == 1, (planted, source)


def test_a_relative_import_outside_a_package_is_caught():
    assert len(file_violations(ROOT / "tests" / "planted.py", "from .conftest import x\n")) == 1


def test_a_bare_top_level_import_fails_at_import_time():
    """From the repository root `import store` would load a second copy of draemu.store;
    each top-level package refuses it."""
    import subprocess
    import sys
    # examples/ holds no code, and pytest itself imports examples/__init__.py as `examples`
    # when it collects the example tests.
    for name in sorted(BARE_NAMES - {"tests", "bench", "examples"}):
        result = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT,
                                capture_output=True, text=True, check=False)
        assert result.returncode == 1, name
        assert f"import draemu.{name}, not {name}" in result.stderr, (name, result.stderr)


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
    copies = [str(path.relative_to(ROOT)) for path in product_files()
              if path != meta and "%Y-%m-%dT%H" in path.read_text()]
    assert copies == []


MAX_FUNCTION_LINES = 80
MAX_NESTING = 5


def nesting(statements: list[ast.stmt], depth: int = 0) -> int:
    """How deep compound statements (if, for, while, with, try, match) nest; an `elif`
    is the same level as its `if`, a nested function starts again (checked on its own)."""
    deepest = depth
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner: list[list[ast.stmt]] = []
        if isinstance(node, ast.If):
            inner.append(node.body)
            orelse = node.orelse
            while len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif
                inner.append(orelse[0].body)
                orelse = orelse[0].orelse
            inner.append(orelse)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            inner += [node.body, node.orelse]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            inner.append(node.body)
        elif isinstance(node, (ast.Try, ast.TryStar)):
            inner += [node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]]
        elif isinstance(node, ast.Match):
            inner += [case.body for case in node.cases]
        for body in inner:
            deepest = max(deepest, nesting(body, depth + 1))
    return deepest


def long_or_deep_functions(source: str, name: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            depth = nesting(node.body)
            if lines > MAX_FUNCTION_LINES or depth > MAX_NESTING:
                found.append(f"{name}:{node.lineno} {node.name}: {lines} lines, nesting {depth}")
    return found


def test_functions_are_short_and_shallow():
    """Product code keeps functions under ~80 lines and compound statements nested at most
    five deep (issue 29): a reader sees a function whole. Split a longer one by what its
    parts do; tests, bench/ and examples/ are not held to it."""
    found = []
    for path in product_files():
        found += long_or_deep_functions(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []


def test_the_size_check_catches_a_long_and_a_deep_function():
    long = "def f():\n" + "    x = 1\n" * 80
    deep = "def g(a):\n" + "".join("    " * (i + 1) + f"if a{i}:\n" for i in range(6)) + \
        "    " * 7 + "pass\n"
    shallow = "def h(a):\n    if a:\n        pass\n    elif b:\n        pass\n    else:\n" \
        "        pass\n"
    assert [f.split(": ", 1)[1] for f in long_or_deep_functions(long + deep + shallow, "x")] \
        == ["81 lines, nesting 0", "8 lines, nesting 6"]
