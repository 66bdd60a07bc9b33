"""A ValidatingAdmissionPolicy with a binding and a parameter ConfigMap, through the real
kubectl: the denial kubectl prints, a warning binding, and `kubectl get` of the kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from draemu.apiserver.server.lifecycle import APIServer
from draemu.cmd.testing.apiserver import Kubectl

pytestmark = pytest.mark.e2e

POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: demo-policy.example.com}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
---
apiVersion: v1
kind: ConfigMap
metadata: {name: replica-limit, namespace: default}
data: {maxReplicas: "5"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: demo-binding-test.example.com}
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
  paramRef: {name: replica-limit, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: default}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: demo-binding-warn.example.com}
spec:
  policyName: demo-policy.example.com
  validationActions: [Warn]
  paramRef: {name: replica-limit, namespace: default, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: kube-system}
"""


@pytest.fixture(scope="module")
def k(module_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    kubectl = Kubectl(Path(module_apiserver.kubeconfig_path),
                      tmp_path_factory.mktemp("kubectl-cache"))
    kubectl("apply", "-f", "-", input=POLICY)
    return kubectl


def test_deny_binding_refuses_with_upstreams_message(k: Kubectl) -> None:
    result = k.run("create", "deployment", "nginx", "--image=nginx", "--replicas=7",
                   check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'error: failed to create deployment: deployments.apps "nginx" is forbidden: '
        "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding "
        "'demo-binding-test.example.com' denied request: failed expression: "
        "object.spec.replicas <= int(params.data.maxReplicas)")
    k("create", "deployment", "nginx", "--image=nginx", "--replicas=3")


def test_warn_binding_prints_a_warning(k: Kubectl) -> None:
    result = k.run("create", "deployment", "wide", "--image=nginx", "--replicas=8",
                   "-n", "kube-system")
    assert result.returncode == 0
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy "
            "'demo-policy.example.com' with binding 'demo-binding-warn.example.com': "
            "failed expression: object.spec.replicas <= int(params.data.maxReplicas)"
            ) in result.stderr


def test_get_prints_the_policy_columns(k: Kubectl) -> None:
    policies = k("get", "validatingadmissionpolicies").splitlines()
    assert policies[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert policies[1].split()[:3] == ["demo-policy.example.com", "1", "v1/ConfigMap"]
    bindings = k("get", "validatingadmissionpolicybindings").splitlines()
    assert bindings[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"]
    assert bindings[1].split()[:3] == ["demo-binding-test.example.com",
                                       "demo-policy.example.com", "default/replica-limit"]
