"""Writes that skip the private copy of the stored object (PUT, JSON / merge / strategic
merge patches, their /status forms) leave the watch cache's object alone: the revision
they replaced is what the store holds for it, field for field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit
pytest_plugins = ["draemu.cmd.testing.apiserver"]

KEY = "/registry/core/pods/default/p"


def pod() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "labels": {"a": "1", "z": "0"},
                         "annotations": {"n": "1"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "env": [{"name": "E", "value": "1"}]}],
                     "tolerations": [{"key": "k", "operator": "Exists"}]}}


async def test_updates_and_patches_leave_the_cached_revision_as_stored(
        apiserver: APIServer) -> None:
    assert apiserver.api is not None
    cache = apiserver.api.store.cache
    client = apiserver.loopback_client("copies-test")
    try:
        await client.create("v1", "pods", pod(), namespace="default")
        writes = [
            ("merge", {"metadata": {"labels": {"a": "2", "b": "x", "z": None},
                                    "annotations": {"o": "1"}}}, None),
            ("strategic", {"metadata": {"annotations": {"n": None, "m": "2"}},
                           "spec": {"containers": [{"name": "c", "image": "busybox:2"}]}},
             None),
            ("json", [{"op": "add", "path": "/metadata/labels/c", "value": "3"},
                      {"op": "remove", "path": "/metadata/annotations/m"}], None),
            ("strategic", {"status": {"conditions": [{"type": "PodScheduled",
                                                      "status": "False"}]}}, "status"),
            ("merge", {"status": {"phase": "Pending", "message": "m"}}, "status"),
        ]
        for patch_type, body, subresource in writes:
            before = cache.get(KEY)
            snapshot = copy.deepcopy(before)
            await client.patch("v1", "pods", "p", body, patch_type=patch_type,
                               namespace="default", subresource=subresource)
            assert before == snapshot, (patch_type, subresource)
        for subresource in (None, "status"):
            before = cache.get(KEY)
            snapshot = copy.deepcopy(before)
            body = copy.deepcopy(before)
            body["metadata"]["labels"]["d"] = "4"
            body["status"]["message"] = "put"
            await client.update("v1", "pods", body, namespace="default",
                                subresource=subresource)
            assert before == snapshot, ("put", subresource)
            now = cache.get(KEY)
            assert now is not before
            # Unpinned: the resourceVersion left out, the PUT may be retried.
            unpinned = copy.deepcopy(now)
            del unpinned["metadata"]["resourceVersion"]
            unpinned["metadata"]["labels"]["e"] = "5"
            snapshot = copy.deepcopy(now)
            await client.update("v1", "pods", unpinned, namespace="default",
                                subresource=subresource)
            assert now == snapshot, ("unpinned put", subresource)
        final = await client.get("v1", "pods", "p", namespace="default")
        assert final["metadata"]["labels"] == {"a": "2", "b": "x", "c": "3", "d": "4",
                                               "e": "5"}
        assert final["spec"]["containers"][0]["image"] == "busybox:2"
        assert final["spec"]["containers"][0]["env"] == [{"name": "E", "value": "1"}]
        assert final["metadata"]["annotations"] == {"o": "1"}
        assert final["status"]["message"] == "put"
    finally:
        await client.close()
