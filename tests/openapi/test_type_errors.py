"""JSON type errors, worded as Go's decoder words them in kube-apiserver's 400s."""

from __future__ import annotations

import pytest

from draemu.openapi import schemas

pytestmark = pytest.mark.unit

FIELD = "json: cannot unmarshal {} into Go struct field {} of type {}"


@pytest.mark.parametrize("gvk, obj, expected", [
    (("apps", "v1", "Deployment"), {"spec": {"replicas": "3"}},
     FIELD.format("string", "DeploymentSpec.spec.replicas", "int32")),
    (("apps", "v1", "Deployment"), {"spec": {"replicas": 1.5}},
     FIELD.format("number 1.5", "DeploymentSpec.spec.replicas", "int32")),
    (("apps", "v1", "Deployment"), {"spec": {"template": {"spec": {"containers": {}}}}},
     FIELD.format("object", "PodSpec.spec.template.spec.containers", "[]v1.Container")),
    (("", "v1", "Pod"), {"spec": {"containers": [{"name": 5}]}},
     FIELD.format("number", "Container.spec.containers.name", "string")),
    (("", "v1", "Pod"), {"metadata": {"labels": {"a": 1}}},
     FIELD.format("number", "ObjectMeta.metadata.labels", "string")),
    (("", "v1", "Pod"), {"metadata": {"labels": "x"}},
     FIELD.format("string", "ObjectMeta.metadata.labels", "map[string]string")),
    (("", "v1", "Pod"), {"spec": "x"}, FIELD.format("string", "Pod.spec", "v1.PodSpec")),
    (("", "v1", "Pod"), {"spec": {"hostNetwork": "true"}},
     FIELD.format("string", "PodSpec.spec.hostNetwork", "bool")),
], ids=["string-for-int", "float-for-int", "object-for-list", "number-for-string",
        "map-value", "string-for-map", "string-for-struct", "string-for-bool"])
def test_a_value_of_the_wrong_json_type_is_reported(gvk, obj, expected):
    assert schemas.type_error(*gvk, obj) == expected


@pytest.mark.parametrize("obj", [
    {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 2, "memory": "1Gi"}},
                              "ports": [{"containerPort": 80}]}]}},
    {"spec": None, "metadata": {"name": None}},
    {"spec": {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": "http"}}}]}},
    {"spec": {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": 8080}}}]}},
], ids=["quantities-as-numbers", "nulls", "int-or-string-as-string", "int-or-string-as-int"])
def test_values_of_the_right_type_pass(obj):
    assert schemas.type_error("", "v1", "Pod", obj) is None
