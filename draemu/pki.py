"""The apiserver's certificates: a CA, a serving certificate and client certificates.

Everything is made with `cryptography` (ECDSA P-256: small and fast to generate, and
accepted by Go's TLS stack) and kept as PEM files in the data directory, so a restart
on the same directory keeps the CA that existing kubeconfigs trust.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import ipaddress
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=3650)
_CLIENT_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str, organizations: list[str] | tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _now() -> datetime.datetime:
    # Back-date a little so that clients with a slightly late clock accept new certs.
    return datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)


def make_ca(common_name: str = "draemu-ca") -> KeyPair:
    key = _new_key()
    name = _name(common_name)
    now = _now()
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _sign(ca: KeyPair, subject: x509.Name, usage: x509.ObjectIdentifier,
          sans: list[x509.GeneralName], validity: datetime.timedelta) -> KeyPair:
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    key = _new_key()
    now = _now()
    builder = (x509.CertificateBuilder()
               .subject_name(subject).issuer_name(ca_cert.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(now + validity)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True,
                                            key_cert_sign=False, crl_sign=False,
                                            content_commitment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def serving_sans(address: str, extra_names: list[str] | tuple[str, ...] = ()
                 ) -> list[x509.GeneralName]:
    """localhost, 127.0.0.1, ::1, the bind address (an IP or a host name) and
    `extra_names`."""
    names: list[x509.GeneralName] = [x509.DNSName("localhost"),
                                     x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                     x509.IPAddress(ipaddress.ip_address("::1"))]
    extra: list[str] = [address] if address and address not in ("0.0.0.0", "::") else []
    if address in ("0.0.0.0", "::"):
        # Serving on every interface: clients may come by host name or address.
        extra += _host_names()
    extra += extra_names
    for general in host_names(extra):
        if general not in names:
            names.append(general)
    return names


def host_names(hosts: list[str]) -> list[x509.GeneralName]:
    """Subject alternative names for host names and IP addresses."""
    names: list[x509.GeneralName] = []
    for item in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(item)))
        except ValueError:
            names.append(x509.DNSName(item))
    return names


def _host_names() -> list[str]:
    names = [socket.gethostname()]
    try:
        names += sorted({info[4][0] for info in socket.getaddrinfo(names[0], None)})
    except OSError:
        pass  # a host name that does not resolve: the name alone
    return names


def make_serving_cert(ca: KeyPair, address: str, extra_names: list[str] | tuple[str, ...] = ()
                      ) -> KeyPair:
    return _sign(ca, _name("draemu-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH,
                 serving_sans(address, extra_names), _VALIDITY)


def make_kubelet_serving_cert(ca: KeyPair, node: str, hosts: list[str]) -> KeyPair:
    """A kubelet's serving certificate as the kubernetes.io/kubelet-serving signer issues
    it: CN `system:node:NAME`, O `system:nodes`, the node's addresses as SANs."""
    return _sign(ca, _name(f"system:node:{node}", ["system:nodes"]),
                 ExtendedKeyUsageOID.SERVER_AUTH, host_names(hosts), _CLIENT_VALIDITY)


def make_client_cert(ca: KeyPair, user: str, groups: list[str] | tuple[str, ...]) -> KeyPair:
    """A client certificate as kube-apiserver reads it: CN = user, O = groups."""
    return _sign(ca, _name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH, [], _CLIENT_VALIDITY)


def _sans_of(cert_pem: bytes) -> set[str]:
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return set()
    return {str(v.value) for v in ext.value}


def _write(path: Path, data: bytes, private: bool) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _load(directory: Path, stem: str) -> KeyPair | None:
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    if cert.exists() and key.exists():
        return KeyPair(cert.read_bytes(), key.read_bytes())
    return None


def _save(directory: Path, stem: str, pair: KeyPair) -> None:
    _write(directory / f"{stem}.crt", pair.cert_pem, private=False)
    _write(directory / f"{stem}.key", pair.key_pem, private=True)


@dataclass(frozen=True)
class PKI:
    directory: Path
    ca: KeyPair
    serving: KeyPair
    admin: KeyPair
    # The identity the apiserver shows kubelets (pods/log), named as kubeadm names it.
    kubelet_client: KeyPair

    @property
    def serving_cert_path(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key_path(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def kubelet_client_cert_path(self) -> Path:
        return self.directory / "apiserver-kubelet-client.crt"

    @property
    def kubelet_client_key_path(self) -> Path:
        return self.directory / "apiserver-kubelet-client.key"


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on `directory` (a `.lock` file in it): several apiservers
    sharing one PKI folder (`--pki-dir`) that start at once make its CA, keys and
    certificates once, and each then loads the same ones."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_pki(directory: Path, address: str, extra_names: list[str] | tuple[str, ...] = ()
               ) -> PKI:
    """Load the certificates kept in `directory`, making what is missing. The serving
    certificate is remade when the bind address or one of `extra_names` (the kubernetes
    Service's names and address, an advertised address) is not among its SANs."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _load(directory, "ca")
    if ca is None:
        ca = make_ca()
        _save(directory, "ca", ca)
        for stale in ("apiserver", "admin", "apiserver-kubelet-client"):
            for suffix in (".crt", ".key"):
                (directory / f"{stale}{suffix}").unlink(missing_ok=True)
    serving = _load(directory, "apiserver")
    wanted = {str(n.value) for n in serving_sans(address, extra_names)}
    if serving is None or not wanted <= _sans_of(serving.cert_pem):
        serving = make_serving_cert(ca, address, extra_names)
        _save(directory, "apiserver", serving)
    admin = _load(directory, "admin")
    if admin is None:
        admin = make_client_cert(ca, "kubernetes-admin", ["system:masters"])
        _save(directory, "admin", admin)
    kubelet_client = _load(directory, "apiserver-kubelet-client")
    if kubelet_client is None:
        kubelet_client = make_client_cert(ca, "kube-apiserver-kubelet-client",
                                          ["system:masters"])
        _save(directory, "apiserver-kubelet-client", kubelet_client)
    return PKI(directory, ca, serving, admin, kubelet_client)


def ensure_front_proxy(directory: Path) -> tuple[KeyPair, KeyPair]:
    """The front-proxy CA and the one client certificate it signs (`front-proxy-client`,
    kubeadm's names): what kube-apiserver publishes as `requestheader-client-ca-file` in
    the extension-apiserver-authentication ConfigMap. Only a holder of that client
    certificate may assert a user in X-Remote-* headers to a component's secure port."""
    ca = _load(directory, "front-proxy-ca")
    client = _load(directory, "front-proxy-client")
    if ca is None:
        ca = make_ca("front-proxy-ca")
        _save(directory, "front-proxy-ca", ca)
        client = None
    if client is None:
        client = make_client_cert(ca, "front-proxy-client", [])
        _save(directory, "front-proxy-client", client)
    return ca, client
