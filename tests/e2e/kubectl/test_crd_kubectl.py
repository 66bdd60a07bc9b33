"""A CustomResourceDefinition with a CEL rule, a status subresource and printer columns,
driven with the real kubectl as on a real cluster: apply, get (columns), status patch,
the CEL denial message, explain, several versions and deletion."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import Kubectl

pytestmark = pytest.mark.e2e

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Ready, type: string, jsonPath: ".status.conditions[?(@.type==\\"Ready\\")].status"}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: What to run and when.
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must not exceed maxReplicas
            properties:
              cronSpec: {type: string, description: The schedule in cron format.}
              image: {type: string}
              replicas: {type: integer, minimum: 1, default: 1}
              maxReplicas: {type: integer, default: 10}
          status:
            type: object
            properties:
              replicas: {type: integer}
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"""

CRONTAB = """
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: NAME}
spec: {cronSpec: "*/5 * * * *", image: my-cron-image, replicas: REPLICAS}
"""


@pytest.fixture(scope="module")
def k(module_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    cache = tmp_path_factory.mktemp("kubectl-cache")
    kubectl = Kubectl(Path(module_apiserver.kubeconfig_path), cache)
    kubectl("apply", "-f", "-", input=CRD)
    kubectl("wait", "--for=condition=Established", "crd/crontabs.stable.example.com",
            "--timeout=20s")
    return kubectl


def _apply(k: Kubectl, name: str, replicas: int, check: bool = True) -> Callable[..., object]:
    text = CRONTAB.replace("NAME", name).replace("REPLICAS", str(replicas))
    return k.run("apply", "-f", "-", input=text, check=check)


def test_crd_is_listed_with_conditions_and_in_discovery(k: Kubectl) -> None:
    out = k("get", "crd")
    assert out.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    assert "crontabs.stable.example.com" in out
    crd = json.loads(k("get", "crd", "crontabs.stable.example.com", "-o", "json"))
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "CronTab"
    resources = k("api-resources", "--api-group=stable.example.com")
    assert "crontabs" in resources and "ct" in resources and "CronTab" in resources


def test_get_prints_the_additional_printer_columns(k: Kubectl) -> None:
    _apply(k, "cols", 2)
    out = k("get", "ct", "cols")
    header, row = out.splitlines()
    assert header.split() == ["NAME", "SPEC", "REPLICAS", "READY", "AGE"]
    assert row.split()[:7] == ["cols", "*/5", "*", "*", "*", "*", "2"]


def test_defaults_are_applied_and_unknown_fields_pruned_with_a_warning(k: Kubectl) -> None:
    text = ("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: defaults}\n"
            "spec: {cronSpec: '* * * * *', image: x, color: blue}\n")
    result = k.run("create", "-f", "-", "--validate=warn", input=text)
    assert 'unknown field "spec.color"' in result.stderr
    obj = json.loads(k("get", "ct", "defaults", "-o", "json"))
    assert obj["spec"] == {"cronSpec": "* * * * *", "image": "x", "replicas": 1,
                           "maxReplicas": 10}


def test_cel_rule_denies_with_upstreams_message(k: Kubectl) -> None:
    result = _apply(k, "toomany", 20, check=False)
    assert result.returncode != 0
    assert ('The CronTab "toomany" is invalid: spec: Invalid value: replicas must not '
            'exceed maxReplicas') in result.stderr


def test_schema_validation_messages(k: Kubectl) -> None:
    result = _apply(k, "zero", 0, check=False)
    assert ('The CronTab "zero" is invalid: spec.replicas: Invalid value: 0: '
            'spec.replicas in body should be greater than or equal to 1') in result.stderr


def test_status_subresource_patch_and_scale(k: Kubectl) -> None:
    _apply(k, "stat", 3)
    k("patch", "ct", "stat", "--subresource=status", "--type=merge", "-p",
      json.dumps({"status": {"replicas": 3, "conditions": [{"type": "Ready",
                                                            "status": "True"}]},
                  "spec": {"image": "ignored"}}))
    obj = json.loads(k("get", "ct", "stat", "-o", "json"))
    assert obj["status"]["replicas"] == 3
    assert obj["spec"]["image"] == "my-cron-image"
    assert k("get", "ct", "stat").splitlines()[1].split()[-2] == "True"
    k("scale", "ct", "stat", "--replicas=5")
    assert json.loads(k("get", "ct", "stat", "-o", "json"))["spec"]["replicas"] == 5
    # A main-resource update cannot change status.
    k("patch", "ct", "stat", "--type=merge", "-p", '{"status": {"replicas": 9}}')
    assert json.loads(k("get", "ct", "stat", "-o", "json"))["status"]["replicas"] == 3


def test_explain_reads_the_crd_schema(k: Kubectl) -> None:
    out = k("explain", "crontabs.spec")
    assert "What to run and when." in out
    assert "cronSpec" in out and "The schedule in cron format." in out


def test_other_version_is_served_with_none_conversion(k: Kubectl) -> None:
    _apply(k, "multi", 2)
    obj = json.loads(k("get", "crontabs.v1beta1.stable.example.com", "multi", "-o", "json"))
    assert obj["apiVersion"] == "stable.example.com/v1beta1"
    assert obj["spec"]["replicas"] == 2
    text = ("apiVersion: stable.example.com/v1beta1\nkind: CronTab\nmetadata: {name: old}\n"
            "spec: {cronSpec: '* * * * *', anything: goes}\n")
    k("create", "-f", "-", input=text)
    stored = json.loads(k("get", "ct", "old", "-o", "json"))
    assert stored["apiVersion"] == "stable.example.com/v1"
    assert stored["spec"]["anything"] == "goes"  # preserved by v1beta1's schema


def test_deleting_the_crd_deletes_its_objects_and_stops_serving(
        module_apiserver: APIServer, k: Kubectl) -> None:
    other = CRD.replace("crontabs", "jobruns").replace("crontab", "jobrun") \
        .replace("CronTab", "JobRun").replace("shortNames: [ct]", "shortNames: [jr]")
    k("apply", "-f", "-", input=other)
    k("wait", "--for=condition=Established", "crd/jobruns.stable.example.com",
      "--timeout=20s")
    k("apply", "-f", "-", input="apiVersion: stable.example.com/v1\nkind: JobRun\n"
      "metadata: {name: one}\nspec: {cronSpec: x, image: busybox}\n")
    k("delete", "crd", "jobruns.stable.example.com", "--timeout=30s")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        result = k.run("get", "jobruns.stable.example.com", check=False)
        if result.returncode != 0:
            break
        time.sleep(0.2)
    assert "the server doesn't have a resource type" in result.stderr
    assert k.run("get", "crd", "jobruns.stable.example.com", check=False).returncode != 0
