"""Core v1 Events about pods, as the kubelet records them (source component `kubelet`)."""

from __future__ import annotations

import time
from typing import Any

from draemu.api.meta import time_now
from draemu.client import ApiError, Client
from draemu.log import get_logger

log = get_logger("kubelet.events")


class EventRecorder:
    def __init__(self, client: Client, node_name: str) -> None:
        self.client = client
        self.node_name = node_name
        # (pod uid, reason, message) → the event, so repeats bump `count` like upstream.
        self._seen: dict[tuple[str, str, str], dict[str, Any]] = {}

    async def pod_event(self, pod: dict[str, Any], type_: str, reason: str, message: str,
                        field_path: str | None = None) -> None:
        meta = pod["metadata"]
        involved = {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"],
                    "uid": meta["uid"], "apiVersion": "v1",
                    "resourceVersion": meta.get("resourceVersion", "")}
        if field_path:
            involved["fieldPath"] = field_path
        now = time_now()
        key = (meta["uid"], reason, message)
        try:
            previous = self._seen.get(key)
            if previous is not None:
                previous["count"] += 1
                previous["lastTimestamp"] = now
                patch = {"count": previous["count"], "lastTimestamp": now}
                await self.client.patch("v1", "events", previous["metadata"]["name"], patch,
                                        namespace=meta["namespace"])
                return
            event = {
                "apiVersion": "v1", "kind": "Event",
                # upstream's recorder names events <object>.<UnixNano in hex>: in time
                # order, so `kubectl describe` lists same-second events as they happened
                "metadata": {"name": f"{meta['name']}.{time.time_ns():x}",
                             "namespace": meta["namespace"]},
                "involvedObject": involved, "reason": reason, "message": message,
                "type": type_, "source": {"component": "kubelet", "host": self.node_name},
                "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                "eventTime": None, "reportingComponent": "kubelet",
                "reportingInstance": self.node_name,
            }
            created = await self.client.create("v1", "events", event,
                                               namespace=meta["namespace"])
            self._seen[key] = created
        except ApiError as err:
            log.warning("event not recorded", reason=reason, error=err.message)

    def forget(self, pod_uid: str) -> None:
        for key in [k for k in self._seen if k[0] == pod_uid]:
            del self._seen[key]
