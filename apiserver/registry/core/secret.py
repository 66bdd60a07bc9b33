"""core/v1 Secret: base64 data (checked when decoding, as the JSON decoder does),
`stringData` folded into `data`, per-type required keys, `type` and `immutable`."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from draemu.api.errors import FieldError, Path, invalid, required, too_long
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import (
    MAX_SECRET_SIZE,
    cannot_handle,
    config_key_errors,
    immutable,
)
from draemu.apiserver.registry.core.configmap import immutable_data_errors
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)

_BASE64_CHARS = re.compile(r"[A-Za-z0-9+/=]")
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
# Secret type -> keys its data must hold (any one of them for basic-auth).
_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def decode_base64(text: str) -> bytes:
    """Decode like Go's standard base64 (which skips CR and LF); raise ValueError with
    Go's message on bad input."""
    cleaned = text.replace("\r", "").replace("\n", "")
    for i, ch in enumerate(cleaned):
        if not _BASE64_CHARS.match(ch):
            raise ValueError(f"illegal base64 data at input byte {i}")
    if len(cleaned) % 4:
        raise ValueError(f"illegal base64 data at input byte {len(cleaned) - len(cleaned) % 4}")
    try:
        return base64.b64decode(cleaned, validate=True)
    except binascii.Error:
        pad = cleaned.find("=")
        raise ValueError(f"illegal base64 data at input byte {max(pad, 0)}") from None


class SecretStrategy(Strategy):
    kind = "Secret"
    resource = "secrets"
    singular = "secret"
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False

    def default(self, obj: Obj, version: str) -> None:
        obj.setdefault("type", "Opaque")
        data = obj.get("data") or {}
        for value in data.values():
            try:
                decode_base64(value if isinstance(value, str) else "")
            except ValueError as e:
                raise cannot_handle(self.kind, version, str(e)) from None
        string_data = obj.pop("stringData", None) or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        if data:
            obj["data"] = data

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        data = obj.get("data") or {}
        data_path = Path("data")
        size = 0
        for key, value in data.items():
            errs += [invalid(data_path.key(key), key, msg) for msg in config_key_errors(key)]
            size += len(decode_base64(value or ""))
        if size > MAX_SECRET_SIZE:
            errs.append(too_long(data_path, MAX_SECRET_SIZE))
        kind = obj.get("type") or ""
        if kind == "kubernetes.io/service-account-token":
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
                errs.append(required(Path("metadata").child("annotations")
                                     .key(SERVICE_ACCOUNT_NAME_KEY)))
        elif kind == "kubernetes.io/basic-auth":
            if "username" not in data and "password" not in data:
                errs += [required(data_path.key("username")), required(data_path.key("password"))]
        elif kind in _REQUIRED_KEYS:
            errs += _required_keys(kind, data, data_path)
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        errs = immutable(new.get("type"), old.get("type"), Path("type"))
        return errs + immutable_data_errors(new, old, ("data",)) + self.validate(new, ctx)

    def selectable_fields(self, obj: Obj) -> dict[str, str]:
        return {"type": obj.get("type") or ""}

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Type", description="Used to facilitate programmatic handling of "
                       "secret data."),
                Column("Data", description="Data contains the secret data."),
                AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        return [(obj.get("metadata") or {}).get("name", ""), obj.get("type") or "",
                len(obj.get("data") or {}), AGE]


def _required_keys(kind: str, data: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in _REQUIRED_KEYS[kind]:
        value = data.get(key)
        if value is None or (kind == "kubernetes.io/ssh-auth" and not value):
            errs.append(required(path.key(key)))
            if kind != "kubernetes.io/tls":
                return errs
        elif kind.startswith("kubernetes.io/docker"):
            try:
                json.loads(decode_base64(value))
            except ValueError as e:
                errs.append(invalid(path.key(key), "<secret contents redacted>", str(e)))
    return errs


STRATEGIES = [SecretStrategy()]
