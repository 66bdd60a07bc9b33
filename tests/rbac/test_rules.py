"""PolicyRule matching, covering and the compact descriptions of missing rules."""

from __future__ import annotations

import pytest

from draemu.apiserver.auth.rbac.rules import allows, compact, compact_string, covers

pytestmark = pytest.mark.unit


def test_a_rule_allows_its_verbs_groups_and_resources() -> None:
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}
    assert allows(rule, "get", resource_request=True, resource="configmaps")
    assert not allows(rule, "list", resource_request=True, resource="configmaps")
    assert not allows(rule, "get", resource_request=True, resource="secrets")
    assert not allows(rule, "get", resource_request=True, group="apps", resource="configmaps")


def test_star_slash_subresource_matches_that_subresource_of_every_resource() -> None:
    rule = {"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/status"]}
    assert allows(rule, "update", resource_request=True, group="apps",
                  resource="deployments", subresource="status")
    assert not allows(rule, "update", resource_request=True, resource="pods")


def test_resource_names_limit_the_names() -> None:
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
            "resourceNames": ["a"]}
    assert allows(rule, "get", resource_request=True, resource="secrets", name="a")
    assert not allows(rule, "get", resource_request=True, resource="secrets", name="b")
    assert not allows(rule, "list", resource_request=True, resource="secrets")


def test_non_resource_urls_with_a_trailing_star_match_a_prefix() -> None:
    rule = {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}
    assert allows(rule, "get", resource_request=False, path="/apis/apps/v1")
    assert allows(rule, "get", resource_request=False, path="/healthz")
    assert not allows(rule, "get", resource_request=False, path="/healthz/etcd")
    assert not allows(rule, "get", resource_request=True, resource="pods")


def test_covers_reports_the_atomic_rules_not_held() -> None:
    owner = [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]
    ok, missing = covers(owner, [{"verbs": ["get", "delete"], "apiGroups": [""],
                                  "resources": ["configmaps", "secrets"]}])
    assert not ok
    assert sorted(compact_string(r) for r in compact(missing)) == [
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}',
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}']


def test_wildcards_and_subresource_wildcards_cover() -> None:
    assert covers([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                  [{"verbs": ["get"], "apiGroups": ["x"], "resources": ["y"]}])[0]
    assert covers([{"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}],
                  [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status"]}])[0]
    # A rule limited to names does not cover one for every name.
    assert not covers([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
                        "resourceNames": ["a"]}],
                      [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])[0]
    assert covers([{"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}],
                  [{"verbs": ["get"], "nonResourceURLs": ["/apis/apps"]}])[0]
