"""The official Python client (kubernetes 37) and kubernetes_asyncio against the server:
CRUD, watch, every patch type, and a 409 on a stale resourceVersion."""

from __future__ import annotations

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from draemu.apiserver.server.lifecycle import APIServer

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def core(module_apiserver: APIServer) -> client.CoreV1Api:
    api_client = config.new_client_from_config(str(module_apiserver.kubeconfig_path))
    return client.CoreV1Api(api_client)


def _cm(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


def test_crud_round_trip(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", _cm("py-crud", a="1"))
    assert created.metadata.uid
    read = core.read_namespaced_config_map("py-crud", "default")
    assert read.data == {"a": "1"}
    read.data["a"] = "2"
    replaced = core.replace_namespaced_config_map("py-crud", "default", read)
    assert replaced.data == {"a": "2"}
    names = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
    assert "py-crud" in names
    core.delete_namespaced_config_map("py-crud", "default")
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("py-crud", "default")
    assert e.value.status == 404


def test_stale_resource_version_is_409(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", _cm("py-stale", a="1"))
    core.patch_namespaced_config_map("py-stale", "default", {"data": {"a": "2"}})
    created.data["a"] = "3"
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map("py-stale", "default", created)
    assert e.value.status == 409


def test_every_patch_type(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", _cm("py-patch", a="1"))
    smp = core.patch_namespaced_config_map("py-patch", "default", {"data": {"b": "2"}})
    assert smp.data == {"a": "1", "b": "2"}
    jp = core.patch_namespaced_config_map(
        "py-patch", "default", [{"op": "remove", "path": "/data/a"}])
    assert jp.data == {"b": "2"}
    merge = core.patch_namespaced_config_map(
        "py-patch", "default", {"data": {"c": "3"}}, _content_type="application/merge-patch+json")
    assert merge.data == {"b": "2", "c": "3"}
    applied = core.patch_namespaced_config_map(
        "py-patch", "default", {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "py-patch"}, "data": {"d": "4"}},
        field_manager="py", force=True, _content_type="application/apply-patch+yaml")
    assert applied.data["d"] == "4"


def test_watch_receives_added_events(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("py-watch"))
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, "default", resource_version=rv,
                          timeout_seconds=10):
        if event["object"].metadata.name == "py-watch":
            assert event["type"] == "ADDED"
            w.stop()
            break
    else:
        pytest.fail("no event for py-watch")


def test_pods_and_namespaces_deserialize_strictly(core: client.CoreV1Api) -> None:
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="py-pod"),
                       spec=client.V1PodSpec(containers=[client.V1Container(name="c",
                                                                            image="i")]))
    created = core.create_namespaced_pod("default", pod)
    assert created.spec.containers[0].name == "c"
    namespaces = {n.metadata.name for n in core.list_namespace().items}
    assert "kube-system" in namespaces


async def test_kubernetes_asyncio_lists_and_watches(apiserver: APIServer) -> None:
    from kubernetes_asyncio import client as aclient
    from kubernetes_asyncio import config as aconfig
    from kubernetes_asyncio import watch as awatch

    api_client = await aconfig.new_client_from_config(str(apiserver.kubeconfig_path))
    async with api_client:
        core = aclient.CoreV1Api(api_client)
        await core.create_namespaced_config_map(
            "default", aclient.V1ConfigMap(metadata=aclient.V1ObjectMeta(name="aio")))
        names = [c.metadata.name for c in (await core.list_namespaced_config_map(
            "default")).items]
        assert names == ["aio"]
        w = awatch.Watch()
        async for event in w.stream(core.list_namespaced_config_map, "default",
                                    timeout_seconds=5):
            assert (event["type"], event["object"].metadata.name) == ("ADDED", "aio")
            w.stop()
            break
