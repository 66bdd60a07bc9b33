"""Fakes at the controllers' boundary: informers over a dict and a client that records
what the controller asked the API to do."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from draemu.api.types import Obj
from draemu.client import ApiError, key_of
from draemu.controllers.base import ControllerContext
from draemu.features import FeatureGates

_uids = itertools.count(1)


class FakeInformer:
    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self.handlers: list[tuple[Any, Any, Any]] = []

    def add_handler(self, on_add=None, on_update=None, on_delete=None) -> None:
        self.handlers.append((on_add, on_update, on_delete))

    def get(self, key: str) -> Obj | None:
        return self.objects.get(key)

    def list(self) -> list[Obj]:
        return list(self.objects.values())

    def keys(self) -> list[str]:
        return list(self.objects)

    def put(self, obj: Obj) -> Obj:
        obj.setdefault("metadata", {}).setdefault("uid", f"uid-{next(_uids)}")
        old = self.objects.get(key_of(obj))
        self.objects[key_of(obj)] = obj
        for add, update, _ in self.handlers:
            if old is None and add:
                add(obj)
            elif old is not None and update:
                update(old, obj)
        return obj

    def remove(self, key: str) -> None:
        obj = self.objects.pop(key, None)
        for _, _, delete in self.handlers:
            if obj is not None and delete:
                delete(obj)


class FakeInformers:
    def __init__(self) -> None:
        self.by_resource: dict[str, FakeInformer] = {}

    def informer(self, api_version: str, resource: str, **_: Any) -> FakeInformer:
        return self.by_resource.setdefault(resource, FakeInformer())


class FakeClient:
    """Records calls; `create` assigns names from generateName and uids."""

    def __init__(self, informers: FakeInformers) -> None:
        self.informers = informers
        self.calls: list[tuple[str, str, Any]] = []
        self.live: dict[tuple[str, str], Obj] = {}
        self._names = itertools.count(1)

    def of(self, verb: str, resource: str | None = None) -> list[Any]:
        return [c[2] for c in self.calls if c[0] == verb and (resource is None or
                                                               c[1] == resource)]

    async def create(self, api_version, resource, obj, namespace=None, **_: Any) -> Obj:
        obj = copy.deepcopy(obj)
        meta = obj["metadata"]
        if not meta.get("name"):
            meta["name"] = meta.pop("generateName") + f"x{next(self._names):04d}"
        meta["uid"] = f"uid-{next(_uids)}"
        meta["resourceVersion"] = "1"
        self.calls.append(("create", resource, obj))
        return obj

    async def update(self, api_version, resource, obj, namespace=None, subresource=None,
                     **_: Any) -> Obj:
        self.calls.append(("update" + (f"/{subresource}" if subresource else ""), resource,
                           copy.deepcopy(obj)))
        return copy.deepcopy(obj)

    async def patch(self, api_version, resource, name, patch, *, namespace=None,
                    subresource=None, **_: Any) -> Obj:
        self.calls.append(("patch" + (f"/{subresource}" if subresource else ""), resource,
                           (name, patch)))
        return {"metadata": {"name": name, "namespace": namespace}}

    async def delete(self, api_version, resource, name, namespace=None, **kw: Any) -> Obj:
        self.calls.append(("delete", resource, (namespace, name, kw)))
        return {}

    async def get(self, api_version, resource, name, namespace=None, **_: Any) -> Obj:
        self.calls.append(("get", resource, (namespace, name)))
        found = self.live.get((resource, f"{namespace}/{name}" if namespace else name))
        if found is None:
            raise ApiError(404, {"reason": "NotFound", "message": "not found"})
        return found


def context(settings: dict[str, float] | None = None) -> tuple[ControllerContext, FakeClient,
                                                                FakeInformers]:
    informers = FakeInformers()
    client = FakeClient(informers)
    ctx = ControllerContext(client, informers, FeatureGates(), settings or {})  # type: ignore
    return ctx, client, informers
