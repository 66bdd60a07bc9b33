"""Pod Security Admission's checks, levels, versions and answers, worded as
kube-apiserver's PodSecurity plugin words them; and every fixture of upstream's
k8s.io/pod-security-admission test data (each pod at each level and version it is
written for) decided as upstream decides it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from draemu.apiserver.admission.podsecurity.decisions import Attributes, PodSecurity
from draemu.apiserver.admission.podsecurity.evaluator import Evaluator
from draemu.apiserver.admission.podsecurity.levels import (
    BASELINE,
    LATEST,
    PRIVILEGED,
    RESTRICTED,
    LevelVersion,
    Policy,
    Version,
    policy_of,
)

pytestmark = pytest.mark.unit

FIXTURES = (Path.home() / ".cache/draemu/go/mod/k8s.io/pod-security-admission@v0.37.2/test"
            / "testdata")

RESTRICTED_CONTAINER = {"name": "app", "image": "app:1", "securityContext": {
    "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}


def pod(*containers: dict[str, Any], name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": list(containers) or [{"name": "app", "image": "app:1"}],
                     **spec}}


def evaluate(level: str, obj: dict[str, Any], version: Version = LATEST) -> Any:
    return Evaluator().evaluate(LevelVersion(level, version), obj["metadata"], obj["spec"])


def namespace(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "ns", "labels": labels}}


def create(obj: dict[str, Any], labels: dict[str, str], resource: str = "pods",
           group: str = "") -> Any:
    attrs = Attributes("CREATE", group, resource, "", "ns", obj["metadata"]["name"], obj)
    return PodSecurity(Evaluator()).admit(attrs, lambda _n: namespace(labels), lambda _n: [])


@pytest.mark.slow
@pytest.mark.skipif(not FIXTURES.is_dir(), reason="needs the Go module cache's "
                    "k8s.io/pod-security-admission@v0.37.2 (make test builds it)")
def test_every_upstream_fixture_is_decided_as_upstream_decides_it():
    wrong, count = [], 0
    for level in (BASELINE, RESTRICTED):
        for folder in sorted((FIXTURES / level).iterdir()):
            version = Version(int(folder.name.split(".")[1]))
            for expected in ("pass", "fail"):
                for file in sorted((folder / expected).glob("*.yaml")):
                    obj = yaml.safe_load(file.read_text())
                    template = obj if obj["kind"] == "Pod" else obj["spec"]["template"]
                    spec = copy.deepcopy(template["spec"])
                    for volume in spec.get("volumes") or []:  # the API's defaulting
                        if set(volume) == {"name"}:
                            volume["emptyDir"] = {}
                    result = Evaluator().evaluate(LevelVersion(level, version),
                                                  template.get("metadata") or {}, spec)
                    count += 1
                    if result.allowed != (expected == "pass"):
                        wrong.append(f"{level}/{folder.name}/{expected}/{file.name}")
    assert count > 4000 and not wrong


def test_baseline_names_every_violation_in_upstreams_order_and_words():
    bad = pod({"name": "a", "image": "a", "securityContext": {
                  "privileged": True, "capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}},
               "ports": [{"containerPort": 80, "hostPort": 80},
                         {"containerPort": 443, "hostPort": 443}]},
              {"name": "b", "image": "b", "ports": [{"containerPort": 9, "hostPort": 9}]},
              hostNetwork=True, hostPID=True,
              volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    assert evaluate(BASELINE, bad).detail() == (
        'non-default capabilities (container "a" must not include "NET_ADMIN", "SYS_ADMIN" in '
        "securityContext.capabilities.add), "
        "host namespaces (hostNetwork=true, hostPID=true), "
        'hostPath volumes (volume "root"), '
        'hostPort (containers "a", "b" use hostPorts 443, 80, 9), '
        'privileged (container "a" must not set securityContext.privileged=true)')


def test_restricted_adds_its_own_checks_and_replaces_the_baseline_ones_it_tightens():
    bad = pod({"name": "a", "image": "a", "securityContext": {"capabilities": {
        "add": ["SYS_ADMIN"]}}}, securityContext={"runAsUser": 0})
    assert evaluate(RESTRICTED, bad).detail() == (
        'allowPrivilegeEscalation != false (container "a" must set '
        "securityContext.allowPrivilegeEscalation=false), "
        'unrestricted capabilities (container "a" must set securityContext.capabilities.drop='
        '["ALL"]; container "a" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add), "
        'runAsNonRoot != true (pod or container "a" must set securityContext.runAsNonRoot=true), '
        "runAsUser=0 (pod must not set runAsUser=0), "
        'seccompProfile (pod or container "a" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")')
    assert evaluate(RESTRICTED, pod(RESTRICTED_CONTAINER)).allowed


def test_a_pinned_version_runs_the_checks_of_that_release():
    no_drop = pod({"name": "a", "image": "a", "securityContext": {
        "allowPrivilegeEscalation": False, "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"}}})
    assert evaluate(RESTRICTED, no_drop, Version(21)).allowed  # capabilities from 1.22
    assert not evaluate(RESTRICTED, no_drop, Version(22)).allowed
    in_userns = pod(RESTRICTED_CONTAINER, hostUsers=False, securityContext={"runAsUser": 0})
    assert not evaluate(RESTRICTED, in_userns, Version(34)).allowed
    assert evaluate(RESTRICTED, in_userns, Version(35)).allowed  # relaxed from 1.35
    sysctl = pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat",
                                               "value": "1"}]})
    assert evaluate(BASELINE, sysctl, Version(36)).detail() == \
        "forbidden sysctls (net.ipv4.tcp_notsent_lowat)"
    assert evaluate(BASELINE, sysctl, Version(99)).allowed  # newer than any check: latest
    assert Evaluator(emulated=Version(36)).evaluate(
        LevelVersion(BASELINE, LATEST), sysctl["metadata"], sysctl["spec"]).allowed is False


def test_labels_give_the_policy_and_bad_labels_are_field_errors():
    policy, errors = policy_of({"pod-security.kubernetes.io/enforce": "baseline",
                                "pod-security.kubernetes.io/enforce-version": "v1.30",
                                "pod-security.kubernetes.io/audit": "restricted"})
    assert (str(policy.enforce), str(policy.audit), str(policy.warn)) == \
        ("baseline:v1.30", "restricted:latest", "baseline:v1.30")  # warn follows enforce
    assert not errors
    policy, errors = policy_of({"pod-security.kubernetes.io/enforce": "strict",
                                "pod-security.kubernetes.io/warn-version": "1.30"})
    assert policy.enforce.level == RESTRICTED and policy.warn.level == PRIVILEGED
    assert [str(e) for e in errors] == [
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must '
        "be one of privileged, baseline, restricted",
        'metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must '
        'be "latest" or "v1.x"']
    assert policy_of({}) == (Policy(), [])


def test_enforce_denies_a_pod_with_upstreams_status_and_warn_and_audit_do_not():
    privileged = pod({"name": "c", "image": "c", "securityContext": {"privileged": True}},
                     name="root")
    answer = create(privileged, {"pod-security.kubernetes.io/enforce": "baseline"})
    assert answer.error is not None
    assert (answer.error.code, answer.error.reason, answer.error.message,
            answer.error.details) == (
        403, "Forbidden",
        'pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged '
        '(container "c" must not set securityContext.privileged=true)',
        {"name": "root", "kind": "pods"})
    assert answer.audit == {"enforce-policy": "baseline:latest"}
    answer = create(privileged, {"pod-security.kubernetes.io/warn": "baseline",
                                 "pod-security.kubernetes.io/audit": "restricted"})
    assert answer.allowed
    assert answer.warnings == ['would violate PodSecurity "baseline:latest": privileged '
                               '(container "c" must not set securityContext.privileged=true)']
    assert answer.audit["enforce-policy"] == "privileged:latest"
    assert answer.audit["audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": privileged (container "c" must not')
    assert create(privileged, {}).audit == {"enforce-policy": "privileged:latest"}


def test_a_deployment_is_warned_about_but_never_denied():
    deployment = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"template": {
        "metadata": {}, "spec": {"containers": [{"name": "c", "image": "c",
                                                 "securityContext": {"privileged": True}}]}}}}
    answer = create(deployment, {"pod-security.kubernetes.io/enforce": "baseline"},
                    "deployments", "apps")
    assert answer.allowed
    assert answer.warnings == ['would violate PodSecurity "baseline:latest": privileged '
                               '(container "c" must not set securityContext.privileged=true)']


def test_an_update_is_checked_only_when_an_image_changes():
    old = pod({"name": "c", "image": "c:1", "securityContext": {"privileged": True}})
    labels = {"pod-security.kubernetes.io/enforce": "baseline"}
    plugin = PodSecurity(Evaluator())

    def update(new: dict[str, Any]) -> Any:
        attrs = Attributes("UPDATE", "", "pods", "", "ns", "p", new, old)
        return plugin.admit(attrs, lambda _n: namespace(labels), lambda _n: [])

    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert update(relabelled).allowed
    new_image = copy.deepcopy(old)
    new_image["spec"]["containers"][0]["image"] = "c:2"
    assert not update(new_image).allowed


def test_namespace_labels_are_validated_and_a_stricter_enforce_names_the_pods_it_would_deny():
    plugin = PodSecurity(Evaluator())
    bad = {"metadata": {"name": "ns", "labels": {"pod-security.kubernetes.io/enforce": "x"}}}
    answer = plugin.admit(Attributes("CREATE", "", "namespaces", "", "", "ns", bad),
                          lambda _n: None, lambda _n: [])
    assert answer.error is not None and answer.error.code == 422
    assert answer.error.message == (
        'Namespace "ns" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "x": must be one of privileged, baseline, restricted')
    pods = [pod({"name": "c", "image": "c", "securityContext": {"privileged": True}}, name=n)
            for n in ("web-2", "web-1", "web-3")]
    pods.append(pod(name="db", hostNetwork=True))
    stricter = {"metadata": {"name": "ns", "labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}}
    answer = plugin.admit(Attributes("UPDATE", "", "namespaces", "", "", "ns", stricter,
                                     {"metadata": {"name": "ns"}}),
                          lambda _n: None, lambda _n: pods)
    assert answer.allowed
    assert answer.warnings == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "db: host namespaces",
        "web-1 (and 2 other pods): privileged"]
