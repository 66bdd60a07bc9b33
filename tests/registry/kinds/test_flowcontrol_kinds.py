"""flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration: upstream's
defaults, validation messages, the fixed specs of the mandatory objects, columns."""

from __future__ import annotations

import copy

import pytest
from kind_helpers import created, ctx, messages

from draemu.apiserver.registry.flowcontrol.bootstrapconfig import (
    MANDATORY_LEVELS,
    MANDATORY_SCHEMAS,
    SUGGESTED_LEVELS,
    SUGGESTED_SCHEMAS,
)
from draemu.apiserver.registry.flowcontrol.flowschema import FlowSchemaStrategy
from draemu.apiserver.registry.flowcontrol.prioritylevelconfiguration import (
    PriorityLevelConfigurationStrategy,
)
from draemu.apiserver.registry.strategy import AGE

pytestmark = pytest.mark.unit
FS, PLC = FlowSchemaStrategy(), PriorityLevelConfigurationStrategy()


def schema(name: str = "tenants", **spec: object) -> dict:
    body = {"priorityLevelConfiguration": {"name": "global-default"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "tenants"}}],
                       "resourceRules": [{"verbs": ["list"], "apiGroups": [""],
                                          "resources": ["pods"], "namespaces": ["*"]}]}]}
    body.update(spec)
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name}, "spec": body}


def level(name: str = "tenants", spec: dict | None = None) -> dict:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": name},
            "spec": spec if spec is not None else {
                "type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                                                                 "queuing": {}}}}}


def test_bootstrap_objects_are_valid() -> None:
    for obj in MANDATORY_SCHEMAS + SUGGESTED_SCHEMAS:
        assert messages(FS.validate(created(FS, obj), ctx())) == [], obj["metadata"]["name"]
    for obj in MANDATORY_LEVELS + SUGGESTED_LEVELS:
        assert messages(PLC.validate(created(PLC, obj), ctx())) == [], obj["metadata"]["name"]


def test_flow_schema_defaults_its_matching_precedence() -> None:
    assert created(FS, schema())["spec"]["matchingPrecedence"] == 1000


def test_flow_schema_validation_messages() -> None:
    bad = created(FS, schema(matchingPrecedence=1, distinguisherMethod={"type": "ByGroup"},
                             priorityLevelConfiguration={}, rules=[
                                 {"subjects": [{"kind": "User", "group": {"name": "x"}},
                                               {"kind": "ServiceAccount",
                                                "serviceAccount": {"name": "*"}},
                                               {"kind": "Robot"}],
                                  "resourceRules": [{"verbs": ["*", "get"], "apiGroups": [],
                                                     "resources": ["pods"],
                                                     "namespaces": ["Bad_NS"]}],
                                  "nonResourceRules": [{"verbs": ["fly"],
                                                        "nonResourceURLs": ["healthz",
                                                                            "/a/*/b"]}]},
                                 {"subjects": []}]))
    assert messages(FS.validate(bad, ctx())) == [
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have "
        "matchingPrecedence 1",
        'spec.distinguisherMethod.type: Unsupported value: {"type":"ByGroup"}: supported '
        'values: "ByNamespace", "ByUser"',
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority "
        "level",
        "spec.rules[0].subjects[0].user: Required value: user is required when subject kind "
        "is 'User'",
        "spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is "
        "not 'Group'",
        "spec.rules[0].subjects[1].serviceAccount.namespace: Required value: must specify "
        "namespace for service account",
        'spec.rules[0].subjects[2].kind: Unsupported value: "Robot": supported values: '
        '"Group", "ServiceAccount", "User"',
        'spec.rules[0].resourceRules[0].verbs: Invalid value: ["*","get"]: if \'*\' is '
        "present, must not specify other verbs",
        "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must "
        "supply at least one api group",
        'spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "Bad_NS": each member '
        "of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must "
        "consist of lower case alphanumeric characters or '-', and must start and end with "
        "an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'spec.rules[0].nonResourceRules[0].verbs: Unsupported value: ["fly"]: supported '
        'values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", '
        '"update", "watch"',
        'spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": '
        "must start with slash",
        'spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a/*/b": '
        "wildcard can only do suffix matching",
        "spec.rules[1].subjects: Required value: subjects must contain at least one value",
        "spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules "
        "has to be non-empty"]


def test_mandatory_flow_schema_spec_is_fixed() -> None:
    changed = copy.deepcopy(MANDATORY_SCHEMAS[0])
    changed["spec"]["matchingPrecedence"] = 2
    assert [m.split(": ")[0] + ": " + m.split(": ")[-1]
            for m in messages(FS.validate(created(FS, changed), ctx()))] == [
        "spec: spec of 'exempt' must equal the fixed value"]


def test_priority_level_defaults() -> None:
    obj = created(PLC, level())
    assert obj["spec"]["limited"] == {
        "nominalConcurrencyShares": 30, "lendablePercent": 0,
        "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64,
                                                       "queueLengthLimit": 50}}}


def test_priority_level_validation_messages() -> None:
    bad = created(PLC, level(spec={"type": "Limited", "exempt": {}, "limited": {
        "nominalConcurrencyShares": -1, "lendablePercent": 101, "borrowingLimitPercent": -2,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 129,
                                                       "queueLengthLimit": -1}}}}))
    assert messages(PLC.validate(bad, ctx())) == [
        "spec.exempt: Forbidden: must be nil if the type is Limited",
        "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative "
        "integer",
        "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be "
        "positive",
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 129: should not be "
        "greater than queues (128)",
        "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, "
        "inclusive",
        "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a "
        "non-negative integer"]
    entropy = created(PLC, level(spec={"type": "Limited", "limited": {"limitResponse": {
        "type": "Queue", "queuing": {"queues": 1000, "handSize": 7}}}}))
    assert messages(PLC.validate(entropy, ctx())) == [
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 7: required entropy "
        "bits of deckSize 1000 and handSize 7 should not be greater than 60"]
    named = created(PLC, level("exempt"))
    assert messages(PLC.validate(named, ctx()))[0] == (
        "spec.type: Invalid value: \"Limited\": must be 'Exempt' if and only if `name` is "
        "'exempt'")
    reject = created(PLC, level(spec={"type": "Limited", "limited": {"limitResponse": {
        "type": "Reject", "queuing": {}}}}))
    assert messages(PLC.validate(reject, ctx())) == [
        "spec.limited.limitResponse.queuing: Forbidden: must be nil if "
        "limited.limitResponse.type is not Limited"]


def test_exempt_level_may_change_only_its_exempt_field() -> None:
    exempt = copy.deepcopy(MANDATORY_LEVELS[1])
    exempt["spec"]["exempt"]["nominalConcurrencyShares"] = 10
    assert messages(PLC.validate(created(PLC, exempt), ctx())) == []
    catch_all = copy.deepcopy(MANDATORY_LEVELS[0])
    catch_all["spec"]["limited"]["nominalConcurrencyShares"] = 50
    assert messages(PLC.validate(created(PLC, catch_all), ctx()))[0].endswith(
        "spec of 'catch-all' must equal the fixed value")


def test_columns() -> None:
    assert [c.name for c in FS.table_columns()] == [
        "Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age",
        "MissingPL"]
    assert FS.table_row(created(FS, SUGGESTED_SCHEMAS[0])) == [
        "system-nodes", "system", 500, "ByUser", AGE, "?"]
    assert [c.name for c in PLC.table_columns()] == [
        "Name", "Type", "NominalConcurrencyShares", "Queues", "HandSize", "QueueLengthLimit",
        "Age"]
    assert PLC.table_row(created(PLC, MANDATORY_LEVELS[1])) == [
        "exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", AGE]
    assert PLC.table_row(created(PLC, MANDATORY_LEVELS[0]))[2:6] == [
        5, "<none>", "<none>", "<none>"]
    ordered = FS.table_sort([created(FS, o) for o in MANDATORY_SCHEMAS[::-1]])
    assert [o["metadata"]["name"] for o in ordered] == ["exempt", "catch-all"]
