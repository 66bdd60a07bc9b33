"""apps/v1 Deployment and ReplicaSet strategies."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from core_helpers import created, ctx, rendered

from draemu.api.errors import StatusError
from draemu.apiserver.registry.apps.deployment import DeploymentStrategy
from draemu.apiserver.registry.apps.replicaset import ReplicaSetStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit

DEPLOY, RS = DeploymentStrategy(), ReplicaSetStrategy()


def deployment(**spec: Any) -> dict:
    base = {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    base.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"}, "spec": base}


def test_deployment_defaults() -> None:
    spec = created(DEPLOY, deployment())["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (
        1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "25%", "maxSurge": "25%"}}


def test_template_gets_pod_spec_defaults_but_not_pod_only_ones() -> None:
    template_spec = created(DEPLOY, deployment())["spec"]["template"]["spec"]
    assert template_spec["restartPolicy"] == "Always"
    assert template_spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "enableServiceLinks" not in template_spec and "tolerations" not in template_spec


def test_malformed_template_quantity_fails_decoding() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "1x"}}
    with pytest.raises(StatusError) as err:
        created(DEPLOY, obj)
    assert err.value.message.startswith('Deployment in version "v1" cannot be handled as a '
                                        "Deployment: quantities must match")


def test_status_starts_empty() -> None:
    obj = deployment()
    obj["status"] = {"replicas": 3}
    assert created(DEPLOY, obj)["status"] == {}
    assert created(RS, dict(obj, kind="ReplicaSet"))["status"] == {"replicas": 0}


def test_valid_deployment_is_accepted() -> None:
    assert DEPLOY.validate(created(DEPLOY, deployment()), ctx()) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({"selector": None}, ["spec.selector: Required value"]),
    ({"selector": {}}, ["spec.selector: Invalid value: {}: empty selector is invalid for "
                        "deployment"]),
    ({"selector": {"matchLabels": {"app": "db"}}},
     ['spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match '
      "template `labels`"]),
    ({"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
     ["spec.selector.matchExpressions[0].values: Required value: must be specified when "
      "`operator` is 'In' or 'NotIn'",
      'spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"In"}]}: '
      "invalid label selector"]),
    ({"replicas": -1}, ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ({"strategy": {"type": "Recreate", "rollingUpdate": {}}},
     ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
      "'Recreate'"]),
    ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0,
                                                              "maxSurge": 0}}},
     ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
      "`maxSurge` is 0"]),
    ({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "110%",
                                                              "maxSurge": 1}}},
     ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "110%": must not be greater '
      "than 100%"]),
    ({"progressDeadlineSeconds": 5, "minReadySeconds": 10},
     ["spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"]),
])
def test_invalid_deployment_reports_upstream_path_and_message(spec: dict,
                                                              expected: list[str]) -> None:
    obj = created(DEPLOY, deployment(**spec))
    assert rendered(DEPLOY.validate(obj, ctx())) == expected


def test_template_restart_policy_must_be_always() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert rendered(DEPLOY.validate(created(DEPLOY, obj), ctx())) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: '
        '"Always"']


def test_template_pod_spec_errors_are_reported_under_the_template() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["name"] = "Web"
    errs = rendered(DEPLOY.validate(created(DEPLOY, obj), ctx()))
    assert errs[0].startswith('spec.template.spec.containers[0].name: Invalid value: "Web"')


def test_obsolete_claim_source_in_a_template_names_the_field_to_use_instead() -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu", "source": {
        "resourceClaimName": "shared"}}]
    assert rendered(DEPLOY.obsolete_field_errors(obj, "v1")) == [
        'spec.template.spec.resourceClaims[0].source.resourceClaimName: Invalid value: '
        '"shared": `source.resourceClaimName` was removed in Kubernetes 1.31: use '
        "`spec.template.spec.resourceClaims[0].resourceClaimName` instead"]


def test_selector_is_immutable() -> None:
    old = created(DEPLOY, deployment())
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    assert rendered(DEPLOY.validate_update(new, old, ctx())) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is '
        "immutable"]


def test_status_counters_may_not_exceed_replicas() -> None:
    old = created(DEPLOY, deployment())
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": 2}
    assert rendered(DEPLOY.validate_status_update(new, old, ctx())) == [
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas"]


def test_deployment_table_row() -> None:
    obj = created(DEPLOY, deployment(replicas=3))
    obj["status"] = {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    assert DEPLOY.table_row(obj) == ["web", "2/3", 3, 2, AGE, "web", "nginx:1.27", "app=web"]
    assert [c.name for c in DEPLOY.table_columns()] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]


def replicaset_with_status() -> dict:
    obj = created(RS, dict(deployment(replicas=2), kind="ReplicaSet"))
    obj["status"] = {"replicas": 2, "readyReplicas": 1}
    return obj


def test_replicaset_table_row() -> None:
    assert RS.table_row(replicaset_with_status()) == [
        "web", 2, 2, 1, AGE, "web", "nginx:1.27", "app=web"]


def test_replicaset_field_selector_status_replicas() -> None:
    assert RS.selectable_fields(replicaset_with_status()) == {"status.replicas": "2"}


def test_replicaset_empty_selector_message_is_upstreams() -> None:
    obj = created(RS, dict(deployment(selector={}), kind="ReplicaSet"))
    assert rendered(RS.validate(obj, ctx())) == [
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
