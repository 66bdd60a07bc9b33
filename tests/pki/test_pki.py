"""The apiserver's certificates."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from draemu import pki

pytestmark = pytest.mark.unit


def _sans(pem: bytes) -> set[str]:
    cert = x509.load_pem_x509_certificate(pem)
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return {str(v.value) for v in ext.value}


def test_serving_certificate_names_loopback_and_the_bind_address(tmp_path: Path) -> None:
    made = pki.ensure_pki(tmp_path, "10.1.2.3")
    assert {"localhost", "127.0.0.1", "::1", "10.1.2.3"} <= _sans(made.serving.cert_pem)


def test_a_new_bind_address_remakes_only_the_serving_certificate(tmp_path: Path) -> None:
    first = pki.ensure_pki(tmp_path, "127.0.0.1")
    second = pki.ensure_pki(tmp_path, "10.9.9.9")
    assert second.ca == first.ca and second.admin == first.admin
    assert "10.9.9.9" in _sans(second.serving.cert_pem)


def test_client_certificate_carries_user_and_groups(tmp_path: Path) -> None:
    made = pki.ensure_pki(tmp_path, "127.0.0.1")
    pair = pki.make_client_cert(made.ca, "system:node:n1", ["system:nodes"])
    subject = x509.load_pem_x509_certificate(pair.cert_pem).subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:n1"
    assert [a.value for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:nodes"]


def test_private_keys_are_not_readable_by_others(tmp_path: Path) -> None:
    pki.ensure_pki(tmp_path, "127.0.0.1")
    assert (tmp_path / "ca.key").stat().st_mode & 0o077 == 0
    assert (tmp_path / "admin.key").stat().st_mode & 0o077 == 0
