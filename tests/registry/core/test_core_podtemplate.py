"""core/v1 PodTemplate: defaults, validation under `template`, generation and printing as
kube-apiserver's podtemplate strategy and printer give them."""

from __future__ import annotations

import copy

import pytest
from core_helpers import created, ctx, rendered

from draemu.apiserver.registry.core.podtemplate import PodTemplateStrategy

pytestmark = pytest.mark.unit

PT = PodTemplateStrategy()


def podtemplate() -> dict:
    return {"metadata": {"name": "template-0001", "namespace": "default"},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "test", "image": "test2"}]}}}


def test_template_gets_pod_template_defaults() -> None:
    spec = created(PT, podtemplate())["template"]["spec"]
    assert spec["restartPolicy"] == "Always" and spec["dnsPolicy"] == "ClusterFirst"
    assert spec["containers"][0]["terminationMessagePolicy"] == "File"


def test_valid_template_is_accepted() -> None:
    assert rendered(PT.validate(created(PT, podtemplate()), ctx())) == []


def test_errors_are_reported_under_template() -> None:
    obj = podtemplate()
    obj["template"]["spec"]["containers"][0]["name"] = "Web"
    obj["template"]["metadata"]["labels"] = {"-bad": "x"}
    errs = rendered(PT.validate(created(PT, obj), ctx()))
    assert errs[0].startswith('template.labels: Invalid value: "-bad"')
    assert any(e.startswith('template.spec.containers[0].name: Invalid value: "Web"')
               for e in errs)


def test_a_template_without_containers_is_refused() -> None:
    obj = podtemplate()
    del obj["template"]["spec"]["containers"]
    assert "template.spec.containers: Required value" in rendered(
        PT.validate(created(PT, obj), ctx()))


def test_table_row_is_the_printers() -> None:
    assert [c.name for c in PT.table_columns()] == ["Name", "Containers", "Images",
                                                   "Pod Labels"]
    assert PT.table_row(created(PT, podtemplate())) == ["template-0001", "test", "test2",
                                                         "app=web"]


def test_update_validates_the_new_template() -> None:
    old = created(PT, podtemplate())
    new = copy.deepcopy(old)
    new["template"]["spec"]["containers"][0]["image"] = ""
    assert "template.spec.containers[0].image: Required value" in rendered(
        PT.validate_update(new, old, ctx()))
