"""Which resource.k8s.io versions are served: what the emulated release serves (1.34 to
1.38; 1.38 drops v1beta1), plus the 1.31-shape v1alpha3 of the four original kinds only
when asked (legacy versions, on in the seed preset)."""

from __future__ import annotations

import pytest

from draemu.apiserver.registry import discover
from draemu.apiserver.registry.resources import ResourceTable
from draemu.drivers.presets import load_preset
from draemu.features import FeatureGates

pytestmark = pytest.mark.unit
GROUP = "resource.k8s.io"


def served(release: str = "1.37", legacy: bool = False,
           gates: dict[str, bool] | None = None) -> dict[str, set[str]]:
    table = ResourceTable(discover(), FeatureGates(gates, emulated_version=release), legacy)
    return {version: {r.name for r in table.in_group_version(GROUP, version)}
            for version in table.groups().get(GROUP, [])}


ORIGINAL = {"deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"}


def test_1_37_serves_v1alpha3_only_for_taint_rules_and_pool_status() -> None:
    versions = served()
    assert list(versions) == ["v1", "v1beta2", "v1beta1", "v1alpha3"]
    assert versions["v1"] == versions["v1beta2"] == ORIGINAL | {"devicetaintrules"}
    assert versions["v1beta1"] == ORIGINAL
    assert versions["v1alpha3"] == {"devicetaintrules"}
    assert served(gates={"DRAResourcePoolStatus": True})["v1alpha3"] == {
        "devicetaintrules", "resourcepoolstatusrequests"}


def test_the_131_shape_v1alpha3_is_served_only_when_asked() -> None:
    assert served(legacy=True)["v1alpha3"] == ORIGINAL | {"devicetaintrules"}


def test_1_38_no_longer_serves_v1beta1() -> None:
    assert "v1beta1" not in served("1.38")
    assert served("1.38")["v1"] == ORIGINAL | {"devicetaintrules"}


def test_1_38_serves_v1beta1_one_more_release_when_told(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE", "true")
    assert served("1.38")["v1beta1"] == ORIGINAL
    monkeypatch.setenv("KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE", "yes")
    with pytest.raises(ValueError, match='parsing "yes": invalid syntax'):
        served("1.38")
    monkeypatch.setenv("KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE", "false")
    assert "v1beta1" not in served("1.38")


def test_1_36_serves_taint_rules_in_beta_and_alpha_only() -> None:
    versions = served("1.36")
    assert "devicetaintrules" not in versions["v1"]
    assert "devicetaintrules" in versions["v1beta2"]
    assert "devicetaintrules" in versions["v1alpha3"]


def test_1_34_serves_taint_rules_in_alpha_only() -> None:
    versions = served("1.34")
    assert versions["v1"] == versions["v1beta2"] == versions["v1beta1"] == ORIGINAL
    assert versions["v1alpha3"] == {"devicetaintrules"}


def test_the_seed_preset_asks_for_the_legacy_version() -> None:
    assert load_preset("seed").legacy_v1alpha3 is True
    assert load_preset("example").legacy_v1alpha3 is False


def test_version_reports_the_emulated_release() -> None:
    from draemu.apiserver.server.app import version_info

    info = version_info("1.35")
    assert (info["major"], info["minor"]) == ("1", "37")
    assert (info["emulationMajor"], info["emulationMinor"]) == ("1", "35")
    assert info["minCompatibilityMinor"] == "34"
    assert version_info()["emulationMinor"] == "37"
