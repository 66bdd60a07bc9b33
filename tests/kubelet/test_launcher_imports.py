"""The launcher starts every container: it imports the standard library and its own
`confine/` modules only (no draemu, nothing installed), so it starts in milliseconds and
runs under any Python the kubelet's machine has."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from draemu.kubelet.runtime.netns import LAUNCHER

pytestmark = pytest.mark.unit


def test_the_launcher_imports_only_the_standard_library_and_its_confine_modules():
    files = [LAUNCHER, *sorted(LAUNCHER.with_name("confine").glob("*.py"))]
    foreign = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("__future__", "confine"):
                    foreign.append(f"{Path(path).name}: {name}")
    assert not foreign
