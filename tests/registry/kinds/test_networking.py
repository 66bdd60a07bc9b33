"""networking.k8s.io Ingress, IngressClass, NetworkPolicy and node.k8s.io RuntimeClass:
defaults, validation with upstream's messages, columns."""

from __future__ import annotations

import copy

import pytest
from kind_helpers import created, ctx, messages

from draemu.apiserver.registry.networking.ingress import (
    IngressClassStrategy,
    IngressStrategy,
    NetworkPolicyStrategy,
)
from draemu.apiserver.registry.node.runtimeclass import RuntimeClassStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit
ING, CLASS, NETPOL, RUNTIME = (IngressStrategy(), IngressClassStrategy(),
                               NetworkPolicyStrategy(), RuntimeClassStrategy())


def ingress(paths: list[dict], **spec: object) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"rules": [{"host": "web.example.com", "http": {"paths": paths}}],
                     **spec}}


def test_ingress_paths_and_backends() -> None:
    bad = created(ING, ingress([
        {"path": "relative", "pathType": "Prefix",
         "backend": {"service": {"name": "web", "port": {"number": 80}}}},
        {"path": "/", "backend": {"service": {"name": "web", "port": {}}}}]))
    assert messages(ING.validate(bad, ctx())) == [
        'spec.rules[0].http.paths[0].path: Invalid value: "relative": must be an absolute path',
        "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
        "spec.rules[0].http.paths[1].backend.service.port: Required value: port name or "
        "number is required"]


def test_ingress_needs_rules_or_a_default_backend() -> None:
    obj = created(ING, ingress([]))
    obj["spec"] = {}
    assert messages(ING.validate(obj, ctx())) == [
        "spec: Invalid value: {}: either `defaultBackend` or `rules` must be specified"]


def test_ingress_columns() -> None:
    obj = created(ING, ingress([{"path": "/", "pathType": "Prefix", "backend": {
        "service": {"name": "web", "port": {"number": 80}}}}],
        tls=[{"hosts": ["web.example.com"]}]))
    obj["status"] = {"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}
    assert ING.table_row(obj) == ["web", "<none>", "web.example.com", "192.0.2.7", "80, 443",
                                  AGE]


def test_ingress_class_controller_and_default_marker() -> None:
    cls = created(CLASS, {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                          "metadata": {"name": "nginx", "annotations": {
                              "ingressclass.kubernetes.io/is-default-class": "true"}},
                          "spec": {"controller": "nginx"}})
    assert messages(CLASS.validate(cls, ctx())) == [
        'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as '
        '"acme.io/foo")']
    cls["spec"]["controller"] = "k8s.io/ingress-nginx"
    assert CLASS.table_row(cls) == ["nginx (default)", "k8s.io/ingress-nginx", "<none>", AGE]
    changed = copy.deepcopy(cls)
    changed["spec"]["controller"] = "example.com/other"
    assert messages(CLASS.validate_update(changed, cls, ctx()))[-1].endswith(
        "field is immutable")


def test_network_policy_defaults_and_ports() -> None:
    obj = created(NETPOL, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                           "metadata": {"name": "np", "namespace": "default"},
                           "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                                    "egress": [{"ports": [{"port": 90, "endPort": 80}]}]}})
    assert obj["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert obj["spec"]["egress"][0]["ports"][0]["protocol"] == "TCP"
    assert messages(NETPOL.validate(obj, ctx())) == [
        "spec.egress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal "
        "to `port`"]
    assert NETPOL.table_row(obj) == ["np", "app=web", AGE]


def test_runtime_class_handler() -> None:
    obj = created(RUNTIME, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                            "metadata": {"name": "nvidia"}, "handler": "NVIDIA"})
    assert messages(RUNTIME.validate(obj, ctx()))[0].startswith(
        'handler: Invalid value: "NVIDIA": a lowercase RFC 1123 label must consist of')
