"""`--controllers` as kube-controller-manager reads it: `*`, NAME, -NAME, upstream's
NAME-controller spelling; unknown names refused with the known ones listed. And the
registry those names come from: one entry per controller, each naming its class and
the ServiceAccount whose bootstrap role it acts with."""

from __future__ import annotations

import pytest

from draemu.apiserver.auth.rbac.bootstrappolicy import policy
from draemu.controllers.base import Controller
from draemu.controllers.registry import CONTROLLERS, NAMES, select
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit


def test_every_entry_names_its_controller_class() -> None:
    assert len(NAMES) == len(CONTROLLERS) == len(set(NAMES))
    for entry in CONTROLLERS:
        cls = entry.load()
        assert issubclass(cls, Controller) and cls.name == entry.name


def test_every_controller_account_is_bound_to_its_bootstrap_role() -> None:
    objects = policy(FeatureGates.parse("DRAResourcePoolStatus=true"))
    roles = {r["metadata"]["name"] for r in objects["clusterRoles"]}
    bound = {(b["roleRef"]["name"], s["name"]) for b in objects["clusterRoleBindings"]
             for s in b.get("subjects") or [] if s.get("kind") == "ServiceAccount"}
    for entry in CONTROLLERS:
        if entry.service_account is not None:
            assert entry.role in roles, entry.name
            assert (entry.role, entry.service_account) in bound, entry.name


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
