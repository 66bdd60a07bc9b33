"""`--controllers` as kube-controller-manager reads it: `*`, NAME, -NAME, upstream's
NAME-controller spelling; unknown names refused with the known ones listed."""

from __future__ import annotations

import pytest

from draemu.controllers import manager
from draemu.controllers.names import NAMES, select

pytestmark = pytest.mark.unit


def test_every_controller_of_the_manager_is_named() -> None:
    assert list(NAMES) == manager.ALL


@pytest.mark.parametrize(("spec", "expected"), [
    ("", None),
    (" , ", None),
    ("*", list(NAMES)),
    ("*,-node-lifecycle", [n for n in NAMES if n != "node-lifecycle"]),
    ("*,-node-lifecycle-controller", [n for n in NAMES if n != "node-lifecycle"]),
    ("resourceclaim-controller,job", ["resourceclaim", "job"]),
    ("job,job,*", ["job", *[n for n in NAMES if n != "job"]]),
    ("-job", []),
])
def test_selection(spec: str, expected: list[str] | None) -> None:
    assert select(spec) == expected


def test_unknown_names_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError) as e:
        select("*,-nodelifecycle,bogus")
    assert str(e.value).startswith("unknown controllers: nodelifecycle, bogus; known: "
                                   "resourceclaim, device-taint-eviction, node-lifecycle")
