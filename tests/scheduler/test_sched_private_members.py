"""No code in scheduler/ reaches a private member of another object: `x._name` is read or
written only where x is `self` or `cls` (or `super()`), so each class keeps its state to
itself and the parts talk through public methods (the DRA manager, the handle, the
framework), as the project's rule says."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCHEDULER = Path(__file__).resolve().parents[2] / "scheduler"
OWN = {"self", "cls"}


def private_accesses(source: str) -> list[tuple[int, str]]:
    """(line, `x._name`) for each private attribute reached on something not its own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in OWN:
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) \
                and owner.func.id == "super":
            continue
        found.append((node.lineno, f"{ast.unparse(owner)}.{name}"))
    return found


def test_the_check_finds_a_private_member_of_another_object():
    assert private_accesses("def f(dra):\n    dra._inventory.hide()\n") == [
        (2, "dra._inventory")]
    assert private_accesses("class A:\n    def f(self):\n        self._x = cls._y = 1\n") \
        == []


@pytest.mark.parametrize("path", sorted(SCHEDULER.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(SCHEDULER)))
def test_no_private_member_of_another_object(path: Path):
    assert private_accesses(path.read_text()) == []
