"""The service-account signing key and JSON Web Tokens (JWS compact form, ES256).

The key is ECDSA P-256 (kube-apiserver accepts ECDSA keys for
`--service-account-signing-key-file`), created once in `<data-dir>/pki/sa.key` with its
public half in `sa.pub`, so tokens stay valid across restarts. The `kid` header is
upstream's key id: the unpadded base64url SHA-256 of the public key's DER form.

Shared by the apiserver (TokenRequest, verification) and the controller that fills
legacy token Secrets, as kube-apiserver and kube-controller-manager share the key file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from draemu.api.types import Obj

# kubeadm's issuer; the apiserver's audiences default to it.
ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"


class TokenError(ValueError):
    """A token that does not verify: why, in words a TokenReview's status.error shows."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self.key = key
        der = key.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
        self.key_id = _b64(hashlib.sha256(der).digest())

    @classmethod
    def load(cls, path: Path) -> Signer:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{path}: not an ECDSA private key")
        return cls(key)

    @classmethod
    def ensure(cls, directory: Path) -> Signer:
        """The key in `directory` (sa.key), created on first use."""
        path = directory / "sa.key"
        if path.exists():
            return cls.load(path)
        directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        (directory / "sa.pub").write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        return cls(key)

    def sign(self, claims: Obj) -> str:
        header = _b64(json.dumps({"alg": "ES256", "kid": self.key_id},
                                 separators=(",", ":")).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        der = self.key.sign(f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return f"{header}.{payload}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def verify(self, token: str) -> Obj:
        """The claims of a token this key signed; TokenError otherwise."""
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenError("not a JWT")
        try:
            header: Any = json.loads(_unb64(parts[0]))
            raw = _unb64(parts[2])
        except ValueError:
            raise TokenError("malformed token") from None
        if not isinstance(header, dict) or header.get("alg") != "ES256" or len(raw) != 64:
            raise TokenError("unexpected signing algorithm")
        signature = encode_dss_signature(int.from_bytes(raw[:32], "big"),
                                         int.from_bytes(raw[32:], "big"))
        try:
            self.key.public_key().verify(signature, f"{parts[0]}.{parts[1]}".encode(),
                                         ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise TokenError("crypto/ecdsa: verification error") from None
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            raise TokenError("malformed token claims") from None
        if not isinstance(claims, dict):
            raise TokenError("malformed token claims")
        return claims


def legacy_claims(namespace: str, account: str, account_uid: str, secret: str) -> Obj:
    """The claims of a legacy token Secret's token (upstream's LegacyClaims)."""
    prefix = "kubernetes.io/serviceaccount/"
    return {"iss": LEGACY_ISSUER, prefix + "namespace": namespace,
            prefix + "secret.name": secret, prefix + "service-account.name": account,
            prefix + "service-account.uid": account_uid,
            "sub": f"system:serviceaccount:{namespace}:{account}"}


def looks_like_jwt(token: str) -> bool:
    """Whether a bearer token is a JWT whose issuer is one of ours (upstream's JWT
    authenticator looks at `iss` before anything else)."""
    parts = token.split(".")
    if len(parts) != 3:
        return False
    try:
        claims = json.loads(_unb64(parts[1]))
    except ValueError:
        return False
    return isinstance(claims, dict) and claims.get("iss") in (ISSUER, LEGACY_ISSUER)
