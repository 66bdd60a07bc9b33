"""Recording Events about objects, the way Kubernetes components do.

Repeats of the same event (same object, type, reason and message) within ten minutes
bump `count` and `lastTimestamp` of the first Event instead of creating new ones.

Most components write core/v1 Events, as kube-controller-manager and the kubelet do;
the scheduler writes events.k8s.io/v1 Events (`api="events.k8s.io/v1"`, with an
`action` and an `eventTime`), as kube-scheduler does; repeats then count in `series`.
"""

from __future__ import annotations

import time
from typing import Any

from draemu.api.meta import micro_time_now, time_now
from draemu.client.rest import ApiError, Client
from draemu.log import get_logger

log = get_logger("events")
_DEDUP_WINDOW = 600.0


class EventRecorder:
    def __init__(self, client: Client, component: str, host: str = "", *,
                 api: str = "v1") -> None:
        self.client = client
        self.component = component
        self.host = host
        self.api = api
        self._seen: dict[tuple[str, ...], tuple[str, str, int, float]] = {}

    async def event(self, obj: dict[str, Any], type_: str, reason: str, message: str,
                    action: str = "", field_path: str | None = None) -> None:
        """Record an event; failures are logged, never raised (events are best effort).
        `field_path`: the part of the object it is about (the kubelet's
        `spec.containers{NAME}`)."""
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        key = (meta.get("uid", ""), type_, reason, message, field_path or "")
        now = time_now()
        v1events = self.api == "events.k8s.io/v1"
        try:
            seen = self._seen.get(key)
            if seen and time.monotonic() - seen[3] < _DEDUP_WINDOW:
                name, ns, count, _ = seen
                if v1events:
                    await self.client.patch(self.api, "events", name, {"series": {
                        "count": count + 1, "lastObservedTime": micro_time_now()}},
                        namespace=ns, decode=False)
                else:
                    await self.client.patch("v1", "events", name, {
                        "count": count + 1, "lastTimestamp": now}, namespace=ns, decode=False)
                self._seen[key] = (name, ns, count + 1, time.monotonic())
                return
            involved = {
                "kind": obj.get("kind", ""),
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
                "apiVersion": obj.get("apiVersion", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
                "fieldPath": field_path or "",
            }
            name = f"{meta.get('name', 'unknown')}.{time.time_ns():x}"
            if v1events:
                await self.client.create(self.api, "events", {
                    "apiVersion": self.api, "kind": "Event",
                    "metadata": {"name": name, "namespace": namespace},
                    "eventTime": micro_time_now(), "reportingController": self.component,
                    "reportingInstance": f"{self.component}-{self.host}" if self.host
                    else self.component,
                    "action": action or reason, "reason": reason, "note": message,
                    "type": type_, "regarding": {k: v for k, v in involved.items() if v},
                }, namespace=namespace, decode=False)
            else:
                await self.client.create("v1", "events", self._core_event(
                    name, namespace, involved, type_, reason, message, now),
                    namespace=namespace, decode=False)
            self._seen[key] = (name, namespace, 1, time.monotonic())
            if len(self._seen) > 4096:
                oldest = sorted(self._seen.items(), key=lambda kv: kv[1][3])[:1024]
                for k, _ in oldest:
                    self._seen.pop(k, None)
        except (ApiError, OSError, ValueError, KeyError) as e:
            log.debug("event not recorded", reason=reason, error=str(e))

    def _core_event(self, name: str, namespace: str, involved: dict[str, Any], type_: str,
                    reason: str, message: str, now: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {k: v for k, v in involved.items() if v},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component, **({"host": self.host}
                                                        if self.host else {})},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host or self.component,
        }

    def forget(self, uid: str) -> None:
        """Drop what is kept for counting repeats of the object `uid` (it is gone)."""
        for key in [k for k in self._seen if k[0] == uid]:
            del self._seen[key]
