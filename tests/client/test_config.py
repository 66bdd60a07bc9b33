import base64

import pytest
import yaml

from draemu.client import ConfigError, config

pytestmark = pytest.mark.unit


def _kubeconfig(server="https://127.0.0.1:6443", **user):
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server,
                                               "certificate-authority-data":
                                               base64.b64encode(b"CA").decode()}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }


def test_current_context_gives_server_ca_and_token(tmp_path):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(_kubeconfig(token="abc")))
    conn = config.load(path)
    assert conn.server == "https://127.0.0.1:6443"
    assert conn.ca_data == b"CA"
    assert conn.token == "abc"


def test_relative_certificate_paths_are_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "u.crt").write_bytes(b"CERT")
    (tmp_path / "u.key").write_bytes(b"KEY")
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(_kubeconfig(**{"client-certificate": "u.crt",
                                                  "client-key": "u.key"})))
    conn = config.load(path)
    assert (conn.cert_data, conn.key_data) == (b"CERT", b"KEY")


def test_kubeconfig_env_merges_files_first_definition_wins(tmp_path, monkeypatch):
    first = tmp_path / "a"
    second = tmp_path / "b"
    first.write_text(yaml.safe_dump(_kubeconfig(server="https://first:1", token="t")))
    second.write_text(yaml.safe_dump(_kubeconfig(server="https://second:2", token="t")))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert config.load().server == "https://first:1"


def test_missing_context_is_a_clear_error(tmp_path):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(_kubeconfig(token="t")))
    with pytest.raises(ConfigError, match='context "nope" does not exist'):
        config.load(path, context="nope")


def test_invalid_yaml_is_a_clear_error(tmp_path):
    path = tmp_path / "config"
    path.write_text("clusters: [")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.load(path)
