"""core/v1 Pod strategy: defaults, validation, update rules, status, binding, reads."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from core_helpers import created, ctx, rendered

from draemu.api.errors import StatusError
from draemu.apiserver.registry.core.pod import PodStrategy
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit

S = PodStrategy()
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def pod(**spec: Any) -> dict:
    base = {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"}, "spec": base}


def errors_of(obj: dict) -> list[str]:
    return rendered(S.validate(created(S, obj), ctx()))


# Defaults ------------------------------------------------------------------------

def test_pod_spec_defaults_match_a_real_cluster() -> None:
    spec = created(S, pod())["spec"]
    assert {k: spec[k] for k in ("restartPolicy", "dnsPolicy", "schedulerName",
                                 "terminationGracePeriodSeconds", "securityContext",
                                 "enableServiceLinks", "priority", "preemptionPolicy",
                                 "serviceAccountName", "serviceAccount")} == {
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30,
        "securityContext": {}, "enableServiceLinks": True, "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority", "serviceAccountName": "default",
        "serviceAccount": "default"}


def test_container_defaults_include_termination_message_fields() -> None:
    ctr = created(S, pod())["spec"]["containers"][0]
    assert ctr["terminationMessagePath"] == "/dev/termination-log"
    assert ctr["terminationMessagePolicy"] == "File"
    assert ctr["resources"] == {}


@pytest.mark.parametrize(("image", "policy"), [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("localhost:5000/app", "Always"), ("localhost:5000/app:v1", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
])
def test_image_pull_policy_defaults_from_the_tag(image: str, policy: str) -> None:
    obj = pod(containers=[{"name": "c", "image": image}])
    assert created(S, obj)["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_default_toleration_seconds_admission_adds_not_ready_and_unreachable() -> None:
    tolerations = created(S, pod())["spec"]["tolerations"]
    assert tolerations == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]


def test_existing_toleration_for_a_key_is_not_duplicated() -> None:
    mine = {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 10}
    tolerations = created(S, pod(tolerations=[mine]))["spec"]["tolerations"]
    assert [t["key"] for t in tolerations] == ["node.kubernetes.io/unreachable",
                                               "node.kubernetes.io/not-ready"]


def test_a_tolerate_everything_toleration_gets_no_defaults() -> None:
    everything = {"operator": "Exists"}
    assert created(S, pod(tolerations=[everything]))["spec"]["tolerations"] == [everything]


def test_requests_default_to_limits_for_pods() -> None:
    obj = pod(containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}}])
    assert created(S, obj)["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_status_on_create_is_pending_with_qos_class() -> None:
    obj = pod(status={"phase": "Running"})
    obj["status"] = {"phase": "Running"}
    assert created(S, obj)["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


@pytest.mark.parametrize(("resources", "qos"), [
    ({}, "BestEffort"),
    ({"requests": {"cpu": "100m"}}, "Burstable"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
    ({"limits": {"example.com/gpu": "1"}}, "BestEffort"),
])
def test_qos_class_follows_requests_and_limits(resources: dict, qos: str) -> None:
    obj = pod(containers=[{"name": "c", "image": "i", "resources": resources}])
    assert created(S, obj)["status"]["qosClass"] == qos


def test_scheduling_gated_pod_gets_the_gated_condition() -> None:
    status = created(S, pod(schedulingGates=[{"name": "example.com/wait"}]))["status"]
    condition = status["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled", "False", "SchedulingGated")


# Validation ------------------------------------------------------------------------

def test_valid_probes_hooks_and_env_sources_are_accepted() -> None:
    obj = pod(containers=[{
        "name": "app", "image": "i", "ports": [{"name": "web", "containerPort": 80}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "web"}},
        "readinessProbe": {"tcpSocket": {"port": 80}, "successThreshold": 2},
        "startupProbe": {"exec": {"command": ["true"]}},
        "lifecycle": {"preStop": {"sleep": {"seconds": 1}}},
        "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "APP_"}]}])
    assert errors_of(obj) == []


def test_valid_pod_with_dra_claims_is_accepted() -> None:
    obj = pod(
        containers=[{"name": "app", "image": "i", "resources": {"claims": [
            {"name": "gpu"}, {"name": "gpu", "request": "second"}]},
            "ports": [{"name": "http", "containerPort": 80}],
            "env": [{"name": "my.var-1", "value": "x"}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"},
                        {"name": "nic", "resourceClaimName": "shared-nic"}],
        volumes=[{"name": "data", "emptyDir": {}}])
    assert errors_of(obj) == []


@pytest.mark.parametrize(("spec", "expected"), [
    ({"containers": []}, ["spec.containers: Required value"]),
    ({"containers": [{"name": "App", "image": "i"}]},
     [f'spec.containers[0].name: Invalid value: "App": {LABEL_MSG}']),
    ({"containers": [{"name": "a", "image": "i"}, {"name": "a", "image": "i"}]},
     ['spec.containers[1].name: Duplicate value: "a"']),
    ({"containers": [{"name": "a"}]}, ["spec.containers[0].image: Required value"]),
    ({"containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 70000}]}]},
     ["spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and "
      "65535, inclusive"]),
    ({"containers": [{"name": "a", "image": "i", "ports": [
        {"containerPort": 80, "protocol": "HTTP"}]}]},
     ['spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: '
      '"SCTP", "TCP", "UDP"']),
    ({"containers": [{"name": "a", "image": "i", "ports": [
        {"name": "web", "containerPort": 80}, {"name": "web", "containerPort": 81}]}]},
     ['spec.containers[0].ports[1].name: Duplicate value: "web"']),
    ({"containers": [{"name": "a", "image": "i", "env": [{"name": "A=B", "value": "x"}]}]},
     ['spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable '
      "name must consist only of printable ASCII characters other than '='"]),
    ({"containers": [{"name": "a", "image": "i", "env": [
        {"name": "A", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]},
     ['spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when '
      "`value` is not empty"]),
    ({"containers": [{"name": "a", "image": "i", "resources": {
        "limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}]},
     ['spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
      "to cpu limit of 1"]),
    ({"containers": [{"name": "a", "image": "i", "resources": {
        "limits": {"example.com/gpu": "2"}, "requests": {"example.com/gpu": "1"}}}]},
     ['spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
      "example.com/gpu limit of 2"]),
    ({"containers": [{"name": "a", "image": "i", "resources": {"limits": {"gpu": "1"}}}]},
     ['spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard '
      "resource type or fully qualified",
      'spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard '
      "resource for containers",
      'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard '
      "resource type or fully qualified",
      'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard '
      "resource for containers"]),
    ({"restartPolicy": "Sometimes"},
     ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
      '"OnFailure", "Never"']),
    ({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]},
     ['spec.volumes[1].name: Duplicate value: "v"']),
    ({"volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}]},
     ["spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type"]),
    ({"containers": [{"name": "a", "image": "i", "volumeMounts": [
        {"name": "missing", "mountPath": "/m"}]}]},
     ['spec.containers[0].volumeMounts[0].name: Not found: "missing"']),
    ({"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
     ['spec.tolerations[0].operator: Invalid value: {"key":"k","operator":"Exists",'
      '"value":"v"}: value must be empty when `operator` is \'Exists\'']),
    ({"tolerations": [{"operator": "Equal", "value": "v"}]},
     ['spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
      '`key` is empty, which means "match all values and all keys"']),
    ({"activeDeadlineSeconds": 0},
     ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
      "inclusive"]),
    ({"nodeName": "n1", "schedulingGates": [{"name": "example.com/g"}]},
     ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"]),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near"}]}]}}}},
     ["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
      'nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid '
      "selector operator"]),
    ({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {}}]}}},
     ["spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
      "Invalid value: 0: must be in the range 1-100"]),
    ({"containers": [{"name": "a", "image": " nginx"}]},
     ['spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing '
      "whitespace"]),
    ({"readinessGates": [{"conditionType": "bad type"}]},
     ['spec.readinessGates[0].conditionType: Invalid value: "bad type": name part must '
      "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    ({"containers": [{"name": "a", "image": "i", "livenessProbe": {"periodSeconds": 5}}]},
     ["spec.containers[0].livenessProbe: Required value: must specify a handler type"]),
    ({"containers": [{"name": "a", "image": "i", "livenessProbe": {
        "httpGet": {"port": 0}, "exec": {"command": ["true"]}}}]},
     ["spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 "
      "handler type"]),
    ({"containers": [{"name": "a", "image": "i", "startupProbe": {
        "tcpSocket": {"port": "web"}, "successThreshold": 2}}]},
     ["spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1"]),
    ({"containers": [{"name": "a", "image": "i", "readinessProbe": {
        "httpGet": {"path": "/", "port": 70000}}}]},
     ["spec.containers[0].readinessProbe.httpGet.port: Invalid value: 70000: must be between 1 "
      "and 65535, inclusive"]),
    ({"containers": [{"name": "a", "image": "i", "lifecycle": {"preStop": {"exec": {}}}}]},
     ["spec.containers[0].lifecycle.preStop.exec.command: Required value"]),
    ({"containers": [{"name": "a", "image": "i", "envFrom": [{"prefix": "P_"}]}]},
     ['spec.containers[0].envFrom: Invalid value: "": must specify one of: `configMapRef` or '
      "`secretRef`"]),
    ({"initContainers": [{"name": "app", "image": "i"}]},
     ['spec.initContainers[0].name: Duplicate value: "app"']),
    ({"initContainers": [{"name": "init", "image": "i", "readinessProbe": {
        "exec": {"command": ["true"]}}}]},
     ["spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers "
      "without restartPolicy=Always"]),
])
def test_invalid_pod_spec_reports_upstream_path_and_message(spec: dict,
                                                            expected: list[str]) -> None:
    assert errors_of(pod(**spec)) == expected


def _node_affinity(kind: str, value: str) -> dict:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": [value]}]}
    if kind == "required":
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": term}]}}


def test_required_node_affinity_values_must_be_label_values() -> None:
    [err] = errors_of(pod(affinity=_node_affinity("required", "a b")))
    assert err.startswith("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                          'Execution.nodeSelectorTerms[0].matchExpressions[0].values[0]: '
                          'Invalid value: "a b": a valid label must be')


def test_preferred_node_affinity_values_are_not_checked_as_label_values() -> None:
    assert errors_of(pod(affinity=_node_affinity("preferred", "a b"))) == []


def test_an_update_may_keep_invalid_values_the_stored_required_affinity_has() -> None:
    old = created(S, pod())
    old["spec"]["affinity"] = _node_affinity("required", "a b")
    assert updated(old, lambda s: s.update(activeDeadlineSeconds=100)) == []


@pytest.mark.parametrize(("claims", "refs", "expected"), [
    ([{"name": "gpu"}], [],
     ['spec.resourceClaims[0]: Invalid value: {"name":"gpu"}: must specify one of: '
      "`resourceClaimName`, `resourceClaimTemplateName`"]),
    ([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}], [],
     ['spec.resourceClaims[0]: Invalid value: {"name":"gpu","resourceClaimName":"a",'
      '"resourceClaimTemplateName":"b"}: at most one of `resourceClaimName` or '
      "`resourceClaimTemplateName` may be specified"]),
    ([{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}], [],
     ['spec.resourceClaims[1].name: Duplicate value: "gpu"']),
    ([{"name": "gpu", "resourceClaimName": "a"}], [{"name": "nic"}],
     ['spec.containers[0].resources.claims[0]: Not found: "nic": must be one of the names in '
      "pod.spec.resourceClaims: gpu"]),
    ([], [{"name": "gpu"}],
     ['spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
      "pod.spec.resourceClaims which is empty"]),
    ([{"name": "gpu", "resourceClaimName": "a"}], [{"name": "gpu"}, {"name": "gpu"}],
     ['spec.containers[0].resources.claims[1]: Duplicate value: "gpu"']),
    ([{"name": "gpu", "resourceClaimName": "a"}], [{"name": "gpu", "request": "req/sub"}],
     ['spec.containers[0].resources.claims[0].request: Invalid value: "req/sub": '
      + LABEL_MSG]),
])
def test_resource_claim_rules(claims: list, refs: list, expected: list[str]) -> None:
    obj = pod(containers=[{"name": "c", "image": "i", "resources": {"claims": refs}}],
              resourceClaims=claims)
    assert errors_of(obj) == expected


def test_pre_1_31_source_wrapper_names_the_field_to_use_instead() -> None:
    obj = pod(resourceClaims=[{"name": "gpu", "source": {"resourceClaimTemplateName": "t"}}])
    assert rendered(S.obsolete_field_errors(obj, "v1")) == [
        'spec.resourceClaims[0].source.resourceClaimTemplateName: Invalid value: "t": '
        "`source.resourceClaimTemplateName` was removed in Kubernetes 1.31: use "
        "`spec.resourceClaims[0].resourceClaimTemplateName` instead"]


def test_malformed_quantity_fails_decoding_with_a_400() -> None:
    obj = pod(containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "abc"}}}])
    with pytest.raises(StatusError) as err:
        created(S, obj)
    assert (err.value.code, err.value.message) == (400, (
        'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))


def test_ephemeral_containers_cannot_be_set_on_create() -> None:
    obj = pod(ephemeralContainers=[{"name": "debug", "image": "busybox"}])
    assert "spec.ephemeralContainers: Forbidden: cannot be set on create" in errors_of(obj)


# Updates -----------------------------------------------------------------------------

def updated(old: dict, change: Any) -> list[str]:
    new = copy.deepcopy(old)
    change(new["spec"])
    S.default(new, "v1")
    S.prepare_for_update(new, old, ctx())
    return rendered(S.validate_update(new, old, ctx()))


@pytest.mark.parametrize("change", [
    lambda s: s["containers"][0].update(image="registry.k8s.io/pause:3.11"),
    lambda s: s.update(activeDeadlineSeconds=100),
    lambda s: s["tolerations"].append({"key": "k", "operator": "Exists"}),
], ids=["image", "activeDeadlineSeconds", "added toleration"])
def test_updates_upstream_allows_are_accepted(change: Any) -> None:
    assert updated(created(S, pod()), change) == []


def test_spelling_out_empty_or_false_fields_is_not_a_change() -> None:
    def spell_out(spec: dict) -> None:
        spec.update(hostNetwork=False, nodeSelector={}, volumes=[])
        spec["containers"][0].update(args=[], workingDir="")

    assert updated(created(S, pod()), spell_out) == []


def test_other_spec_changes_are_forbidden_with_the_upstream_message() -> None:
    errs = updated(created(S, pod()), lambda s: s.update(restartPolicy="Never"))
    assert len(errs) == 1
    assert errs[0].startswith("spec: Forbidden: pod updates may not change fields other than "
                              "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                              "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
                              "to existing tolerations),`spec.terminationGracePeriodSeconds`")
    assert 'restartPolicy: "Always" -> "Never"' in errs[0]


def test_resource_claims_are_immutable() -> None:
    old = created(S, pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "a"}]))
    errs = updated(old, lambda s: s["resourceClaims"][0].update(resourceClaimName="b"))
    assert errs[0].startswith("spec: Forbidden: pod updates may not change fields")


def test_adding_a_container_is_forbidden() -> None:
    errs = updated(created(S, pod()),
                   lambda s: s["containers"].append({"name": "b", "image": "i"}))
    assert errs == ["spec.containers: Forbidden: pod updates may not add or remove containers"]


def test_active_deadline_may_only_decrease() -> None:
    old = created(S, pod(activeDeadlineSeconds=10))
    errs = updated(old, lambda s: s.update(activeDeadlineSeconds=20))
    assert errs == ["spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal "
                    "to previous value"]


def test_toleration_seconds_may_change() -> None:
    assert updated(created(S, pod()),
                   lambda s: s["tolerations"][0].update(tolerationSeconds=60)) == []


def test_removing_a_toleration_is_forbidden() -> None:
    errs = updated(created(S, pod()), lambda s: s["tolerations"].pop())
    assert "spec.tolerations: Forbidden: existing toleration can not be modified except its " \
           "tolerationSeconds" in errs


def test_removing_a_scheduling_gate_is_allowed() -> None:
    old = created(S, pod(schedulingGates=[{"name": "example.com/a"}]))
    assert updated(old, lambda s: s.update(schedulingGates=[])) == []


def test_adding_a_scheduling_gate_is_forbidden() -> None:
    old = created(S, pod(schedulingGates=[{"name": "example.com/a"}]))
    errs = updated(old, lambda s: s["schedulingGates"].append({"name": "example.com/b"}))
    assert errs == ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but "
                    "found new scheduling gate 'example.com/b'"]


def test_main_update_keeps_the_stored_status() -> None:
    old = created(S, pod())
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running"}
    S.prepare_for_update(new, old, ctx())
    assert new["status"] == old["status"]


def test_status_update_keeps_the_stored_spec() -> None:
    # (Owner references are kept by the update pipeline: status_meta_reset; see
    # tests/apiserver/test_status_metadata.py.)
    old = created(S, pod())
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "n1"
    new["status"] = {"phase": "Running", "qosClass": "BestEffort"}
    S.prepare_for_status_update(new, old, ctx())
    assert new["spec"] == old["spec"]
    assert new["status"]["phase"] == "Running"


def test_status_update_checks_claim_statuses_against_the_spec() -> None:
    old = created(S, pod(resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]))
    new = copy.deepcopy(old)
    new["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "p-gpu-x"},
                                              {"name": "nic"}]
    assert rendered(S.validate_status_update(new, old, ctx())) == [
        'status.resourceClaimStatuses[1].name: Invalid value: "nic": must match the name of an '
        "entry in `spec.resourceClaims`"]


def test_terminated_container_of_a_never_restarting_pod_stays_terminated() -> None:
    old = created(S, pod(restartPolicy="Never"))
    old["status"]["containerStatuses"] = [{"name": "app", "state": {"terminated": {
        "exitCode": 1}}}]
    new = copy.deepcopy(old)
    new["status"]["containerStatuses"][0]["state"] = {"running": {}}
    assert rendered(S.validate_status_update(new, old, ctx())) == [
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to "
        "non-terminated state"]


def test_pod_ips_must_be_ip_addresses() -> None:
    old = created(S, pod())
    new = copy.deepcopy(old)
    new["status"]["podIPs"] = [{"ip": "10.0.0.300"}]
    assert rendered(S.validate_status_update(new, old, ctx())) == [
        'status.podIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. '
        "10.9.8.7 or 2001:db8::ffff)"]


def test_qos_class_is_immutable_through_status() -> None:
    old = created(S, pod())
    new = copy.deepcopy(old)
    new["status"]["qosClass"] = "Guaranteed"
    assert rendered(S.validate_status_update(new, old, ctx())) == [
        'status.qosClass: Invalid value: "Guaranteed": field is immutable']


# Reads -----------------------------------------------------------------------------------

def test_field_selector_attributes() -> None:
    obj = created(S, pod(nodeName="n1"))
    obj["status"]["podIPs"] = [{"ip": "10.0.0.5"}]
    assert S.selectable_fields(obj) == {
        "spec.nodeName": "n1", "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "default",
        "spec.hostNetwork": "false", "status.phase": "Pending", "status.podIP": "10.0.0.5",
        "status.nominatedNodeName": ""}


def running(ready: bool = True) -> dict:
    obj = created(S, pod(nodeName="n1"))
    obj["status"].update(phase="Running", podIPs=[{"ip": "10.0.0.5"}], containerStatuses=[
        {"name": "app", "ready": ready, "restartCount": 0, "state": {"running": {}}}])
    return obj


def test_table_row_of_a_running_pod() -> None:
    assert S.table_row(running()) == ["p", "1/1", "Running", "0", AGE, "10.0.0.5", "n1",
                                      "<none>", "<none>"]
    assert len(S.table_columns()) == len(S.table_row(running()))


@pytest.mark.parametrize(("mutate", "status"), [
    (lambda o: o["status"]["containerStatuses"][0].update(
        state={"waiting": {"reason": "ContainerCreating"}}, ready=False), "ContainerCreating"),
    (lambda o: o["status"]["containerStatuses"][0].update(
        state={"terminated": {"reason": "Completed", "exitCode": 0}}, ready=False), "Completed"),
    (lambda o: o["status"]["containerStatuses"][0].update(
        state={"terminated": {"exitCode": 3}}, ready=False), "ExitCode:3"),
    (lambda o: o["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"), "Terminating"),
    (lambda o: o["status"].update(phase="Failed", reason="Evicted"), "Evicted"),
], ids=["creating", "completed", "exit code", "terminating", "reason"])
def test_status_column_is_computed_like_the_server_printer(mutate: Any, status: str) -> None:
    obj = running()
    mutate(obj)
    assert S.table_row(obj)[2] == status


def test_status_column_shows_init_progress() -> None:
    obj = created(S, pod(initContainers=[{"name": "a", "image": "i"}, {"name": "b",
                                                                        "image": "i"}]))
    obj["status"]["initContainerStatuses"] = [
        {"name": "a", "state": {"terminated": {"exitCode": 0}}, "restartCount": 0},
        {"name": "b", "state": {"running": {}}, "restartCount": 0}]
    assert S.table_row(obj)[1:3] == ["0/1", "Init:1/2"]


def test_restarts_column_shows_the_last_restart_age() -> None:
    obj = running()
    obj["status"]["containerStatuses"][0].update(restartCount=2, lastState={
        "terminated": {"finishedAt": "2020-01-01T00:00:00Z"}})
    assert S.table_row(obj)[3].startswith("2 (") and S.table_row(obj)[3].endswith(" ago)")
