"""Every YAML decoder of every draemu process reads under the API's limits (issue 35): a
few hundred bytes of nested aliases that expand to 10^8 nodes are refused at once, with
each reader's own error, by the presets, kind configs, scheduler configs, kubeconfigs,
CDI specs and `draemu allocate`'s inputs (the web view's what-if: tests/cmd/test_ui_server.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


def bomb(head: str = "", levels: int = 8) -> str:
    lines = [head, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] if head else [
        "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def refused_quickly(call, error: type[BaseException], message: str = "excessive aliasing"):
    started = time.monotonic()
    with pytest.raises(error) as raised:
        call()
    assert time.monotonic() - started < 2
    assert message in str(raised.value)


def test_a_preset(tmp_path: Path):
    from draemu.drivers.presets import PresetError, load_preset

    path = tmp_path / "bomb.yaml"
    path.write_text(bomb("kind: Preset"))
    refused_quickly(lambda: load_preset(str(path)), PresetError)


def test_a_kind_config():
    from draemu.kindcompat import config as kconfig

    text = bomb("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4")
    refused_quickly(lambda: kconfig.parse(text), kconfig.ConfigError)


def test_a_scheduler_config():
    from draemu.scheduler.config import ConfigError, load

    text = bomb("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration")
    refused_quickly(lambda: load(text), ConfigError)


def test_a_kubeconfig(tmp_path: Path):
    from draemu.client.config import ConfigError, load

    path = tmp_path / "config"
    path.write_text(bomb("apiVersion: v1\nkind: Config"))
    refused_quickly(lambda: load(path), ConfigError)


def test_a_cdi_spec_written_by_a_driver(tmp_path: Path):
    """A driver's pod writes into the node's /var/run/cdi: a bomb there must not stall
    the kubelet; the spec is skipped with its error, as an invalid one is."""
    from draemu.kubelet.cdi import CDIRegistry

    (tmp_path / "bomb.yaml").write_text(bomb('cdiVersion: "0.6.0"\nkind: example.com/gpu'))
    started = time.monotonic()
    devices, errors = CDIRegistry([tmp_path]).devices()
    assert time.monotonic() - started < 2
    assert devices == {} and "excessive aliasing" in errors[0]


def test_draemu_allocate_inputs():
    from draemu.cmd.explain.offline import InputError, parse_documents

    text = bomb("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim")
    refused_quickly(lambda: parse_documents(text, "bomb.yaml"), InputError)


def test_a_large_file_without_aliases_is_read():
    """Files are not held to the request body's node count: a dump of a big cluster's
    slices is more than 50,000 nodes."""
    from draemu.api import yamlload

    text = "items:\n" + "".join(f"- {{name: d{i}, a: 1, b: 2}}\n" for i in range(13_000))
    assert len(yamlload.load_file_text(text)["items"]) == 13_000
