"""The event recorder every component uses, against a real apiserver: core/v1 Events
with the part of the object they are about, repeats counted on the first Event, and
the count started afresh once the object is forgotten."""

from __future__ import annotations

import pytest

from draemu.client import Client, EventRecorder

pytestmark = pytest.mark.unit


async def test_repeats_count_on_one_event_and_forget_starts_again(apiserver) -> None:
    client = Client.from_kubeconfig(apiserver.kubeconfig_path, user_agent="test")
    try:
        pod = await client.create("v1", "pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, namespace="default")
        pod.setdefault("kind", "Pod")
        recorder = EventRecorder(client, "kubelet", "node-1")
        for _ in range(3):
            await recorder.event(pod, "Normal", "Started", "Started container c",
                                 field_path="spec.containers{c}")
        await recorder.event(pod, "Normal", "Started", "Started container c")
        events = (await client.list("v1", "events", namespace="default"))["items"]
        by_path = {e["involvedObject"].get("fieldPath", ""): e for e in events}
        assert set(by_path) == {"spec.containers{c}", ""}
        counted = by_path["spec.containers{c}"]
        assert counted["count"] == 3
        assert counted["involvedObject"]["kind"] == "Pod"
        assert counted["involvedObject"]["uid"] == pod["metadata"]["uid"]
        assert counted["source"] == {"component": "kubelet", "host": "node-1"}
        assert counted["reportingInstance"] == "node-1"

        recorder.forget(pod["metadata"]["uid"])
        await recorder.event(pod, "Normal", "Started", "Started container c",
                             field_path="spec.containers{c}")
        events = (await client.list("v1", "events", namespace="default"))["items"]
        assert len(events) == 3
    finally:
        await client.close()


async def test_events_k8s_io_repeats_count_and_what_is_kept_stays_bounded(apiserver) -> None:
    client = Client.from_kubeconfig(apiserver.kubeconfig_path, user_agent="test")
    try:
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "default", "uid": "u-1"}}
        recorder = EventRecorder(client, "default-scheduler", "host",
                                 api="events.k8s.io/v1")
        for _ in range(2):
            await recorder.event(pod, "Warning", "FailedScheduling", "no nodes")
        events = (await client.list("events.k8s.io/v1", "events",
                                    namespace="default"))["items"]
        assert len(events) == 1 and events[0]["series"]["count"] == 2
        assert events[0]["regarding"]["uid"] == "u-1"
        # Many objects: what is kept to count repeats is pruned, as for core events.
        for i in range(4100):
            recorder._seen[(f"u-{i + 2}", "Normal", "Scheduled", "m", "")] = (
                f"e{i}", "default", 1, float(i))
        await recorder.event(pod, "Normal", "Scheduled", "once more")
        assert len(recorder._seen) <= 4096
    finally:
        await client.close()
