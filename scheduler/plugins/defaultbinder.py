"""DefaultBinder: binds the pod by creating its `pods/binding` subresource."""

from __future__ import annotations

from collections.abc import Iterable

from draemu.client import ApiError, Client
from draemu.scheduler.framework import SUCCESS, BindPlugin, ClusterEvent, CycleState, Status
from draemu.scheduler.framework.handle import Handle


class DefaultBinder(BindPlugin):
    name = "DefaultBinder"

    def __init__(self, client: Client) -> None:
        self._client = client

    def events(self) -> Iterable[ClusterEvent]:
        return []

    async def bind(self, state: CycleState, pod: dict, node_name: str) -> Status:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                         "uid": meta["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            await self._client.create("v1", "pods", binding, namespace=meta["namespace"],
                                      subresource="binding", name=meta["name"], decode=False)
        except ApiError as e:
            return Status.error(f"binding rejected: {e.message}")
        return SUCCESS


def new(_args: None, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle.client)
