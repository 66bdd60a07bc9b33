"""Service links: a container gets the variables of its namespace's Services, as the
kubelet writes them (enableServiceLinks, on by default; a conformance spec checks them)."""

from __future__ import annotations

import pytest

from draemu.client import Client
from draemu.cmd.nodes import node_kubeconfig, start_node
from draemu.cmd.testing.e2e import eventually
from draemu.drivers.presets import NodeSpec
from draemu.features import FeatureGates
from draemu.kubelet.envvars import service_link_env

pytestmark = pytest.mark.unit

SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "fooservice", "namespace": "default"},
           "spec": {"clusterIP": "10.96.0.42", "selector": {"app": "x"},
                    "ports": [{"name": "http", "port": 8765, "targetPort": 8080},
                              {"name": "dns-udp", "port": 53, "protocol": "UDP"}]}}


def test_a_services_variables_as_the_kubelet_writes_them():
    assert service_link_env(SERVICE) == {
        "FOOSERVICE_SERVICE_HOST": "10.96.0.42",
        "FOOSERVICE_SERVICE_PORT": "8765",
        "FOOSERVICE_SERVICE_PORT_HTTP": "8765",
        "FOOSERVICE_SERVICE_PORT_DNS_UDP": "53",
        "FOOSERVICE_PORT": "tcp://10.96.0.42:8765",
        "FOOSERVICE_PORT_8765_TCP": "tcp://10.96.0.42:8765",
        "FOOSERVICE_PORT_8765_TCP_PROTO": "tcp",
        "FOOSERVICE_PORT_8765_TCP_PORT": "8765",
        "FOOSERVICE_PORT_8765_TCP_ADDR": "10.96.0.42",
        "FOOSERVICE_PORT_53_UDP": "udp://10.96.0.42:53",
        "FOOSERVICE_PORT_53_UDP_PROTO": "udp",
        "FOOSERVICE_PORT_53_UDP_PORT": "53",
        "FOOSERVICE_PORT_53_UDP_ADDR": "10.96.0.42",
    }


def test_headless_services_have_no_variables():
    headless = {**SERVICE, "spec": {**SERVICE["spec"], "clusterIP": "None"}}
    assert service_link_env(headless) == {}


@pytest.fixture
async def client(apiserver):
    async with Client.from_kubeconfig(str(apiserver.kubeconfig_path)) as c:
        yield c


async def _log_of(client: Client, name: str) -> str | None:
    pod = await client.get("v1", "pods", name, "default")
    if (pod.get("status") or {}).get("phase") != "Running":
        return None
    _status, _headers, body = await client.request(
        "GET", f"/api/v1/namespaces/default/pods/{name}/log")
    return body.decode()


async def test_a_pod_gets_its_namespaces_services_unless_it_opts_out(apiserver, client,
                                                                     tmp_path):
    path = node_kubeconfig(apiserver, tmp_path, "node-1")
    node = await start_node(NodeSpec("node-1"), kubeconfig=path, data_dir=tmp_path,
                            server=apiserver, runtime="fake", feature_gates=FeatureGates())
    try:
        service = {**SERVICE, "spec": {k: v for k, v in SERVICE["spec"].items()
                                       if k != "clusterIP"}}
        created = await client.create("v1", "services", service, "default")
        ip = created["spec"]["clusterIP"]
        for name, links in (("linked", None), ("unlinked", False)):
            spec = {"nodeName": "node-1", "containers": [{"name": "main", "image": "busybox"}]}
            if links is not None:
                spec["enableServiceLinks"] = links
            await client.create("v1", "pods", {"apiVersion": "v1", "kind": "Pod",
                                               "metadata": {"name": name}, "spec": spec},
                                "default")
        linked = await eventually(lambda: _log_of(client, "linked"))
        unlinked = await eventually(lambda: _log_of(client, "unlinked"))
        assert f'declare -x FOOSERVICE_SERVICE_HOST="{ip}"' in linked
        assert f'declare -x FOOSERVICE_PORT_8765_TCP="tcp://{ip}:8765"' in linked
        assert "FOOSERVICE_" not in unlinked
    finally:
        await node.stop()
