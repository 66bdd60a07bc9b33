"""How the kubelet reads a container's securityContext for the process runtime: the
capabilities containerd would give it, and the user ranges of pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from draemu.kubelet.runtime.base import RuntimeError_
from draemu.kubelet.runtime.userns import FIRST, SIZE, IdRanges
from draemu.kubelet.security import CAPABILITIES, DEFAULT_CAPABILITIES, capabilities

pytestmark = pytest.mark.unit


def names(numbers: list[int] | None) -> set[str] | None:
    return None if numbers is None else {CAPABILITIES[n] for n in numbers}


def test_capabilities_are_containerds_default_set_with_add_and_drop():
    assert names(capabilities({})) == set(DEFAULT_CAPABILITIES)
    assert names(capabilities({"capabilities": {"add": ["net_admin", "CAP_SYS_TIME"],
                                                "drop": ["CHOWN"]}})) == \
        set(DEFAULT_CAPABILITIES) - {"CHOWN"} | {"NET_ADMIN", "SYS_TIME"}
    assert names(capabilities({"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}})) \
        == {"NET_BIND_SERVICE"}
    assert names(capabilities({"capabilities": {"add": ["ALL"], "drop": ["SYS_ADMIN"]}})) == \
        set(CAPABILITIES) - {"SYS_ADMIN"}
    assert capabilities({"privileged": True, "capabilities": {"drop": ["ALL"]}}) is None


def test_an_unknown_capability_is_refused():
    with pytest.raises(RuntimeError_, match='unknown capability "CAP_FLY" in '
                                            r"securityContext.capabilities.add"):
        capabilities({"capabilities": {"add": ["CAP_FLY"]}})


def test_two_kubelets_never_hand_out_the_same_range(tmp_path: Path):
    first, second = IdRanges(tmp_path), IdRanges(tmp_path)
    mine = first.for_pod("pod-a")
    assert first.for_pod("pod-a") == mine  # one range per pod
    theirs = second.for_pod("pod-a")  # the same pod uid elsewhere: the next free range
    assert theirs != mine
    assert mine.base >= FIRST and (mine.base - FIRST) % SIZE == 0
    first.release("pod-a")
    assert IdRanges(tmp_path).for_pod("pod-a") == mine  # free again
    second.close()  # a kubelet that ends frees its ranges
    assert IdRanges(tmp_path).for_pod("pod-a") == theirs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ranges.lock"]
