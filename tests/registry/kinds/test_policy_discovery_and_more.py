"""PodDisruptionBudget, HorizontalPodAutoscaler, Endpoints, EndpointSlice, ResourceQuota,
LimitRange, CertificateSigningRequest, ServiceCIDR and IPAddress: defaults, validation
with upstream's messages and the printed columns."""

from __future__ import annotations

import base64

import pytest
from kind_helpers import created, ctx, messages

from draemu.apiserver.registry.autoscaling.horizontalpodautoscaler import (
    HorizontalPodAutoscalerStrategy,
)
from draemu.apiserver.registry.certificates.certificates import (
    CertificateSigningRequestStrategy,
)
from draemu.apiserver.registry.core.endpoints import EndpointsStrategy
from draemu.apiserver.registry.core.resourcequota import LimitRangeStrategy, ResourceQuotaStrategy
from draemu.apiserver.registry.discovery.endpointslice import EndpointSliceStrategy
from draemu.apiserver.registry.networking.networking import IPAddressStrategy, ServiceCIDRStrategy
from draemu.apiserver.registry.policy.poddisruptionbudget import PodDisruptionBudgetStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit
PDB, HPA, EP, EPS = (PodDisruptionBudgetStrategy(), HorizontalPodAutoscalerStrategy(),
                     EndpointsStrategy(), EndpointSliceStrategy())
QUOTA, LIMITS = ResourceQuotaStrategy(), LimitRangeStrategy()
CSR = CertificateSigningRequestStrategy()
CIDR, IP = ServiceCIDRStrategy(), IPAddressStrategy()


def obj(kind: str, api_version: str, name: str = "x", **fields: object) -> dict:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "default"}, **fields}


def test_pdb_both_bounds_and_percentages() -> None:
    both = created(PDB, obj("PodDisruptionBudget", "policy/v1", spec={
        "minAvailable": 1, "maxUnavailable": "150%"}))
    assert messages(PDB.validate(both, ctx())) == [
        'spec: Invalid value: {"maxUnavailable":"150%","minAvailable":1}: minAvailable and '
        "maxUnavailable cannot be both set",
        'spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%']
    fine = created(PDB, obj("PodDisruptionBudget", "policy/v1", spec={"minAvailable": "50%"}))
    assert fine["status"]["disruptionsAllowed"] == 0
    assert PDB.table_row(fine) == ["x", "50%", "N/A", 0, AGE]


def test_hpa_defaults_validation_and_targets_column() -> None:
    hpa = created(HPA, obj("HorizontalPodAutoscaler", "autoscaling/v2", spec={
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 5}))
    assert hpa["spec"]["minReplicas"] == 1
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert HPA.validate(hpa, ctx()) == []
    assert HPA.table_row(hpa) == ["x", "Deployment/web", "cpu: <unknown>/80%", "1", 5, 0, AGE]
    bad = created(HPA, obj("HorizontalPodAutoscaler", "autoscaling/v2", spec={
        "scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 3, "maxReplicas": 2}))
    assert messages(HPA.validate(bad, ctx())) == [
        "spec.scaleTargetRef.name: Required value",
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"]


def test_endpoints_column_and_address_rules() -> None:
    ep = created(EP, obj("Endpoints", "v1", subsets=[{
        "addresses": [{"ip": f"10.1.0.{i}"} for i in range(1, 5)],
        "ports": [{"port": 80}]}]))
    assert EP.table_row(ep) == ["x", "10.1.0.1:80,10.1.0.2:80,10.1.0.3:80 + 1 more...", AGE]
    loopback = created(EP, obj("Endpoints", "v1", subsets=[{
        "addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}]}]))
    assert messages(EP.validate(loopback, ctx())) == [
        'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback '
        "range (127.0.0.0/8, ::1/128)"]


def test_endpoint_slice_address_type_and_columns() -> None:
    eps = created(EPS, obj("EndpointSlice", "discovery.k8s.io/v1", addressType="IPv4",
                           endpoints=[{"addresses": ["10.1.0.1"]}, {"addresses": ["fd00::1"]}],
                           ports=[{"port": 80}]))
    assert eps["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]
    assert messages(EPS.validate(eps, ctx())) == [
        'endpoints[1].addresses[0]: Invalid value: "fd00::1": must be an IPv4 address']
    assert EPS.table_row(eps) == ["x", "IPv4", "80", "10.1.0.1,fd00::1", AGE]


def test_quota_columns_and_scopes() -> None:
    quota = created(QUOTA, obj("ResourceQuota", "v1", spec={
        "hard": {"pods": "10", "limits.cpu": "4"}, "scopes": ["Forever"]}))
    assert messages(QUOTA.validate(quota, ctx())) == [
        'spec.scopes: Unsupported value: "Forever": supported values: "BestEffort", '
        '"CrossNamespacePodAffinity", "NotBestEffort", "NotTerminating", "PriorityClass", '
        '"Terminating", "VolumeAttributesClass"']
    quota["status"] = {"hard": {"pods": "10", "limits.cpu": "4"},
                       "used": {"pods": "2", "limits.cpu": "1"}}
    assert QUOTA.table_row(quota) == ["x", AGE, "pods: 2/10", "limits.cpu: 1/4"]


def test_limit_range_container_defaults_from_max() -> None:
    lr = created(LIMITS, obj("LimitRange", "v1", spec={"limits": [
        {"type": "Container", "max": {"cpu": "2"}}]}))
    item = lr["spec"]["limits"][0]
    assert (item["default"], item["defaultRequest"]) == ({"cpu": "2"}, {"cpu": "2"})
    assert LIMITS.validate(lr, ctx()) == []
    assert LIMITS.table_row(lr) == ["x", "2026-01-01T00:00:00Z"]


def test_csr_takes_the_requester_from_the_request() -> None:
    pem = b"-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"
    csr = created(CSR, obj("CertificateSigningRequest", "certificates.k8s.io/v1", spec={
        "request": base64.b64encode(pem).decode(), "signerName": "example.com/s",
        "usages": ["client auth"], "username": "mallory"}))
    assert (csr["spec"]["username"], csr["spec"]["groups"]) == (
        "alice", ["dev", "system:authenticated"])
    assert CSR.validate(csr, ctx()) == []
    assert CSR.table_row(csr) == ["x", AGE, "example.com/s", "alice", "<none>", "Pending"]


def test_service_cidr_and_ip_address_names() -> None:
    cidr = created(CIDR, obj("ServiceCIDR", "networking.k8s.io/v1", spec={
        "cidrs": ["10.96.0.0/12", "10.100.0.0/16"]}))
    assert messages(CIDR.validate(cidr, ctx())) == [
        'spec.cidrs: Invalid value: ["10.96.0.0/12","10.100.0.0/16"]: may specify no more '
        "than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
    assert IP.validate_name("10.96.0.010", False) == [
        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    assert IP.validate_name("10.96.0.10", False) == []


def test_quota_resource_names_and_integers() -> None:
    quota = created(QUOTA, obj("ResourceQuota", "v1", spec={"hard": {
        "gpus": "1", "pods": "1.5", "count/deployments.apps": "2",
        "gpu.deviceclass.resource.k8s.io/devices": "500m"}}))
    assert messages(QUOTA.validate(quota, ctx())) == [
        'spec.hard[gpus]: Invalid value: "gpus": must be a standard resource for quota',
        'spec.hard[pods]: Invalid value: "1.5": must be an integer',
        'spec.hard[gpu.deviceclass.resource.k8s.io/devices]: Invalid value: "500m": must be an '
        "integer"]
