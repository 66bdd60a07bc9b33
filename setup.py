"""Maps the architecture's top-level folders onto sub-packages of `draemu`.

`store/` installs as `draemu.store`, `apiserver/` as `draemu.apiserver`, and so on,
so the distribution claims the single import name `draemu` while the source tree
keeps the layout of ARCHITECTURE.md. Folders without an `__init__.py` are skipped,
which keeps data-only folders (schemas, presets) out of the package list; their files
are shipped as package data.
"""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
FOLDERS = {
    "draemu": "draemu",
    "draemu.store": "store",
    "draemu.apiserver": "apiserver",
    "draemu.scheduler": "scheduler",
    "draemu.controllers": "controllers",
    "draemu.kubelet": "kubelet",
    "draemu.drivers": "drivers",
    "draemu.openapi": "openapi",
    "draemu.kindcompat": "kind-compat",
    "draemu.examples": "examples",
}
DATA = ["*.json", "*.yaml", "*.yml", "*.proto", "*.txt", "*.md", "kind"]


def packages() -> tuple[list[str], dict[str, str]]:
    names: list[str] = []
    dirs: dict[str, str] = {}
    for package, folder in FOLDERS.items():
        base = ROOT / folder
        if not (base / "__init__.py").exists():
            continue
        dirs[package] = folder
        for init in sorted(base.rglob("__init__.py")):
            rel = init.parent.relative_to(base)
            if "__pycache__" in rel.parts:
                continue
            names.append(".".join([package, *rel.parts]) if rel.parts else package)
    return names, dirs


names, dirs = packages()
setup(packages=names, package_dir=dirs, package_data={name: DATA for name in names})
