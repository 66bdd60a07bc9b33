"""`fieldValidation`: what to do with fields the kind's schema does not know.

Strict → 400 naming every unknown field; Warn (the server default) → drop them and
send one Warning header each; Ignore → drop them silently. The schemas and the
detection live in `draemu.openapi.schemas`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from draemu.api import yamlload
from draemu.api.errors import StatusError, bad_request, invalid_object
from draemu.api.types import Obj
from draemu.apiserver.endpoints.scope import Scope
from draemu.apiserver.genericregistry.store import Store
from draemu.apiserver.registry.request import RequestContext
from draemu.apiserver.wire import timestamps
from draemu.apiserver.wire.codec import duplicate_fields as decode_duplicates
from draemu.openapi import schemas

DIRECTIVES = ("Ignore", "Warn", "Strict")


def directive(scope: Scope) -> str:
    value = scope.query.get("fieldValidation") or "Warn"
    if value not in DIRECTIVES:
        raise bad_request(f'fieldValidation: Unsupported value: "{value}": supported '
                          'values: "Ignore", "Strict", "Warn"')
    return value


def cached(scope: Scope, store: Store) -> Obj | None:
    """The object a write changes as the watch cache has it, for `check`'s `old`: not
    necessarily the newest revision, but any stored revision was checked."""
    return store.cache.get(scope.resource.key(scope.namespace, scope.name))


def duplicates(scope: Scope, raw: bytes, mode: str) -> list[str]:
    """The fields the request body has twice, for `check` (unless `mode` ignores them)."""
    if mode == "Ignore":
        return []
    return decode_duplicates(raw, scope.request.headers.get("Content-Type"))


def apply_duplicates(raw: bytes, mode: str) -> list[str]:
    """An apply patch's keys given twice, as Go's strict YAML decoding words them
    (`line 7: key "a" already set in map`); upstream looks for them after the apply."""
    return [] if mode == "Ignore" else yamlload.duplicate_key_errors(raw)


def check_applied(scope: RequestContext, duplicate: list[str], mode: str) -> None:
    """`mode` applied to an apply patch's `apply_duplicates`, once the apply worked."""
    if not duplicate:
        return
    if mode == "Strict":
        raise bad_request("error strict decoding patch: error converting YAML to JSON: "
                          "yaml: unmarshal errors:\n  " + "\n  ".join(duplicate))
    for message in duplicate:
        if message not in scope.warnings:
            scope.warnings.append(message)


def check(scope: RequestContext, obj: Obj, mode: str, old: Obj | None = None,
          duplicate: list[str] | None = None, *, keep_unknown: bool = False) -> Obj:
    """Check JSON types, drop null struct fields, rewrite timestamps, then apply `mode`
    to the unknown fields of `obj` (in the request's version) and to the `duplicate`
    fields of the body it came from; returns the object to use. `old` is a stored
    revision of the object `obj` changes, or None: when it is in the request's version,
    what `obj` has strictly equal to it was checked already. `keep_unknown` (an apply
    patch): unknown fields stay, for the typed apply to refuse in every mode."""
    group, version, kind = scope.resource.group, scope.version, scope.resource.kind
    twice = [f'duplicate field "{path}"' for path in duplicate or ()]
    # Fields a newer release removed: tell which field replaced them before they are
    # refused or dropped as unknown.
    obsolete = scope.strategy.obsolete_field_errors(obj, version)
    if obsolete:
        name = (obj.get("metadata") or {}).get("name") or scope.name
        raise invalid_object(kind, group, name, obsolete)
    if keep_unknown and scope.strategy.prune_unknown(copy.deepcopy(obj), version) is not None:
        return obj  # a custom resource's metadata was type-checked on a copy
    custom = scope.strategy.prune_unknown(obj, version)
    if custom is not None:
        obj, unknown = custom
        return _unknown(kind, version, obj, unknown, twice, mode, scope, None)
    if not schemas.has_kind(group, version, kind):
        return _unknown(kind, version, obj, [], twice, mode, scope, None)
    if not scope.stored_as_served:
        old = None
    found = schemas.check_request(group, version, kind, obj, old, timestamps.format_value)
    if found.type_error:
        raise StatusError(400, "BadRequest", f'{kind} in version "{version}" cannot be handled '
                          f"as a {kind}: {found.type_error}")
    if found.bad_time:
        # Upstream names the first bad time in schema order: the timestamp walk raises it.
        timestamps.normalize(group, version, kind, obj)
    if keep_unknown:
        return obj
    return _unknown(kind, version, obj, found.unknown, twice, mode, scope,
                    lambda: schemas.prune(group, version, kind, obj))


def _unknown(kind: str, version: str, obj: Obj, unknown: list[str], twice: list[str],
             mode: str, scope: RequestContext, prune: Callable[[], Obj] | None) -> Obj:
    """`mode` applied to the unknown fields found and the body's duplicate fields
    (`twice`, messages); `prune` drops the unknown (None: `obj` has none left)."""
    if not unknown and not twice:
        return obj
    messages = [schemas.strict_message(path) for path in unknown] + twice
    if mode == "Strict":
        raise StatusError(400, "BadRequest",
                          f'{kind} in version "{version}" cannot be handled as a {kind}: '
                          f'strict decoding error: {", ".join(messages)}')
    if mode == "Warn":
        scope.warnings.extend(messages)
    return prune() if prune is not None and unknown else obj
