"""JSON merge patch (RFC 7386, `application/merge-patch+json`): objects merge, `null`
deletes, everything else (lists included) replaces."""

from __future__ import annotations

from typing import Any

from draemu.api.errors import bad_request
from draemu.apiserver.wire.jsoncopy import clone


def apply_merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    """`obj` patched by `patch`; `obj` itself is not changed."""
    if not isinstance(patch, dict):
        # Upstream's merge patch library rejects a non-object document outright.
        raise bad_request("Invalid JSON Patch")
    out = clone(obj)
    _merge_into(out, patch)
    return out


def _merge_into(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            if not isinstance(target.get(key), dict):
                target[key] = {}
            _merge_into(target[key], value)
        else:
            target[key] = clone(value)
