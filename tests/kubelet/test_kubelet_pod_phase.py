"""The pod phase follows the kubelet's getPhase (issue 15): a container that could not be
created keeps its pod Pending, one waiting for a restart does not."""

from __future__ import annotations

import pytest

from draemu.kubelet.podstatus import ContainerRecord, PodState, build_status

pytestmark = pytest.mark.unit


def _pod(*names: str) -> dict:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": n, "image": "i"} for n in names]}}


def _state(*records: ContainerRecord) -> PodState:
    state = PodState("u", "default", "p", stage="running", prepared=True)
    state.containers = {r.name: r for r in records}
    return state


def test_a_container_waiting_in_create_container_error_keeps_the_pod_pending() -> None:
    rec = ContainerRecord("c", "i", False, waiting_reason="CreateContainerError",
                          waiting_message="unresolvable CDI devices gpu.example.com/gpu=0")
    status = build_status(_pod("c"), _state(rec), "10.0.0.1", {})
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == \
        "CreateContainerError"


def test_a_container_waiting_to_be_restarted_leaves_the_pod_running() -> None:
    rec = ContainerRecord("c", "i", False, waiting_reason="CrashLoopBackOff", restart_count=1,
                          last_terminated={"exitCode": 1, "reason": "Error"})
    assert build_status(_pod("c"), _state(rec), "10.0.0.1", {})["phase"] == "Running"
