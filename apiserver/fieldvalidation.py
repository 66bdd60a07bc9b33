"""`fieldValidation`: what to do with fields the kind's schema does not know.

Strict → 400 naming every unknown field; Warn (the server default) → drop them and
send one Warning header each; Ignore → drop them silently. The schemas and the
detection live in `draemu.openapi.schemas`.
"""

from __future__ import annotations

from typing import Any

from draemu.api.errors import StatusError, bad_request, invalid_object
from draemu.apiserver import timestamps
from draemu.apiserver.scope import Scope

Obj = dict[str, Any]

DIRECTIVES = ("Ignore", "Warn", "Strict")


def directive(scope: Scope) -> str:
    value = scope.query.get("fieldValidation") or "Warn"
    if value not in DIRECTIVES:
        raise bad_request(f'fieldValidation: Unsupported value: "{value}": supported '
                          'values: "Ignore", "Strict", "Warn"')
    return value


def check(scope: Scope, obj: Obj, mode: str) -> Obj:
    """Check JSON types, then apply `mode` to `obj` (in the request's version); returns
    the object to use."""
    from draemu.openapi import schemas

    group, version, kind = scope.resource.group, scope.version, scope.resource.kind
    # Fields a newer release removed: tell which field replaced them before they are
    # refused or dropped as unknown.
    obsolete = scope.strategy.obsolete_field_errors(obj, version)
    if obsolete:
        name = (obj.get("metadata") or {}).get("name") or scope.name
        raise invalid_object(kind, group, name, obsolete)
    if not schemas.has_kind(group, version, kind):
        return obj
    type_error = schemas.type_error(group, version, kind, obj)
    if type_error:
        raise StatusError(400, "BadRequest", f'{kind} in version "{version}" cannot be handled '
                          f"as a {kind}: {type_error}")
    schemas.drop_nulls(group, version, kind, obj)
    timestamps.normalize(group, version, kind, obj)
    unknown = schemas.unknown_fields(group, version, kind, obj)
    if not unknown:
        return obj
    messages = [schemas.strict_message(path) for path in unknown]
    if mode == "Strict":
        raise StatusError(400, "BadRequest",
                          f'{kind} in version "{version}" cannot be handled as a {kind}: '
                          f'strict decoding error: {", ".join(messages)}')
    if mode == "Warn":
        scope.warnings.extend(messages)
    return schemas.prune(group, version, kind, obj)
