"""The apiserver's garbage-collector freezer: what lived through a full collection is
frozen, and cyclic garbage among frozen objects is collected once the frozen set has
grown enough."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from draemu.apiserver.server import gcfreeze
from draemu.apiserver.server.gcfreeze import GCFreezer

pytestmark = pytest.mark.unit


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def freezer() -> Iterator[GCFreezer]:
    try:
        yield GCFreezer()
    finally:
        gc.unfreeze()  # the test process's collector as it was
        gc.collect()


def test_objects_that_lived_through_a_full_collection_are_frozen(
        freezer: GCFreezer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcfreeze, "FREEZE_AT", 1500)
    freezer._collect(unfreeze=False)
    few = [Node() for _ in range(100)]
    gc.collect()
    freezer.step()  # too few survivors to bother
    assert freezer.freezes == 0
    kept = [Node() for _ in range(2000)]
    frozen = gc.get_freeze_count()
    freezer.step()  # no full collection since: nothing to do
    assert gc.get_freeze_count() == frozen and freezer.freezes == 0
    gc.collect()
    freezer.step()
    assert freezer.freezes == 1
    assert gc.get_freeze_count() >= frozen + len(kept)
    # frozen objects are out of the collector's lists
    assert not any(o is kept[0] or o is few[0] for o in gc.get_objects(generation=2))


def test_cyclic_garbage_among_frozen_objects_is_collected_when_the_set_grew(
        freezer: GCFreezer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcfreeze, "FREEZE_AT", 0)
    freezer._collect(unfreeze=False)
    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    gc.collect()
    freezer.step()  # the cycle is frozen
    del a, b
    gc.collect()
    assert gone() is not None  # a full collection does not reach it
    monkeypatch.setattr(gcfreeze, "MIN_REGROW", 0)
    monkeypatch.setattr(gcfreeze, "REGROW", 0.0)
    freezer.step()  # the frozen set grew (by the cycle): everything is collected again
    assert freezer.recollections == 2
    assert gone() is None


def test_absorbed_objects_do_not_count_as_growth(
        freezer: GCFreezer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcfreeze, "MIN_REGROW", 100)
    freezer._collect(unfreeze=False)
    cached = [{"n": [i]} for i in range(5000)]
    freezer.absorb()
    freezer.step()
    assert freezer.recollections == 1  # no recollection for what was absorbed
    assert not any(o is cached[0] for o in gc.get_objects())
