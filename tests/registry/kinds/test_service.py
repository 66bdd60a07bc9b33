"""core/v1 Service: defaults, allocation of cluster IPs and node ports, validation with
upstream's messages, what an update keeps, the printed columns."""

from __future__ import annotations

import copy

import pytest
from kind_helpers import created, ctx, messages, updated

from draemu.api.errors import StatusError
from draemu.apiserver.registry.core.service import ServiceStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit
SVC = ServiceStrategy()


def service(**spec: object) -> dict:
    base: dict = {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"}, "spec": base}


def test_defaults_of_a_cluster_ip_service() -> None:
    spec = created(SVC, service())["spec"]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == (
        "ClusterIP", "None", "Cluster")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["clusterIP"].startswith("10.") and spec["clusterIP"] != "10.96.0.1"


def test_client_ip_affinity_gets_the_default_timeout() -> None:
    spec = created(SVC, service(sessionAffinity="ClientIP"))["spec"]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_node_port_service_gets_a_port_in_range_and_traffic_policy() -> None:
    spec = created(SVC, service(type="NodePort"))["spec"]
    assert 30000 <= spec["ports"][0]["nodePort"] <= 32767
    assert spec["externalTrafficPolicy"] == "Cluster"


def test_load_balancer_defaults_and_pending_external_ip() -> None:
    obj = created(SVC, service(type="LoadBalancer"))
    assert obj["spec"]["allocateLoadBalancerNodePorts"] is True
    assert SVC.table_row(obj)[3] == "<pending>"


def test_headless_service_keeps_none() -> None:
    spec = created(SVC, service(clusterIP="None"))["spec"]
    assert spec["clusterIPs"] == ["None"]


def test_two_services_get_different_addresses() -> None:
    context = ctx()
    first = created(SVC, service(), context)
    second = created(SVC, service(), context)
    assert first["spec"]["clusterIP"] != second["spec"]["clusterIP"]


def test_a_taken_address_is_refused_as_upstream() -> None:
    taken = created(SVC, service(clusterIP="10.96.0.10"))
    with pytest.raises(StatusError) as err:
        created(SVC, service(clusterIP="10.96.0.10"), ctx({"services": [taken]}))
    assert err.value.code == 422
    assert err.value.message == (
        'Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to '
        "allocate IP 10.96.0.10: provided IP is already allocated")


def test_an_address_out_of_range_is_refused() -> None:
    with pytest.raises(StatusError) as err:
        created(SVC, service(clusterIP="192.168.1.1"))
    assert err.value.message.endswith(
        "failed to allocate IP 192.168.1.1: the provided IP (192.168.1.1) is not in the valid "
        "range. The range of valid IPs is 10.96.0.0/12")


def test_a_node_port_out_of_range_is_refused() -> None:
    with pytest.raises(StatusError) as err:
        created(SVC, service(type="NodePort", ports=[{"port": 80, "nodePort": 80}]))
    assert err.value.message.endswith(
        "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767")


def test_dual_stack_is_not_configured() -> None:
    with pytest.raises(StatusError) as err:
        created(SVC, service(ipFamilyPolicy="RequireDualStack"))
    assert "this cluster is not configured for dual-stack services" in err.value.message


def test_port_validation_messages() -> None:
    obj = created(SVC, service(ports=[{"port": 0, "protocol": "HTTP"},
                                      {"name": "a", "port": 80}]))
    assert messages(SVC.validate(obj, ctx())) == [
        "spec.ports[0].name: Required value",
        "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", '
        '"UDP"',
        "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
    ]


def test_ports_required_unless_headless_or_external_name() -> None:
    obj = created(SVC, service(ports=[]))
    assert "spec.ports: Required value" in messages(SVC.validate(obj, ctx()))
    external = created(SVC, service(type="ExternalName", externalName="db.example.com",
                                    ports=[]))
    assert SVC.validate(external, ctx()) == []


def test_duplicate_port_names() -> None:
    obj = created(SVC, service(ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81}]))
    assert messages(SVC.validate(obj, ctx())) == [
        'spec.ports[1].name: Duplicate value: "a"']


def test_node_port_forbidden_for_cluster_ip() -> None:
    obj = service(ports=[{"port": 80, "nodePort": 30001}])
    SVC.default(obj, "v1")
    assert "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'" in \
        messages(SVC.validate(obj, ctx()))


def test_cluster_ip_may_not_change() -> None:
    old = created(SVC, service())
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = new["spec"]["clusterIPs"][0] = "10.96.0.50"
    new = updated(SVC, new, old)
    assert messages(SVC.validate_update(new, old, ctx())) == [
        'spec.clusterIPs[0]: Invalid value: ["10.96.0.50"]: may not change once set']


def test_an_update_without_allocated_values_keeps_them() -> None:
    old = created(SVC, service(type="NodePort"))
    new = updated(SVC, service(type="NodePort"), old)
    assert new["spec"]["clusterIP"] == old["spec"]["clusterIP"]
    assert new["spec"]["ports"][0]["nodePort"] == old["spec"]["ports"][0]["nodePort"]
    assert SVC.validate_update(new, old, ctx()) == []


def test_changing_to_external_name_drops_the_cluster_ip() -> None:
    old = created(SVC, service())
    new = copy.deepcopy(old)
    new["spec"].update(type="ExternalName", externalName="db.example.com")
    new = updated(SVC, new, old)
    assert "clusterIP" not in new["spec"] and "ipFamilies" not in new["spec"]
    assert SVC.validate_update(new, old, ctx()) == []


def test_printed_columns() -> None:
    obj = created(SVC, service(type="NodePort", clusterIP="10.96.0.20"))
    port = obj["spec"]["ports"][0]["nodePort"]
    assert SVC.table_row(obj) == ["web", "NodePort", "10.96.0.20", "<none>",
                                  f"80:{port}/TCP", AGE, "app=web"]


def test_field_selectors() -> None:
    obj = created(SVC, service(clusterIP="10.96.0.21"))
    assert SVC.selectable_fields(obj) == {"spec.clusterIP": "10.96.0.21",
                                          "spec.type": "ClusterIP"}


def test_changing_to_node_port_allocates_ports_and_back_drops_them() -> None:
    old = created(SVC, service())
    to_node_port = copy.deepcopy(old)
    to_node_port["spec"]["type"] = "NodePort"
    node_port = updated(SVC, to_node_port, old)
    port = node_port["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767 and node_port["spec"]["externalTrafficPolicy"] == "Cluster"
    assert SVC.validate_update(node_port, old, ctx()) == []
    back = copy.deepcopy(node_port)
    back["spec"]["type"] = "ClusterIP"
    cluster_ip = updated(SVC, back, node_port)
    assert "nodePort" not in cluster_ip["spec"]["ports"][0]
    assert "externalTrafficPolicy" not in cluster_ip["spec"]
    assert SVC.validate_update(cluster_ip, node_port, ctx()) == []


def test_local_load_balancer_gets_a_health_check_port() -> None:
    spec = created(SVC, service(type="LoadBalancer", externalTrafficPolicy="Local"))["spec"]
    assert 30000 <= spec["healthCheckNodePort"] <= 32767
    assert spec["healthCheckNodePort"] != spec["ports"][0]["nodePort"]


def test_load_balancer_ingress_is_printed() -> None:
    obj = created(SVC, service(type="LoadBalancer"))
    obj["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}
    assert SVC.table_row(obj)[3] == "192.0.2.10"
