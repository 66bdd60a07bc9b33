"""core/v1 ConfigMap: key names, the 1 MiB size limit and `immutable`."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from draemu.api.errors import FieldError, Path, forbidden, invalid, too_long
from draemu.api.types import Obj
from draemu.apiserver.registry.core.common import (
    IMMUTABLE_WHEN_SET,
    MAX_SECRET_SIZE,
    config_key_errors,
)
from draemu.apiserver.registry.strategy import (
    AGE,
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Context,
    Strategy,
)


def _binary_size(value: Any) -> int:
    try:
        return len(base64.b64decode(value or "", validate=False))
    except (binascii.Error, ValueError, TypeError):
        return len(str(value))


def immutable_data_errors(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[FieldError]:
    """Once `immutable: true`, neither the flag nor the data may change."""
    if not old.get("immutable"):
        return []
    errs: list[FieldError] = []
    if not new.get("immutable"):
        errs.append(forbidden(Path("immutable"), IMMUTABLE_WHEN_SET))
    for name in fields:
        if (new.get(name) or {}) != (old.get(name) or {}):
            errs.append(forbidden(Path(name), IMMUTABLE_WHEN_SET))
    return errs


class ConfigMapStrategy(Strategy):
    kind = "ConfigMap"
    resource = "configmaps"
    singular = "configmap"
    short_names = ("cm",)
    versions = ("v1",)
    storage_version = "v1"
    has_generation = False

    def validate(self, obj: Obj, ctx: Context) -> list[FieldError]:
        errs: list[FieldError] = []
        data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
        size = 0
        for key, value in data.items():
            p = Path("data").key(key)
            errs += [invalid(p, key, msg) for msg in config_key_errors(key)]
            if key in binary:
                errs.append(invalid(p, key, "duplicate of key present in binaryData"))
            size += len(str(value).encode())
        for key, value in binary.items():
            p = Path("binaryData").key(key)
            errs += [invalid(p, key, msg) for msg in config_key_errors(key)]
            size += _binary_size(value)
        if size > MAX_SECRET_SIZE:
            errs.append(too_long(Path(""), MAX_SECRET_SIZE))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: Context) -> list[FieldError]:
        return immutable_data_errors(new, old, ("data", "binaryData")) + self.validate(new, ctx)

    def table_columns(self) -> list[Column]:
        return [NAME_COLUMN,
                Column("Data", description="Data contains the configuration "
                       "data."),
                AGE_COLUMN]

    def table_row(self, obj: Obj) -> list[Any]:
        count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
        return [(obj.get("metadata") or {}).get("name", ""), count, AGE]


STRATEGIES = [ConfigMapStrategy()]
